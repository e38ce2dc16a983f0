"""``POST /v1/chat/completions``: the request path, admission, and the upstream call (plain or streamed).

Per request: read and parse the body → the shared request path in a worker thread (sanitize,
guard, trim, max_tokens, exact count, route: :mod:`docsan.runner.request`) → deferred (202 and a
job) or admitted into its tier's ledger (waiting in the bounded queue, or 503 "memory limit") →
forwarded. The reservation is released when the response ends, fails, times out or the client
goes away, in every path: ``async with`` for plain responses (raced against the client's
disconnect), the response's own ``finally`` for streams.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from docsan.errors import InputError
from docsan.report import CODES
from docsan.runner.errors import GuardError, RunnerError
from docsan.runner.request import Prepared, RequestOptions
from docsan.runner.router import history_budget
from docsan.serve import session_flow
from docsan.serve.chat_body import ChatBody, parse_chat_body, read_body
from docsan.serve.errors import ApiError, error_body
from docsan.serve.gateway import Gateway, Snapshot
from docsan.serve.ledger import AdmissionError, Klass, Reservation
from docsan.serve.upstream import Upstream

log = logging.getLogger("docsan.serve")
PRIORITY_HEADER = "x-docsan-priority"
# Bodies up to this size are prepared on the event loop: a short chat takes a few milliseconds, less than the
# hop to a worker thread costs under load. Larger ones go to a thread, so the loop keeps serving the others.
INLINE_BODY_BYTES = 16 * 1024
# A session's delta is small but expands into its stored history: that many messages go to a thread too.
INLINE_MESSAGES = 64
AUDIT_HEADER = "x-docsan-audit"
# docsan_requests_total's outcome for an admission refusal, by its error code (else upstream_down).
OUTCOMES = {"memory_limit": "memory_limit", "ledger_unavailable": "ledger_unavailable"}


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


async def chat_completions(gw: Gateway, request: Request) -> Response:
    t0 = time.perf_counter()
    snap = gw.snapshot  # this request's settings, whatever a reload does meanwhile
    serve = snap.config.serve
    raw = await read_body(request, serve.max_body_bytes)
    body = parse_chat_body(raw, serve.max_messages)
    _check_model(gw, snap, body.model)
    priority = request.headers.get(PRIORITY_HEADER, "").strip().lower() == "high"
    turn = await session_flow.begin(gw, request, body.messages, serve.max_messages)
    limits = gw.model_limits(snap)
    options = RequestOptions(
        max_tokens=body.max_tokens, priority=priority, tools=body.tools, model_limits=limits,
        budget_tokens=_session_budget(snap, body, priority, limits) if turn is not None else None,
    )  # fmt: skip
    messages = turn.messages if turn is not None else body.messages
    if len(raw) <= INLINE_BODY_BYTES and len(messages) <= INLINE_MESSAGES:
        prepared = _prepare(snap, messages, options)
    else:
        prepared = await anyio.to_thread.run_sync(_prepare, snap, messages, options)
    d = prepared.decision
    up = gw.upstream_for(snap, d.tier)
    upstream_body = _upstream_body(body, prepared, up)
    info = _docsan_info(prepared, request.headers.get(AUDIT_HEADER, "") in ("1", "full", "true"))
    headers = {"x-docsan-tier": d.tier, "x-docsan-tokens-removed": str(prepared.tokens_removed)}
    if turn is not None:
        session_headers, note = await session_flow.commit(gw, turn, prepared)
        headers.update(session_headers)
        info["notes"].append(note)
    gw.metrics.tokens_removed.labels("cleaning").inc(prepared.tokens_removed_by_cleaning)
    gw.metrics.tokens_removed.labels("budget").inc(prepared.tokens_removed_by_budget)
    if d.deferred:
        return await _defer(gw, prepared, upstream_body, info, headers, t0)
    overhead = time.perf_counter() - t0
    tokens = up.pool.tokens_for(d.prompt_tokens, d.max_tokens, body.n)
    w0 = time.perf_counter()
    try:
        reservation = await up.pool.acquire(
            tokens, body.n, d.tier, Klass.PRIORITY if priority else Klass.REALTIME, serve.queue_wait_s
        )
    except AdmissionError as err:
        gw.metrics.requests.labels(d.tier, OUTCOMES.get(err.code, "upstream_down")).inc()
        extra = {} if err.retry_after is None else {"retry-after": str(math.ceil(err.retry_after))}
        raise ApiError(err.status, str(err), code=err.code, headers={**headers, **extra}) from None
    waited = time.perf_counter() - w0
    gw.metrics.wait_seconds.labels(d.tier).observe(waited)
    timing = f"docsan;dur={1000 * overhead:.2f}, queue;dur={1000 * waited:.2f}"
    if body.stream:
        gw.metrics.request_seconds.observe(overhead)
        headers["server-timing"] = timing
        return await _stream(gw, up, d.tier, upstream_body, info, reservation, headers, serve.client_send_timeout_s)
    try:
        async with reservation:
            u0 = time.perf_counter()
            resp = await _until_disconnect(request, _post(gw, up, d.tier, upstream_body))
            upstream_s = time.perf_counter() - u0
        r0 = time.perf_counter()
        data = _completion(resp, up, d.tier)
    except ApiError:
        gw.metrics.requests.labels(d.tier, "upstream_error").inc()
        raise
    except ClientGone:
        gw.metrics.requests.labels(d.tier, "client_gone").inc()
        raise
    data["docsan"] = info
    out = JSONResponse(data, headers={**headers, "server-timing": f"{timing}, upstream;dur={1000 * upstream_s:.2f}"})
    gw.metrics.request_seconds.observe(overhead + time.perf_counter() - r0)
    gw.metrics.requests.labels(d.tier, "ok").inc()
    return out


def _prepare(snap: Snapshot, messages: list[dict[str, Any]], options: RequestOptions) -> Prepared:
    """The shared request path; its refusals become 400s in OpenAI's shape."""
    try:
        return snap.path.chat(messages, options, source="request")
    except GuardError as err:
        raise ApiError(400, str(err), param=err.param, code=err.code) from None
    except InputError as err:
        raise ApiError(400, err.problem, param="messages", code="invalid_value") from None
    except RunnerError as err:  # the chat template refused the messages (role order, missing fields)
        raise ApiError(400, str(err), param="messages", code="invalid_value") from None


