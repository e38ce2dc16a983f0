"""Bytes a client sends per turn of a 200-turn conversation, with the sessions protocol and without it.

The same conversation twice through one gateway (in this process, under uvicorn) in front of a real
vLLM server (the embedded launcher: CPU build, bundled SmolLM2, 2048 positions): once as the
incident's clients did it, the whole history on every turn, once with :class:`docsan.client.SessionClient`
(only the new messages, the gateway holding the history). The user turns are short questions with a
pasted paragraph every fifth turn; the assistant turns are the model's answers (greedy, 8 tokens).
Measured per turn: the request body's bytes (an httpx event hook on the OpenAI client), and the
gateway's own time (``Server-Timing: docsan``), which with the whole history resent includes cleaning it.
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

from bench import serve_report  # noqa: E402
from bench.serve_proc import run_uvicorn  # noqa: E402
from docsan.config import config_from_dict  # noqa: E402
from docsan.config.runner import EmbeddedConfig  # noqa: E402
from docsan.serve.embedded_upstream import SERVED_NAME, EmbeddedServer  # noqa: E402

TURNS = 200
# Both ways the history is trimmed to this many prompt tokens (without a budget the whole-history client
# would be refused once its history passes the 2048 positions).
BUDGET = 1024
PASTE = (
    "Section {i} of the maintenance log: the inspection of line {i} found the valves within tolerance, the "
    "pressure readings stable over the week, and two gaskets replaced as scheduled. The next review is set for "
    "the first Monday of the month; open items are carried over to the shared tracker."
)


def _user(i: int) -> str:
    text = f"Turn {i}: what should we check next on line {i}?"
    return PASTE.format(i=i) + "\n\n" + text if i % 5 == 0 else text


def _conversation(gateway: str, sessions: bool) -> dict[str, Any]:
    import openai

    from docsan.client import SessionClient

    sizes: list[int] = []
    timing: list[float] = []

    def request_hook(req: httpx.Request) -> None:
        if req.url.path.endswith("/chat/completions"):
            sizes.append(len(req.content))

    def response_hook(resp: httpx.Response) -> None:
        header = resp.headers.get("server-timing", "")
        for part in header.split(","):
            key, _, dur = part.strip().partition(";dur=")
            if key == "docsan" and resp.status_code == 200:
                timing.append(float(dur))

    http = httpx.Client(event_hooks={"request": [request_hook], "response": [response_hook]}, timeout=300)
    client = openai.OpenAI(base_url=gateway + "/v1", api_key="k", max_retries=0, http_client=http)
    chat = SessionClient(client) if sessions else None
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are the maintenance team's assistant."}]
    t0 = time.perf_counter()
    for i in range(TURNS):
        history.append({"role": "user", "content": _user(i)})
        kw: dict[str, Any] = {"model": SERVED_NAME, "messages": history, "max_tokens": 8, "temperature": 0}
        reply = chat.create(**kw) if chat is not None else client.chat.completions.create(**kw)
        history.append({"role": "assistant", "content": reply.choices[0].message.content or "ok"})
    seconds = time.perf_counter() - t0
    http.close()
    return {
        "turns": TURNS,
        "requests": len(sizes),
        "resends_after_409": chat.resends if chat is not None else None,
        "bytes_total": sum(sizes),
        "bytes_per_turn_mean": round(sum(sizes) / TURNS),
        "bytes_turn_1": sizes[0],
        "bytes_turn_50": sizes[49],
        "bytes_turn_100": sizes[99],
        "bytes_turn_200": sizes[-1],
        "gateway_ms_p50": round(statistics.median(timing), 1),
        "gateway_ms_last_20_p50": round(statistics.median(timing[-20:]), 1),
        "seconds": round(seconds, 1),
    }


def run(upstream: str | None = None) -> dict[str, Any]:
    from docsan.serve.app import create_app

    load_before = os.getloadavg()[0]
    server = None
    if upstream is None:
        server = EmbeddedServer(EmbeddedConfig(max_model_len=2048)).start()
        server.wait_ready(timeout_s=900)
        upstream = server.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tiers = {n: {"base_url": upstream} for n in ("t4", "a10g", "a100")}
            config = config_from_dict(
                {
                    "extract": {"ocr": "never"},
                    "runner": {"queue_path": f"{tmp}/q.sqlite3", "tiers": tiers, "budget_tokens": BUDGET},
                }
            )
            with run_uvicorn(create_app(config)) as gateway:
                while httpx.get(gateway + "/ready").status_code != 200:
                    time.sleep(0.2)
                whole = _conversation(gateway, sessions=False)
                delta = _conversation(gateway, sessions=True)
    finally:
        if server is not None:
            server.stop()
    return {
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_before_after": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        "upstream": "vLLM 0.32 OpenAI server, CPU build, SmolLM2-135M-Instruct, max_model_len 2048",
        "whole_history_every_turn": whole,
        "sessions_protocol": delta,
        "bytes_ratio": round(delta["bytes_total"] / whole["bytes_total"], 4),
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", help="an already running vLLM OpenAI server (default: start the embedded one)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "sessions_bench.json")
    p.add_argument("--docs", action="store_true", help="also rewrite the sessions section of docs/benchmarks.md")
    args = p.parse_args(argv)
    serve_report.publish(run(args.upstream), args.out, "sessions", args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
