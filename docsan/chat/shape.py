"""Where a chat message's text sits, and the cleaned text put back into the message's own shape.

A message's text is ``content`` when that is a string, or the ``text`` of
each ``{"type": "text"}`` part when ``content`` is a list of parts
(docs/chat.md says what passes through untouched, and why). A chat document
has one page per message; a block of a message given as parts records its
part (``Block.part``), so each part gets its own text back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from docsan.model import Document, Page, Source
from docsan.render import render_block
from docsan.text.paragraphs import paragraphs_to_blocks

TEXT_PART = "text"


def text_slots(message: Mapping[str, Any]) -> list[tuple[int | None, str]]:
    """Where a message's text sits: ``(None, content)`` for string content, ``(i, text)`` per text part."""
    content = message.get("content")
    if isinstance(content, str):
        return [(None, content)]
    if isinstance(content, list):
        return [
            (i, p["text"])
            for i, p in enumerate(content)
            if isinstance(p, dict) and p.get("type") == TEXT_PART and isinstance(p.get("text"), str)
        ]
    return []


def message_text(message: Mapping[str, Any]) -> str:
    """All of a message's text, parts joined by a blank line (for ranking and queries)."""
    return "\n\n".join(text for _, text in text_slots(message) if text)


def message_page(message: Mapping[str, Any], number: int) -> Page:
    """Page ``number`` for one message: its text slots' paragraphs as blocks, each tagged with its part."""
    blocks = []
    for part, text in text_slots(message):
        blocks += [b if part is None else replace(b, part=part) for b in paragraphs_to_blocks(text, Source.CHAT)]
    return Page(number=number, role=str(message["role"]), blocks=tuple(blocks))


def render_messages(doc: Document) -> list[dict[str, Any]]:
    """A chat document back to its ``messages``: each kept message in the shape it came in, only its text cleaned.

    A message no stage touched is the very dict that was given, so its bytes
    (and the engine's prefix cache) do not change. A document built without
    its request (``doc.chat`` None) gives plain ``{"role", "content"}`` messages.
    """
    if doc.chat is None:
        return [{"role": page.role or "user", "content": _part_texts(page).get(None, "")} for page in doc.pages]
    out: list[dict[str, Any]] = []
    for page in doc.pages:
        original = doc.chat.messages[page.number - 1]
        if page == message_page(original, page.number):
            out.append(original)
        else:
            out.append(with_texts(original, _part_texts(page)))
    return out


def render_chat(doc: Document) -> list[dict[str, Any]] | dict[str, Any]:
    """The whole request back: its other fields (``model``, ``max_tokens``...) in their order, or the bare list."""
    messages = render_messages(doc)
    if doc.chat is None or doc.chat.fields is None:
        return messages
    return {key: (messages if key == "messages" else value) for key, value in doc.chat.fields.items()}


def _part_texts(page: Page) -> dict[int | None, str]:
    """The page's text per content part (None: string content), blocks joined as render_text joins them."""
    texts: dict[int | None, list[str]] = {}
    for block in page.blocks:
        text = render_block(block)
        if text.strip():
            texts.setdefault(block.part, []).append(text)
    return {part: "\n\n".join(t) for part, t in texts.items()}


def with_texts(message: Mapping[str, Any], texts: Mapping[int | None, str]) -> dict[str, Any]:
    """A copy of ``message`` with its text replaced: ``texts[None]`` for string content, ``texts[i]`` for part i.

    A text part left without text is taken out of the list (its image or
    other parts stay). A message with ``tool_calls`` whose text all went gets
    ``content: null``, OpenAI's form for a pure tool call, never ``""``.
    """
    content = message.get("content")
    new: Any
    if isinstance(content, list):
        new = []
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == TEXT_PART and isinstance(part.get("text"), str):
                text = texts.get(i, "")
                if text:
                    new.append(part if text == part["text"] else {**part, "text": text})
            else:
                new.append(part)
    else:
        new = texts.get(None, "")
    if not new and message.get("tool_calls"):
        new = None
    return {**message, "content": new}