def _session_budget(snap: Snapshot, body: ChatBody, priority: bool, limits: dict[str, int]) -> int | None:
    """A session's history is trimmed to what its largest real-time tier holds (and to runner.budget_tokens)."""
    run = snap.config.runner
    budget = history_budget(snap.tiers, body.max_tokens, priority=priority, hard_limit=run.hard_limit,
                            model_limits=limits)  # fmt: skip
    if run.budget_tokens is not None:
        budget = min(budget, run.budget_tokens) if budget is not None else run.budget_tokens
    return budget


def _check_model(gw: Gateway, snap: Snapshot, model: str | None) -> None:
    if model is None:
        return
    names = gw.model_names(snap)
    if not names:
        raise ApiError(
            503, "no upstream has reported its model yet: retry in a few seconds", headers={"retry-after": "5"},
            code="upstream_unavailable",  # the code of the ledger's "not ready yet": one state, one code
        )  # fmt: skip
    if model not in names:
        raise ApiError(
            404, f"the model {model!r} does not exist: this gateway serves {', '.join(names)}", param="model",
            code="model_not_found",
        )  # fmt: skip


def _upstream_body(body: ChatBody, prepared: Prepared, up: Upstream) -> dict[str, Any]:
    out = {**body.passthrough, "model": up.served_model or body.model, "messages": prepared.messages}
    out["max_tokens"] = prepared.decision.max_tokens
    if prepared.tools is not None:
        out["tools"] = prepared.tools
    if body.n != 1:
        out["n"] = body.n
    if body.stream:
        out["stream"] = True
    return out


def _docsan_info(p: Prepared, audit: bool) -> dict[str, Any]:
    """The ``docsan`` object every response carries."""
    d = p.decision
    notes: list[dict[str, Any]] = [{"code": "router", "message": n} for n in p.notes]
    # One note per change code (docs/report.md), with what the code means and how often it applied.
    counts = Counter(c.code for c in p.report.changes)
    notes += [{"code": code, "message": _meaning(code), "count": n} for code, n in counts.items()]
    info: dict[str, Any] = {
        "tier": d.tier,
        "prompt_tokens": d.prompt_tokens,
        "max_tokens": d.max_tokens,
        "tokens_removed": p.tokens_removed,
        "tokens_removed_by": {"cleaning": p.tokens_removed_by_cleaning, "budget": p.tokens_removed_by_budget},
        "notes": notes,
    }
    if audit:
        info["audit"] = p.report.to_dict()
    return info


