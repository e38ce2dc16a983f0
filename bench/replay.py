"""The incident replayed: its traffic sent straight to a real vLLM server, then through ``docsan serve``.

    .venv/bin/python bench/replay.py                   # make replay: 48 requests, 6 clients, about 10-20 min here
    .venv/bin/python bench/replay.py --requests 500 --users 100 --upstream http://vllm:8000   # elsewhere

One vLLM OpenAI server (the embedded launcher: CPU build, bundled SmolLM2-135M, 8192 positions,
512 MiB of KV cache, 4 sequences) serves both runs, behind a recording proxy that says exactly
what reached it and what it answered. The same requests (bench/replay_traffic.py, from the seed)
go first straight to it, then through ``docsan serve`` (its own process) with the seed's tiers
(t4 < 2k, a10g 2k-8k, a100 beyond for priority requests) all on that server, ``runner.budget_tokens``
6000, a 32-token tier default for a missing ``max_tokens``. ``--users`` clients send concurrently.

Scaled to this 2-core machine, and said so in the results: answers are 16-32 tokens; a missing
``max_tokens`` gets 32 from vLLM too (``--override-generation-config``: its own default would let
SmolLM2 write up to the whole context, minutes per request on a CPU; the KV demand columns count
what that default allows). Reported per side: requests vLLM rejected (4xx at the proxy) and cut
short by the context (``finish_reason`` length before the answer length asked for), prompt tokens
(mean, p95), KV demand against capacity, vLLM's preemptions, queue and cache usage (its
``/metrics``, polled), error rate (anything but 200, 202, a 400 by design and 503 "memory limit"),
latency p50/p99, and whether the asked fact was in what reached the model.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import queue
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench import replay_traffic, serve_report  # noqa: E402
from bench.serve_proc import RecordingProxy, gateway_process, run_uvicorn, tiers_toml  # noqa: E402
from docsan.config.runner import EmbeddedConfig  # noqa: E402
from docsan.runner.chat_template import ChatTokenizer, content_text  # noqa: E402
from docsan.runner.embedded_model import embedded_model_dir  # noqa: E402
from docsan.serve.embedded_upstream import SERVED_NAME, EmbeddedServer  # noqa: E402
from docsan.serve.upstream import parse_metrics  # noqa: E402

MAX_MODEL_LEN = 8192
DEFAULT_ANSWER = 32
BUDGET = 6000
TARGETS = {"upstream_rejections": 0, "token_reduction": 0.40, "asked_facts_kept": 0.99}


@dataclass(slots=True)
class Outcome:
    id: str
    status: int
    seconds: float
    start: float
    end: float
    code: str | None = None
    message: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    docsan: dict[str, Any] | None = None


class MetricsPoller:
    """vLLM's /metrics every half second: the fullest cache, the longest queue, the preemptions."""

    def __init__(self, url: str, gateway: str | None = None) -> None:
        self.url = url
        # With a gateway: the most KV its ledger had reserved at once (what it let the server hold).
        self.gateway = gateway
        self.max_reserved = 0.0
        self.max_usage = 0.0
        self.max_waiting = 0.0
        self.max_running = 0.0
        self.preemptions: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _read(self) -> None:
        reading = parse_metrics(httpx.get(self.url + "/metrics", timeout=10).text, time.monotonic())
        if reading is not None:
            self.max_usage = max(self.max_usage, reading.kv_usage)
            self.max_waiting = max(self.max_waiting, reading.waiting)
            self.max_running = max(self.max_running, reading.running)
            self.preemptions.append(reading.preemptions_total)
        if self.gateway is not None:
            for line in httpx.get(self.gateway + "/metrics", timeout=10).text.splitlines():
                if line.startswith('docsan_tier_kv_reserved_tokens{tier="t4"}'):  # one ledger: one upstream
                    self.max_reserved = max(self.max_reserved, float(line.rsplit(" ", 1)[1]))

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(httpx.HTTPError):
                self._read()

    def __enter__(self) -> MetricsPoller:
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._read()

    def summary(self) -> dict[str, Any]:
        return {
            "vllm_preemptions": int(self.preemptions[-1] - self.preemptions[0]) if self.preemptions else None,
            "vllm_kv_usage_max": round(self.max_usage, 3),
            "vllm_waiting_max": int(self.max_waiting),
            "vllm_running_max": int(self.max_running),
            "ledger_reserved_max": int(self.max_reserved) if self.gateway is not None else None,
        }


def send_all(url: str, requests: list[replay_traffic.ReplayRequest], users: int, direct: bool) -> list[Outcome]:
    """Every request once, ``users`` at a time, in order; each outcome as the client saw it."""
    todo: queue.Queue[replay_traffic.ReplayRequest] = queue.Queue()
    for r in requests:
        todo.put(r)
    out: list[Outcome] = []
    t0 = time.monotonic()

    def worker() -> None:
        with httpx.Client(timeout=httpx.Timeout(900, connect=30)) as client:
            while True:
                try:
                    r = todo.get_nowait()
                except queue.Empty:
                    return
                headers = {} if direct else r.headers
                s = time.monotonic()
                try:
                    resp = client.post(url + "/v1/chat/completions", json=r.body, headers=headers)
                    out.append(_outcome(r.id, resp, s - t0, time.monotonic() - t0))
                except httpx.HTTPError as err:
                    e = time.monotonic()
                    out.append(Outcome(r.id, 0, e - s, s - t0, e - t0, "transport", f"{type(err).__name__}: {err}"))

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(out, key=lambda o: int(o.id.split("-")[1]))


