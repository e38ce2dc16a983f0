"""Chat histories: an OpenAI chat request (or its bare ``messages`` list) to a document, one page per message.

The request itself travels with the document (:class:`~docsan.model.ChatRequest`),
so the cleaned text goes back into exactly the shape it came in
(:func:`docsan.chat.shape.render_chat`). What is text, and so cleaned:

- ``content`` when it is a string;
- the ``text`` of each ``{"type": "text"}`` part when ``content`` is a list of parts.

Everything else passes through untouched, by decision:

- other content parts (``image_url``, ``input_audio``, ``file``...): not text;
- ``tool_calls`` with their ``function.arguments``: a JSON document the model
  wrote for a program in an earlier turn; cleaning it would change the call
  that was made (and could break its JSON). What a tool brings into the
  prompt from outside is its result, a ``tool`` message, whose content is
  cleaned like any other (text spelling a control token is escaped there too,
  by the ``special_tokens`` stage: the template renders the arguments);
- ``name``, ``tool_call_id`` and any other key: identifiers and settings;
- the request fields around the messages (``model``, ``max_tokens``,
  ``tools``, ``response_format``...): the client's own configuration.
"""

from __future__ import annotations

import json
from typing import Any

from docsan.chat.shape import TEXT_PART, message_page
from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract.encoding import decode
from docsan.model import ChatRequest, Document, DocumentKind

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


def looks_like_chat(data: bytes) -> bool:
    head = data.lstrip()[:1]
    if head not in (b"[", b"{"):
        return False
    try:
        _messages(json.loads(decode(data, "-").text))
    except (ValueError, InputError):
        return False
    return True


def _messages(obj: Any) -> list[Any]:
    if isinstance(obj, dict) and "messages" in obj:
        obj = obj["messages"]
    if not isinstance(obj, list):
        raise InputError("-", "JSON is not a messages list")
    return obj


def _check_message(msg: Any, name: str, index: int) -> dict[str, Any]:
    if not isinstance(msg, dict) or "role" not in msg:
        raise InputError(name, f"message {index}: expected an object with 'role' and 'content'")
    role = msg["role"]
    if role not in ROLES:
        raise InputError(name, f"message {index}: unknown role {role!r}")
    content = msg.get("content")
    if isinstance(content, list):
        for k, part in enumerate(content, start=1):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise InputError(name, f"message {index}: content part {k} is not an object with a 'type'")
            if part["type"] == TEXT_PART and not isinstance(part.get("text"), str):
                raise InputError(name, f"message {index}: text part {k} has no string 'text'")
    elif content is not None and not isinstance(content, str):
        raise InputError(name, f"message {index}: content must be a string, a list of parts, or null")
    return msg


def chat_request(obj: Any, name: str) -> ChatRequest:
    """Validate a parsed request (``{"messages": [...], ...}``) or a bare messages list."""
    try:
        messages = _messages(obj)
    except InputError:
        raise InputError(name, "JSON is not a chat history (expected a list of {role, content})") from None
    if not messages:
        raise InputError(name, "chat history has no messages")
    checked = tuple(_check_message(m, name, i) for i, m in enumerate(messages, start=1))
    return ChatRequest(checked, obj if isinstance(obj, dict) else None)


def request_document(request: ChatRequest, name: str, notes: tuple[str, ...] = ()) -> Document:
    """The chat document of a request: page ``n`` is message ``n``, the request kept as ``doc.chat``."""
    pages = tuple(message_page(m, i) for i, m in enumerate(request.messages, start=1))
    return Document(pages=pages, kind=DocumentKind.CHAT, name=name, chat=request, notes=notes)


def chat_document(data: bytes, name: str, config: ExtractConfig | None = None) -> Document:
    """Parse chat JSON bytes (a request object or a messages list) into its chat document."""
    decoded = decode(data, name, (config or ExtractConfig()).encoding)
    try:
        obj = json.loads(decoded.text)
    except ValueError as err:
        raise InputError(name, f"invalid JSON: {err}") from None
    return request_document(chat_request(obj, name), name, (decoded.note,))
