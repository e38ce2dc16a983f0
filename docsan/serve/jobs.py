"""Deferred requests: the job store's interface, the gateway's own drainer, and ``GET /v1/jobs/{id}``.

A non-priority request routed to a priority-only tier is stored as a job (202) in the durable
SQLite queue ``docsan ask`` and ``docsan queue`` already use. The drainer runs jobs oldest first,
each only when its tier's ledger has room *and* no real-time request is waiting there: a job never
takes KV room a live client is waiting for. Before each pass it takes back the jobs a dead process
left ``running`` (a gateway hard-killed before this one started, a killed ``docsan queue run``):
see :meth:`docsan.runner.queue.DeferredQueue.recover_orphans`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from docsan.runner.queue import Job, recovered_note
from docsan.serve.ledger import AdmissionError

if TYPE_CHECKING:
    from docsan.serve.gateway import Gateway

log = logging.getLogger("docsan.serve")


class JobStore(Protocol):
    """What the gateway needs from a job store (:class:`docsan.runner.queue.DeferredQueue` is the SQLite one)."""

    def submit(
        self, *, tier: str, prompt_tokens: int, max_tokens: int, source: str, question: str,
        messages: list[dict[str, Any]], prompt_ids: list[int], request: dict[str, Any] | None = None,
    ) -> str: ...  # fmt: skip

    def get(self, job_id: str) -> Job | None: ...

    def list(self, status: str | None = None) -> list[Job]: ...

    def claim(self, job_id: str) -> bool: ...

    def complete(
        self, job_id: str, answer: str, completion_tokens: int, response: dict[str, Any] | None = None
    ) -> None: ...

    def fail(self, job_id: str, error: str) -> None: ...

    def recover_orphans(self) -> list[Job]: ...


def job_view(job: Job) -> dict[str, Any]:
    """The JSON ``GET /v1/jobs/{id}`` answers: the state, and the completion once done."""
    status = {"pending": "queued"}.get(job.status, job.status)
    out: dict[str, Any] = {
        "id": job.id,
        "object": "docsan.job",
        "status": status,
        "tier": job.tier,
        "created": job.created,
        "finished": job.finished,
        "prompt_tokens": job.prompt_tokens,
        "max_tokens": job.max_tokens,
    }
    if job.status == "done":
        out["response"] = job.response or {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": job.answer}, "finish_reason": None}],
        }
    if job.error:
        out["error"] = {"message": job.error, "type": "upstream_error", "param": None, "code": "job_failed"}
    return out


async def drain(gw: Gateway) -> None:
    """Run pending jobs when their tiers have room; wakes on new jobs, releases and reloads, else every interval."""
    running: set[asyncio.Task[None]] = set()
    try:
        await _drain_forever(gw, running)
    finally:
        for task in running:  # the gateway is stopping: a job cut short is failed, not left "running"
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def _drain_forever(gw: Gateway, running: set[asyncio.Task[None]]) -> None:
    while True:
        gw.drain_wakeup.clear()
        try:
            for job in await asyncio.to_thread(gw.queue.recover_orphans):
                log.warning("deferred %s", recovered_note(job))
            pending = await asyncio.to_thread(gw.queue.list, "pending")
        except Exception:
            log.exception("deferred queue %s unreadable", gw.queue.path)
            pending = []
        snap = gw.snapshot
        for job in pending:
            if job.tier not in snap.tier_urls:
                await asyncio.to_thread(gw.queue.fail, job.id, f"tier {job.tier} is no longer configured")
                continue
            up = gw.upstream_for(snap, job.tier)
            try:
                reservation = await up.pool.try_acquire(
                    up.pool.tokens_for(job.prompt_tokens, job.max_tokens), 1, job.tier
                )
            except AdmissionError:  # the shared ledger does not answer: the jobs wait for it
                break
            if reservation is None:
                continue
            if not await asyncio.to_thread(gw.queue.claim, job.id):
                reservation.release()  # another drainer (a `docsan queue run`) took it
                continue
            task = asyncio.create_task(_run(gw, job, up.api, up.served_model, reservation))
            running.add(task)
            task.add_done_callback(running.discard)
        interval = snap.config.serve.drain_interval_s
        # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancellation that lands with the wakeup (cpython
        # gh-86296), and the gateway's stop() would wait for ever on a drainer that carried on.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(interval):
                await gw.drain_wakeup.wait()


async def _run(gw: Gateway, job: Job, api: str, served_model: str | None, reservation: Any) -> None:
    assert gw.client is not None
    body = {**(job.request or {}), "messages": job.messages, "max_tokens": job.max_tokens}
    body["model"] = served_model or body.get("model")
    body.pop("stream", None)
    try:
        async with reservation:
            resp = await gw.client.post(api + "/chat/completions", json=body)
        data = resp.json()
        if resp.status_code >= 400 or not isinstance(data, dict) or "choices" not in data:
            message = data.get("error", {}).get("message") if isinstance(data, dict) else None
            raise ValueError(f"HTTP {resp.status_code}: {message or resp.text[:300]}")
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        await asyncio.to_thread(
            gw.queue.complete, job.id, (choice.get("message") or {}).get("content") or "",
            int(usage.get("completion_tokens", 0)), data,
        )  # fmt: skip
        gw.metrics.requests.labels(job.tier, "job_done").inc()
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as err:
        await asyncio.to_thread(gw.queue.fail, job.id, f"{api}: {type(err).__name__}: {err}")
        gw.metrics.requests.labels(job.tier, "job_failed").inc()
    except asyncio.CancelledError:
        gw.queue.fail(job.id, "the gateway stopped while the job ran; submit it again")
        raise
    finally:
        gw.drain_wakeup.set()
