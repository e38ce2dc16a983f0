"""A stream whose client never reads ends after its send time-out: real uvicorn, a real socket, no upstream (fast).

tests/test_serve_faults.py does the same end to end with vLLM (minutes: `make faults`); this is the part of it
that is the gateway's own, in `make test`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.serve_proc import run_uvicorn
from docsan.serve.chat import _ReleasingStream


def test_a_stream_nobody_reads_is_ended_and_cleaned_up_as_slow() -> None:
    ended = threading.Event()
    seen: dict[str, object] = {}

    async def endpoint(request: Request) -> Response:
        async def events() -> AsyncIterator[str]:
            n = 0
            while True:  # an upstream that never stops: only the send time-out ends this stream
                n += 1
                seen["events"] = n
                yield f"data: {'x' * 200} {n}\n\n"
                await asyncio.sleep(0)

        async def cleanup(slow: bool) -> None:
            seen["slow"] = slow
            ended.set()

        return _ReleasingStream(events(), cleanup, 0.5)

    app = Starlette(routes=[Route("/stream", endpoint)])
    with run_uvicorn(app, send_buffer=4096) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.socket() as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
            client.connect((host, int(port)))
            t0 = time.monotonic()
            client.sendall(f"GET /stream HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            assert ended.wait(60), "the stream was not ended"
            took = time.monotonic() - t0
            stopped_at = seen["events"]
            time.sleep(0.3)
            assert seen["events"] == stopped_at  # nothing more is produced for a client that is gone
    assert seen["slow"] is True and took >= 0.5