def _meaning(code: str) -> str:
    entry = CODES.get(code)
    return entry.meaning if entry is not None else code


async def _defer(
    gw: Gateway, p: Prepared, upstream_body: dict[str, Any], info: dict[str, Any], headers: dict[str, str], t0: float
) -> Response:
    d = p.decision
    rest = {k: v for k, v in upstream_body.items() if k not in ("messages", "stream")}
    job_id = await asyncio.to_thread(
        gw.queue.submit,
        tier=d.tier, prompt_tokens=d.prompt_tokens, max_tokens=d.max_tokens, source="gateway",
        question="", messages=p.messages, prompt_ids=p.prompt_ids, request=rest,
    )  # fmt: skip
    gw.drain_wakeup.set()
    gw.metrics.requests.labels(d.tier, "deferred").inc()
    gw.metrics.request_seconds.observe(time.perf_counter() - t0)
    body = {"id": job_id, "object": "docsan.job", "status": "queued", "tier": d.tier, "docsan": info}
    return JSONResponse(body, status_code=202, headers={**headers, "location": f"/v1/jobs/{job_id}"})


async def _post(gw: Gateway, up: Upstream, tier: str, body: dict[str, Any]) -> httpx.Response:
    assert gw.client is not None
    return await _send(gw.client, gw.client.build_request("POST", up.api + "/chat/completions", json=body), up, tier)


# What a pooled connection that the upstream closed as idle, in the instant it was reused, looks like: the
# request did not get an answer on it, so it is sent once more, on a fresh connection.
_STALE_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


async def _send(client: httpx.AsyncClient, request: httpx.Request, up: Upstream, tier: str, *, stream: bool = False) \
        -> httpx.Response:  # fmt: skip
    """The upstream's response (headers only for ``stream``); a transport failure becomes the ApiError naming the
    tier, after one more try when it looks like a stale keep-alive connection."""
    for attempt in (1, 2):
        try:
            return await client.send(request, stream=stream)
        except _STALE_CONNECTION as err:
            if attempt == 2:
                raise _upstream_failure(up, tier, err) from None
            log.info("tier %s: %s on a pooled connection to %s; sending once more", tier, type(err).__name__, up.url)
        except httpx.HTTPError as err:
            raise _upstream_failure(up, tier, err) from None
    raise AssertionError("unreachable")


def _upstream_failure(up: Upstream, tier: str, err: httpx.HTTPError) -> ApiError:
    if isinstance(err, httpx.TimeoutException):
        return ApiError(504, f"tier {tier}: upstream {up.url} did not answer in time ({type(err).__name__})",
                        code="upstream_timeout")  # fmt: skip
    if isinstance(err, httpx.ConnectError):
        up.pool.update(healthy=False, reading=None)  # the poller would notice within a second; waiters learn now
    return ApiError(502, f"tier {tier}: upstream {up.url} failed: {type(err).__name__}: {err}", code="upstream_error")


def _completion(resp: httpx.Response, up: Upstream, tier: str) -> dict[str, Any]:
    """The upstream's JSON answer; its refusals are passed on in OpenAI's shape (5xx as 502 naming the tier)."""
    try:
        data = resp.json()
    except ValueError:
        data = None
    if resp.status_code >= 400:
        raise _upstream_status(resp.status_code, data, resp.text, up, tier)
    if not isinstance(data, dict) or "choices" not in data:
        raise ApiError(502, f"tier {tier}: upstream {up.url} sent no chat completion", code="upstream_error")
    return data