def _outcome(rid: str, resp: httpx.Response, start: float, end: float) -> Outcome:
    o = Outcome(rid, resp.status_code, end - start, start, end)
    try:
        data = resp.json()
    except ValueError:
        o.message = resp.text[:200]
        return o
    if resp.status_code >= 400:
        err = data.get("error") if isinstance(data.get("error"), dict) else data
        o.code, o.message = err.get("code") or err.get("type"), str(err.get("message"))[:300]
        return o
    if resp.status_code == 200:
        o.finish_reason = data["choices"][0].get("finish_reason")
        usage = data.get("usage") or {}
        o.prompt_tokens, o.completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    o.docsan = data.get("docsan")
    return o


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _reached(proxy: RecordingProxy, start: int) -> dict[str, dict[str, Any]]:
    """What reached vLLM in this run, by request id (the ``user`` field passes through docsan)."""
    return {c["body"].get("user"): c for c in proxy.calls[start:]}


def summarize(
    requests: list[replay_traffic.ReplayRequest],
    outcomes: list[Outcome],
    reached: dict[str, dict[str, Any]],
    *,
    direct: bool,
    capacity: int,
    block: int,
) -> dict[str, Any]:
    by_id = {r.id: r for r in requests}
    n = len(outcomes)
    by_design = [o for o in outcomes if by_id[o.id].by_design and o.status == 400]
    memory = [o for o in outcomes if o.status == 503 and "memory limit" in o.message]
    ok = [o for o in outcomes if o.status in (200, 202)]
    errors = [o for o in outcomes if o not in ok and o not in by_design and o not in memory]
    rejected = [c for c in reached.values() if c["status"] is not None and 400 <= c["status"] < 500]
    cut = []
    prompts: list[int] = []
    demand: dict[str, list[int]] = {}
    for o in outcomes:
        r = by_id[o.id]
        asked = r.body.get("max_tokens")
        wanted = asked if isinstance(asked, int) and asked > 0 else DEFAULT_ANSWER
        if o.status == 200 and o.finish_reason == "length" and (o.completion_tokens or 0) < wanted:
            cut.append(o.id)
        if r.by_design:
            continue
        if direct:
            prompt = o.prompt_tokens or r.raw_tokens
            # vLLM's own default for a missing max_tokens is the rest of the context: what the request may occupy.
            answer = asked if isinstance(asked, int) and asked > 0 else max(0, MAX_MODEL_LEN - prompt)
            tier = "(one server)"
        elif o.docsan:
            prompt, answer, tier = o.docsan["prompt_tokens"], o.docsan["max_tokens"], o.docsan["tier"]
        else:
            continue
        prompts.append(prompt)
        demand.setdefault(tier, []).append(math.ceil((prompt + answer) / block) * block)
    answered = [o for o in outcomes if o.status == 200]
    forwarded = [o for o in answered if o.id in reached]
    kept = [o for o in forwarded if by_id[o.id].answer in _text(reached[o.id]["body"])]
    lat = [o.seconds for o in answered]
    return {
        "requests": n,
        "answered_200": len(answered),
        "deferred_202": sum(o.status == 202 for o in outcomes),
        "refused_400_by_design": len(by_design),
        "memory_limit_503": len(memory),
        "upstream_rejections": len(rejected),
        "upstream_rejection_examples": sorted(
            {_short(o.message) for o in outcomes if o.status == 400 and not by_id[o.id].by_design}
        )[:3],
        "length_cuts": len(cut),
        "errors": len(errors),
        "error_rate": round(len(errors) / n, 3),
        "error_examples": sorted({f"{o.status} {o.code}: {_short(o.message)}" for o in errors})[:4],
        "prompt_tokens_mean": round(sum(prompts) / len(prompts)) if prompts else None,
        "prompt_tokens_p95": _pct(prompts, 0.95),
        "kv_capacity_tokens": capacity,
        "kv_demand_by_tier": {
            t: {
                "requests": len(v),
                "mean": round(sum(v) / len(v)),
                "max": max(v),
                "over_capacity": sum(x > capacity for x in v),
            }
            for t, v in sorted(demand.items())
        },
        "kv_demand_in_flight_peak": _peak(outcomes, by_id, direct, block),
        "latency_s_p50": _round(_pct(lat, 0.5)),
        "latency_s_p99": _round(_pct(lat, 0.99)),
        "asked_fact_reached_model": f"{len(kept)}/{len(forwarded)}",
        "asked_fact_kept_share": round(len(kept) / len(forwarded), 3) if forwarded else None,
        "asked_fact_kept_of_all": round(len(kept) / n, 3),
    }


