"""Reading a chat-completions request body: bounded, parsed, and split into what docsan acts on and the rest.

The rest (``temperature``, ``stop``, ``response_format``, ``seed``, ``logprobs``, ``user``...) is
forwarded to the upstream unchanged; docsan sets ``messages``, ``max_tokens``, ``model`` and
(guarded) ``tools`` itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request

from docsan.serve.errors import ApiError

# Fields docsan rewrites; everything else passes through.
OWN_FIELDS = frozenset({"messages", "model", "max_tokens", "max_completion_tokens", "stream", "tools", "n"})


@dataclass(frozen=True, slots=True)
class ChatBody:
    messages: list[dict[str, Any]]
    model: str | None
    stream: bool
    # As sent (None when absent): the guard decides what a bad value gets.
    max_tokens: object
    n: int
    tools: list[dict[str, Any]] | None
    passthrough: dict[str, Any]


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it passes ``limit`` bytes (Content-Length is not trusted alone)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _too_large(size, limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ApiError(400, "the client closed the connection while sending the body") from None
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> ApiError:
    return ApiError(
        413,
        f"request body of {size} bytes exceeds limit {limit} bytes (serve.max_body_bytes)",
        code="request_too_large",
    )


def parse_chat_body(raw: bytes, max_messages: int) -> ChatBody:
    try:
        data = json.loads(raw)
    except ValueError as err:
        raise ApiError(400, f"the body is not valid JSON: {err}", code="invalid_json") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object", code="invalid_json")
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "'messages' must be a non-empty list of messages", param="messages", code="invalid_value")
    if len(messages) > max_messages:
        raise ApiError(
            400,
            f"{len(messages)} messages exceeds limit {max_messages} (serve.max_messages)",
            param="messages",
            code="too_many_messages",
        )
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise ApiError(400, "'model' must be a string", param="model", code="invalid_value")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be true or false", param="stream", code="invalid_value")
    n = data.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ApiError(400, f"n={n!r} refused: n must be an integer ≥ 1", param="n", code="invalid_value")
    tools = data.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise ApiError(400, "'tools' must be a list", param="tools", code="invalid_value")
    max_tokens = data.get("max_tokens", data.get("max_completion_tokens"))
    passthrough = {k: v for k, v in data.items() if k not in OWN_FIELDS}
    return ChatBody(messages, model, stream, max_tokens, n, tools, passthrough)
