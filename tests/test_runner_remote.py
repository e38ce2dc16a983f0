"""The remote backend against a local HTTP server speaking the OpenAI chat-completions wire format.

The server is a protocol test double (a second real vLLM server would cost another engine's
CPU on a shared two-core machine); it checks what docsan sends and answers as vLLM does,
including SSE streaming with a final usage chunk, 4xx/5xx errors and a stalled reply.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from docsan.runner.backends.base import GenerationRequest
from docsan.runner.backends.remote import RemoteBackend
from docsan.runner.errors import BackendError
from docsan.runner.tiers import BUILTIN_TIERS

PIECES = ["The Q3 revenue ", "was 42.13 ", "million yuan."]


class OpenAIHandler(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []
    mode: ClassVar[str] = "ok"

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _json(self, code: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        assert self.path == "/v1/models"
        self._json(200, {"object": "list", "data": [{"id": "served-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).received.append({"path": self.path, **body})
        if self.mode == "400":
            # vLLM 0.32's ErrorResponse shape (entrypoints/serve/engine/protocol.py)
            err = {"message": "max_tokens must be at least 1", "type": "BadRequestError", "param": None, "code": 400}
            return self._json(400, {"error": err})
        if self.mode == "500":
            # older vLLM servers answered a flat object
            return self._json(500, {"object": "error", "message": "CUDA out of memory", "code": 500})
        if self.mode == "stall":
            time.sleep(2)  # longer than the client's read timeout; the client has gone by now
            return None
        usage = {"prompt_tokens": 17, "completion_tokens": 9, "total_tokens": 26}
        if not body.get("stream"):
            msg = {"role": "assistant", "content": "".join(PIECES)}
            return self._json(200, {"choices": [{"index": 0, "message": msg, "finish_reason": "stop"}], "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, piece in enumerate(PIECES):
            finish = "stop" if i == len(PIECES) - 1 else None
            chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": finish}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode())


@pytest.fixture
def server() -> Iterator[tuple[str, type[OpenAIHandler]]]:
    handler = type("Handler", (OpenAIHandler,), {"received": [], "mode": "ok"})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


REQ = GenerationRequest(messages=[{"role": "user", "content": "Q3 revenue?"}], prompt_ids=[1, 2, 3], max_tokens=32)


def test_non_streaming_answer_and_usage(server) -> None:
    url, handler = server
    gen = RemoteBackend(url).generate(BUILTIN_TIERS["t4"], REQ)
    assert gen.text == "".join(PIECES) and (gen.prompt_tokens, gen.completion_tokens) == (17, 9)
    [sent] = handler.received
    assert sent["path"] == "/v1/chat/completions"
    assert sent["model"] == "served-model"  # asked the server, since the tier names no model
    assert sent["max_tokens"] == 32 and sent["messages"] == REQ.messages and "stream" not in sent


def test_streaming_delivers_pieces_in_order(server) -> None:
    url, handler = server
    pieces: list[str] = []
    gen = RemoteBackend(url + "/v1/").generate(BUILTIN_TIERS["a10g"], REQ, on_text=pieces.append)
    assert pieces == PIECES and gen.text == "".join(PIECES)
    assert gen.finish_reason == "stop" and gen.completion_tokens == 9 and gen.first_token_seconds is not None
    assert handler.received[0]["stream"] is True and handler.received[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(("mode", "message"), [("400", "rejected the request: HTTP 400: max_tokens must be"),
                                               ("500", "failed: HTTP 500: CUDA out of memory")])  # fmt: skip
@pytest.mark.parametrize("stream", [False, True])
def test_http_errors_become_one_line(server, mode: str, message: str, stream: bool) -> None:
    url, handler = server
    handler.mode = mode
    with pytest.raises(BackendError, match=message):
        RemoteBackend(url).generate(BUILTIN_TIERS["t4"], REQ, on_text=(lambda _: None) if stream else None)


def test_refused_connection_is_explained() -> None:
    with socket.socket() as s:  # a port nobody listens on: bind, note it, close
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match=rf"cannot connect to http://127.0.0.1:{port}/v1 .*server running"):
        RemoteBackend(f"http://127.0.0.1:{port}").generate(BUILTIN_TIERS["t4"], REQ)


def test_read_timeout(server) -> None:
    url, handler = server
    handler.mode = "stall"
    with pytest.raises(BackendError, match=r"did not answer within 0\.5 s"):
        RemoteBackend(url, read_timeout_s=0.5).generate(
            BUILTIN_TIERS["t4"].model_copy(
                update={"engine": BUILTIN_TIERS["t4"].engine.model_copy(update={"model": "m"})}
            ),
            REQ,
        )


def test_tier_without_base_url() -> None:
    with pytest.raises(BackendError, match="tier t4 has no base_url"):
        RemoteBackend().generate(BUILTIN_TIERS["t4"], REQ)