def _peak(outcomes: list[Outcome], by_id: dict[str, Any], direct: bool, block: int) -> int:
    """The most KV demand of requests sent and not yet answered, at once (from the client's intervals: through
    docsan they include the time a request waited in the gateway's queue, so the ledger's own peak is reported
    beside it)."""
    events = []
    for o in outcomes:
        r = by_id[o.id]
        if o.status != 200:
            continue
        if direct:
            prompt = o.prompt_tokens or r.raw_tokens
            asked = r.body.get("max_tokens")
            answer = asked if isinstance(asked, int) and asked > 0 else MAX_MODEL_LEN - prompt
        else:
            prompt, answer = o.docsan["prompt_tokens"], o.docsan["max_tokens"]
        need = math.ceil((prompt + answer) / block) * block
        events += [(o.start, need), (o.end, -need)]
    peak = cur = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        cur += d
        peak = max(peak, cur)
    return peak


def _text(body: dict[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in body.get("messages", []))


def _short(message: str) -> str:
    return message[:140]


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def gateway_toml(tmp: Path, upstream: str) -> Path:
    path = tmp / "docsan.toml"
    path.write_text(
        f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp / "q.sqlite3"}"\nbudget_tokens = {BUDGET}\n'
        f"read_timeout_s = 900\n{tiers_toml(upstream, extra=f'default_max_tokens = {DEFAULT_ANSWER}')}"
        "[serve]\nqueue_wait_s = 60\nqueue_max = 256\n",
        encoding="utf-8",
    )
    return path


def run(seed: int = 0, n: int = 48, users: int = 6, upstream: str | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    requests = replay_traffic.generate(seed, n, model=SERVED_NAME)
    counter = ChatTokenizer.load(embedded_model_dir())
    replay_traffic.measure(requests, counter.count_messages)
    server = None
    if upstream is None:
        cfg = EmbeddedConfig(max_model_len=MAX_MODEL_LEN)
        extra = ["--override-generation-config", json.dumps({"max_new_tokens": DEFAULT_ANSWER})]
        server = EmbeddedServer(cfg, extra_args=extra).start()
        server.wait_ready(timeout_s=900)
        upstream = server.url
    try:
        info = parse_metrics(httpx.get(upstream + "/metrics", timeout=10).text, 0.0)
        capacity = info.kv_tokens if info and info.kv_tokens else 0
        block = info.block_size if info and info.block_size else 128
        proxy = RecordingProxy(upstream)
        with run_uvicorn(proxy.app()) as proxy_url, tempfile.TemporaryDirectory() as tmp:
            sides = {}
            mark = len(proxy.calls)
            with MetricsPoller(upstream) as poll:
                outcomes = send_all(proxy_url, requests, users, direct=True)
            sides["direct"] = summarize(requests, outcomes, _reached(proxy, mark), direct=True, capacity=capacity,
                                        block=block) | poll.summary()  # fmt: skip
            with gateway_process(gateway_toml(Path(tmp), proxy_url)) as gw:
                mark = len(proxy.calls)
                with MetricsPoller(upstream, gw.url) as poll:
                    outcomes = send_all(gw.url, requests, users, direct=False)
                sides["docsan"] = summarize(requests, outcomes, _reached(proxy, mark), direct=False,
                                            capacity=capacity, block=block) | poll.summary()  # fmt: skip
    finally:
        if server is not None:
            server.stop()
    d, g = sides["direct"], sides["docsan"]
    raw = [r.raw_tokens for r in requests if not r.by_design]
    reduction = 1 - g["prompt_tokens_mean"] / (sum(raw) / len(raw)) if g["prompt_tokens_mean"] else None
    return {
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "seconds": round(time.perf_counter() - t0),
        "seed": seed,
        "users": users,
        "upstream": "vLLM 0.32 OpenAI server, CPU build, SmolLM2-135M-Instruct, max_model_len 8192, 512 MiB KV "
        f"({capacity} tokens, blocks of {block}), 4 sequences; missing max_tokens capped at {DEFAULT_ANSWER}",
        "docsan_config": f"seed tiers on one server, runner.budget_tokens {BUDGET}, tier default max_tokens "
        f"{DEFAULT_ANSWER}, serve.queue_wait_s 60",
        "profile": replay_traffic.profile(requests),
        "direct": d,
        "docsan": g,
        "token_reduction": round(reduction, 3) if reduction is not None else None,
        "targets": TARGETS,
        "targets_met": {
            "upstream_rejections": g["upstream_rejections"] == 0,
            "token_reduction": reduction is not None and reduction >= TARGETS["token_reduction"],
            "asked_facts_kept": (g["asked_fact_kept_share"] or 0) >= TARGETS["asked_facts_kept"],
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--requests", type=int, default=48, help="requests per side (default 48)")
    p.add_argument("--users", type=int, default=6, help="concurrent clients (default 6)")
    p.add_argument("--upstream", help="an already running vLLM OpenAI server (default: start the embedded one)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "replay.json", help="the results (JSON)")
    p.add_argument("--docs", action="store_true", help="also rewrite the replay section of docs/benchmarks.md")
    args = p.parse_args(argv)
    serve_report.publish(run(args.seed, args.requests, args.users, args.upstream), args.out, "replay", args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
