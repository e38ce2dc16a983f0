"""The gateway's own overhead per request, against a direct request to the same vLLM server in the same run.

A real vLLM OpenAI server (the embedded launcher: CPU build, bundled SmolLM2, 8192 positions) and the
gateway (``docsan serve``, its own process, as deployed) in front of it; the client is this process.
For a short chat and for an 8k-token document (real text from the shared corpus), requests go
alternately straight to vLLM and through the gateway (``max_tokens`` 1, greedy), so a noisy
neighbour slows both alike. Reported:

- ``overhead_ms``: the gateway's own time per request as it measures it (``Server-Timing: docsan``:
  parse, sanitize, guard, count, route, admit, respond; no upstream, no queue), p50 and p99;
- ``added_ms_p50``: the median of the paired differences *gateway end-to-end − direct end-to-end*,
  which also holds the extra HTTP hop and JSON re-encoding;
- ``e2e_ratio_p50``: gateway end-to-end p50 ÷ direct p50;
- ``upstream_ms_p50``: the gateway's own upstream call (``Server-Timing: upstream``), to compare with
  ``direct_ms_p50``: the cleaned prompt is not the raw one, so vLLM's share differs too;
- ``overhead_ms_min`` / ``library_ms_min``: the cheapest request, what the code costs when no other
  process takes the two cores meanwhile (the medians move with the other sessions' load);
- ``library_ms_p50``: :meth:`RequestPath.chat` alone, in this process (what the gateway runs per request).

Targets (issue 10): ≤ 5 ms p50 added for a short chat, ≤ 150 ms for an 8k-token document.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.serve_proc import gateway_process, tiers_toml  # noqa: E402
from docsan.config import load_config  # noqa: E402
from docsan.config.runner import EmbeddedConfig  # noqa: E402
from docsan.extract import load  # noqa: E402
from docsan.render import render_text  # noqa: E402
from docsan.runner.request import RequestOptions, RequestPath  # noqa: E402
from docsan.serve.embedded_upstream import EmbeddedServer  # noqa: E402

CORPUS_DOC = "fedreg_2020-17221_15p.pdf"
SHORT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What was the Q3 revenue of the company, and how did it compare to Q2?"},
]
TARGETS_MS = {"short_chat": 5.0, "doc_8k": 150.0}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _doc_messages(path: RequestPath) -> list[dict[str, Any]]:
    corpus = next((p / "shared" / "corpus" / "pdfs" for p in ROOT.parents if (p / "shared/corpus/pdfs").is_dir()), None)
    if corpus is None:
        raise FileNotFoundError("the shared corpus (../shared/corpus/pdfs) is needed for the 8k-token document")
    text = render_text(load(corpus / CORPUS_DOC, path.config.extract))
    ids = path.tokenizer.encode(text)[:7800]  # with the question and the template: just under 8k tokens
    body = path.tokenizer.decode(ids)
    return [{"role": "user", "content": f"Read the document and answer.\n\n{body}\n\nWhat does the rule propose?"}]


def _timing(header: str, name: str) -> float:
    for part in header.split(","):
        key, _, dur = part.strip().partition(";dur=")
        if key == name:
            return float(dur)
    raise KeyError(name)


def _measure(client: httpx.Client, gateway: str, direct: str, model: str, messages: list, n: int) -> dict[str, Any]:
    body = {"messages": messages, "max_tokens": 1, "temperature": 0}
    for url, extra in ((direct, {"model": model}), (gateway, {})):  # warm both paths (and vLLM's prefix cache)
        client.post(url + "/v1/chat/completions", json={**body, **extra}).raise_for_status()
    overhead, upstream, through, straight = [], [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        client.post(direct + "/v1/chat/completions", json={**body, "model": model}).raise_for_status()
        t1 = time.perf_counter()
        r = client.post(gateway + "/v1/chat/completions", json=body)
        t2 = time.perf_counter()
        r.raise_for_status()
        straight.append(1000 * (t1 - t0))
        through.append(1000 * (t2 - t1))
        overhead.append(_timing(r.headers["server-timing"], "docsan"))
        upstream.append(_timing(r.headers["server-timing"], "upstream"))
    added = [g - d for g, d in zip(through, straight, strict=True)]
    return {
        "requests": n,
        "prompt_tokens": r.json()["docsan"]["prompt_tokens"],
        # The least a request cost: what the code costs when no other process takes the cores meanwhile.
        "overhead_ms_min": round(min(overhead), 2),
        "overhead_ms_p50": round(statistics.median(overhead), 2),
        "overhead_ms_p99": round(_pct(overhead, 0.99), 2),
        "added_ms_p50": round(statistics.median(added), 2),
        "direct_ms_p50": round(statistics.median(straight), 2),
        # The gateway's upstream call as it timed it: vLLM's time for the cleaned prompt, plus the hop.
        "upstream_ms_p50": round(statistics.median(upstream), 2),
        "gateway_ms_p50": round(statistics.median(through), 2),
        "e2e_ratio_p50": round(statistics.median(through) / statistics.median(straight), 3),
    }


def _library(path: RequestPath, messages: list, n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        path.chat(messages, RequestOptions(max_tokens=1))
        times.append(1000 * (time.perf_counter() - t0))
    return {"library_ms_min": round(min(times), 2), "library_ms_p50": round(statistics.median(times), 2)}


def run(short_n: int = 60, doc_n: int = 15) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    server = EmbeddedServer(EmbeddedConfig(max_model_len=8192)).start()
    try:
        server.wait_ready(timeout_s=900)
        start_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            tiers = tiers_toml(server.url)
            config_file = Path(tmp) / "docsan.toml"
            config_file.write_text(
                f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp}/q.sqlite3"\n{tiers}', encoding="utf-8"
            )
            path = RequestPath(load_config(config_file))
            path.warm()
            doc = _doc_messages(path)
            with gateway_process(config_file) as gw, httpx.Client(timeout=600) as client:
                gateway = gw.url
                model = client.get(server.url + "/v1/models").json()["data"][0]["id"]
                short = _measure(client, gateway, server.url, model, SHORT, short_n)
                long = _measure(client, gateway, server.url, model, doc, doc_n)
        # In this process, with the upstream idle: the request path alone.
        short |= _library(path, SHORT, short_n)
        long |= _library(path, doc, doc_n)
    finally:
        server.stop()
    out: dict[str, Any] = {
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        # Other sessions share the 2 cores: the 1-minute load average before and after says how busy they were.
        "load_average_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "upstream": "vLLM 0.32 OpenAI server, CPU build, SmolLM2-135M-Instruct, max_model_len 8192",
        "upstream_start_seconds": round(start_s, 1),
        "short_chat": short,
        "doc_8k": long,
    }
    for name, target in TARGETS_MS.items():
        out[name]["target_added_ms_p50"] = target
        out[name]["target_met"] = out[name]["overhead_ms_p50"] <= target and out[name]["added_ms_p50"] <= target
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=1))