def _upstream_status(status: int, data: Any, text: str, up: Upstream, tier: str) -> ApiError:
    message = None
    if isinstance(data, dict):
        err = data.get("error")
        message = err.get("message") if isinstance(err, dict) else data.get("message")
    message = str(message or text[:300] or f"HTTP {status}")
    if status >= 500:
        return ApiError(502, f"tier {tier}: upstream {up.url} failed: HTTP {status}: {message}", code="upstream_error")
    return ApiError(status, f"tier {tier}: upstream {up.url} refused the request: {message}", code="upstream_refused")


async def _until_disconnect(request: Request, work: Awaitable[httpx.Response]) -> httpx.Response:
    """``work``'s result, unless the client disconnects first: then it is cancelled (its upstream call closed)."""
    task = asyncio.ensure_future(work)

    async def disconnected() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    task.cancel()
    raise ClientGone


class _SlowClient(Exception):
    """The client took no bytes of its stream for ``serve.client_send_timeout_s``."""


class _ReleasingStream(StreamingResponse):
    """A stream whose cleanup (close the upstream, release the reservation) runs however the response ends,
    even when the client is gone before the first byte and the body iterator never starts, or never reads.

    A client that keeps its connection open without reading fills the socket buffers, and then every write
    waits: without a limit its reservation, and the sequence in vLLM's cache, would be held for ever (the
    realistic KV leak). A write that waits longer than ``send_timeout_s`` ends the stream: the upstream
    request is closed (vLLM aborts it and frees its blocks) and the reservation released.
    """

    def __init__(
        self,
        content: AsyncIterator[str],
        cleanup: Callable[[bool], Awaitable[None]],
        send_timeout_s: float,
        **kw: Any,
    ) -> None:
        super().__init__(content, media_type="text/event-stream", **kw)
        self.cleanup = cleanup
        self.send_timeout_s = send_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def bounded(message: Any) -> None:
            # asyncio.timeout, not wait_for: the send runs in this task (no task per chunk), and on 3.11 wait_for
            # drops a disconnect's cancellation that lands as the send completes (cpython gh-86296).
            try:
                async with asyncio.timeout(self.send_timeout_s):
                    await send(message)
            except TimeoutError:
                raise _SlowClient from None

        slow = False
        try:
            await super().__call__(scope, receive, bounded)
        except* _SlowClient:
            slow = True
            log.warning("a stream's client took no bytes for %g s: stream ended, its KV room released",
                        self.send_timeout_s)  # fmt: skip
        finally:
            await self.cleanup(slow)


async def _stream(
    gw: Gateway,
    up: Upstream,
    tier: str,
    body: dict[str, Any],
    info: dict[str, Any],
    reservation: Reservation,
    headers: dict[str, str],
    send_timeout_s: float,
) -> Response:
    assert gw.client is not None
    try:
        request = gw.client.build_request("POST", up.api + "/chat/completions", json=body)
        resp = await _send(gw.client, request, up, tier, stream=True)
    except ApiError:
        reservation.release()
        gw.metrics.requests.labels(tier, "upstream_error").inc()
        raise
    if resp.status_code >= 400:
        text = (await resp.aread()).decode("utf-8", "replace")
        await resp.aclose()
        reservation.release()
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        raise _upstream_status(resp.status_code, data, text, up, tier)
    outcome = {"value": "client_gone"}

    async def events() -> AsyncIterator[str]:
        first = True
        try:
            async for line in resp.aiter_lines():
                if first and line.startswith("data:") and line[5:].strip() != "[DONE]":
                    chunk = json.loads(line[5:])
                    chunk["docsan"] = info
                    line = "data: " + json.dumps(chunk, ensure_ascii=False)
                    first = False
                yield line + "\n"
            outcome["value"] = "ok"
        except (httpx.HTTPError, ValueError) as err:
            # The upstream died mid-answer: say so in the stream (OpenAI's error event), then end it.
            outcome["value"] = "upstream_error"
            message = f"tier {tier}: upstream {up.url} failed mid-stream: {type(err).__name__}: {err}"
            log.warning(message)
            yield "data: " + json.dumps(error_body(502, message, code="upstream_error")) + "\n\n"
            yield "data: [DONE]\n\n"

    async def cleanup(slow: bool) -> None:
        await resp.aclose()
        reservation.release()
        gw.metrics.requests.labels(tier, "client_slow" if slow else outcome["value"]).inc()

    return _ReleasingStream(events(), cleanup, send_timeout_s, headers=headers)
