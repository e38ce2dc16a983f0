"""Chat histories: an OpenAI-style ``messages`` list, one page per message."""

from __future__ import annotations

import json
from typing import Any

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract.encoding import decode
from docsan.model import Document, DocumentKind, Page, Source
from docsan.text.paragraphs import paragraphs_to_blocks

ROLES = {"system", "user", "assistant", "tool", "developer"}


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


def _content_text(content: Any, name: str, index: int) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    # The OpenAI "content parts" form: keep the text parts, say what else was there.
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                texts.append(str(part.get("text", "")))
            else:
                raise InputError(name, f"message {index}: only text content is supported")
        return "\n\n".join(texts)
    raise InputError(name, f"message {index}: content must be a string")


def chat_document(data: bytes, name: str, config: ExtractConfig | None = None) -> Document:
    decoded = decode(data, name, (config or ExtractConfig()).encoding)
    try:
        obj = json.loads(decoded.text)
    except ValueError as err:
        raise InputError(name, f"invalid JSON: {err}") from None
    try:
        messages = _messages(obj)
    except InputError:
        raise InputError(name, "JSON is not a chat history (expected a list of {role, content})") from None
    if not messages:
        raise InputError(name, "chat history has no messages")
    pages = []
    for i, msg in enumerate(messages, start=1):
        if not isinstance(msg, dict) or "role" not in msg:
            raise InputError(name, f"message {i}: expected an object with 'role' and 'content'")
        role = str(msg["role"])
        if role not in ROLES:
            raise InputError(name, f"message {i}: unknown role {role!r}")
        text = _content_text(msg.get("content"), name, i)
        pages.append(Page(number=i, role=role, blocks=tuple(paragraphs_to_blocks(text, Source.CHAT))))
    return Document(pages=tuple(pages), kind=DocumentKind.CHAT, name=name, notes=(decoded.note,))
