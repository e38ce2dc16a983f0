"""An upstream's health polls against a real HTTP server on loopback: a slow answer is not a dead server.

A vLLM on shared cores can take longer than ``poll_timeout_s`` to answer
``/health`` while it works; one such answer used to mark it down and turn
every request into a 502. A refused connection is a dead server at once.
"""

from __future__ import annotations

import asyncio
import socket

import httpx
from fastapi import FastAPI

from bench.serve_proc import run_uvicorn
from docsan.serve.ledger import Pool
from docsan.serve.upstream import Upstream

TIMEOUT_S = 0.2


def _upstream(url: str) -> Upstream:
    pool = Pool(url, capacity_tokens=4096, block_size=16, max_num_seqs=4, queue_max=8, stale_after_s=60)
    return Upstream(url, pool, ["t4"], capacity_configured=True)


def _slow_health_app(delays: list[float]) -> FastAPI:
    """/health answers after the next of ``delays`` seconds (0 once they are used up)."""
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        await asyncio.sleep(delays.pop(0) if delays else 0)
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, object]:
        return {"data": [{"id": "smollm2", "max_model_len": 8192}]}

    return app


async def _polls(up: Upstream, n: int) -> list[bool | None]:
    seen = []
    async with httpx.AsyncClient() as client:
        for _ in range(n):
            await up.poll(client, timeout=TIMEOUT_S, use_metrics=False, down_after_timeouts=3)
            seen.append(up.pool.healthy)
    return seen


def test_a_slow_health_answer_is_down_only_after_several_in_a_row() -> None:
    # ok, two slow answers (still up), ok (the count starts again), three slow answers (down), ok (up again)
    delays = [0, 1, 1, 0, 1, 1, 1, 0]
    with run_uvicorn(_slow_health_app(delays)) as url:
        up = _upstream(url)
        seen = asyncio.run(_polls(up, 8))
    assert seen == [True, True, True, True, True, True, False, True]
    assert up.last_error is None and up.timeouts == 0


def test_a_refused_connection_is_down_at_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # a port nothing listens on while the socket holds it
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        up = _upstream(url)
        seen = asyncio.run(_polls(up, 1))
    assert seen == [False]
    assert up.last_error
