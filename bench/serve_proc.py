"""Servers for the benches and the gateway tests: ``docsan serve`` as its own process (as deployed), any ASGI
app under a real uvicorn in a thread, a recording proxy that says exactly what reached an upstream, and a
redis-server that can be stopped and started again."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class GatewayProcess:
    url: str
    proc: subprocess.Popen[str]
    # Every line the gateway wrote to stderr (read by a thread, so its pipe never fills).
    lines: list[str] = field(default_factory=list)


@contextmanager
def gateway_process(config_file: Path, *, ready_timeout_s: float = 180, env: dict[str, str] | None = None) \
        -> Iterator[GatewayProcess]:  # fmt: skip
    """``python -m cli serve --config FILE --port 0`` from this checkout; yields once ``/ready`` says 200,
    stops it (SIGTERM, then SIGKILL) on the way out."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--config", str(config_file), "--port", "0"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "serving on " in line:
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + ready_timeout_s
        while not found.wait(0.2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"docsan serve did not start: {' | '.join(lines[-5:])}")
        url = next(ln for ln in lines if "serving on " in ln).split("serving on ")[1].split()[0]
        while httpx.get(url + "/ready", timeout=10).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"docsan serve not ready: {httpx.get(url + '/ready', timeout=10).text}")
            time.sleep(0.2)
        yield GatewayProcess(url, proc, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def tiers_toml(url: str, names: tuple[str, ...] = ("t4", "a10g", "a100"), extra: str = "") -> str:
    """Every tier pointed at one upstream ``url`` (``extra``: more lines for each tier's table)."""
    more = extra.rstrip("\n") + "\n" if extra else ""
    return "".join(f'[runner.tiers.{n}]\nbase_url = "{url}"\n{more}' for n in names)


@contextmanager
def run_uvicorn(app: Any, *, send_buffer: int | None = None) -> Iterator[str]:
    """``app`` served by a real uvicorn on a free loopback port, in a thread; yields its base URL.

    ``send_buffer``: the kernel send buffer (bytes) of the listening socket, which accepted connections inherit;
    with it each connection's event-loop write buffer holds nothing past what the kernel takes (its high-water
    mark, 64 KiB by default, was most of what a client that does not read had to fill: about 350 tokens of a
    vLLM stream, minutes of generation on busy cores). Small, the server's writes wait after a few kilobytes.
    """
    sock = socket.socket()
    http: Any = "auto"
    if send_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        http = _unbuffered_writes()
    sock.bind(("127.0.0.1", 0))
    # A short graceful shutdown: a test's server must not wait on a client that will never come back.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5, http=http)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def _unbuffered_writes() -> type[asyncio.Protocol]:
    """uvicorn's own HTTP protocol, with each connection's writes paused as soon as the kernel's buffer is full."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class SmallWriteBuffer(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            transport.set_write_buffer_limits(high=0)

    return SmallWriteBuffer


class RecordingProxy:
    """Forwards everything to ``upstream``; records each chat-completions body it passed on (``chats``), and with
    it the upstream's status once known (``calls``: ``{"body", "status"}``)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.chats: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        # Idle connections dropped before vLLM's own 5 s keep-alive does (see docsan/serve/gateway.py).
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(900, connect=10), limits=httpx.Limits(keepalive_expiry=2.0)
        )

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.forward, methods=["GET", "POST"])])

    async def forward(self, request: Request) -> Response:
        body = await request.body()
        call: dict[str, Any] = {}
        if request.url.path.endswith("/chat/completions"):
            self.chats.append(json.loads(body))
            call = {"body": self.chats[-1], "status": None}
            self.calls.append(call)
        req = self.client.build_request(
            request.method, self.upstream + request.url.path, content=body,
            headers={"content-type": request.headers.get("content-type", "application/json")},
        )  # fmt: skip
        resp = await self.client.send(req, stream=True)
        call["status"] = resp.status_code
        headers = {"content-type": resp.headers.get("content-type", "application/json")}
        if headers["content-type"].startswith("text/event-stream"):

            async def chunks() -> Any:
                try:
                    async for chunk in resp.aiter_raw():
                        yield chunk
                finally:
                    await resp.aclose()

            return StreamingResponse(chunks(), status_code=resp.status_code, headers=headers)
        data = await resp.aread()
        await resp.aclose()
        return Response(data, status_code=resp.status_code, headers=headers)


class RedisServer:
    """A redis-server of a test's own on a fixed free port, which the test may stop and start again (a fault)."""

    def __init__(self, workdir: Path) -> None:
        from docsan.serve.embedded_upstream import free_port

        self.workdir = workdir
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RedisServer:
        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError("redis-server not installed (scripts/install-system-deps.sh installs it)")
        self.proc = subprocess.Popen(
            [server, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    return self
            except redis.RedisError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on port {self.port}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()  # an outage, not a shutdown
            proc.wait(10)
