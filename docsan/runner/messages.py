"""OpenAI ``messages`` through the cleaning pipeline and the control-token guard, keeping their shape.

A chat request is a list of message dicts whose other keys (``name``, ``tool_calls``,
``tool_call_id``, ...) must reach the engine unchanged. The pipeline works on a
:class:`~docsan.model.Document` with one page per message, so each message's text goes in
as a page and comes back into a copy of the same dict: nothing but ``content`` is replaced.

Control-token spellings are neutralised in every string the chat template will render:
the content, and also names, tool-call arguments and the request's ``tools`` (a template
writes them into the prompt as JSON, where ``<|im_start|>`` is as live as in the content).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docsan.budget import Tokenizer, neutralise
from docsan.budget.control_tokens import guard_for
from docsan.errors import InputError
from docsan.extract.chat import ROLES
from docsan.model import Change, Document, DocumentKind, Page, Source
from docsan.render import render_messages
from docsan.runner.chat_template import content_text
from docsan.stages.special_tokens import ESCAPED
from docsan.text.paragraphs import paragraphs_to_blocks

Message = dict[str, Any]


def messages_document(messages: Sequence[Message], name: str) -> Document:
    """One page per message (page number = position + 1), the role on the page."""
    pages = []
    for i, msg in enumerate(messages, start=1):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            role = msg.get("role") if isinstance(msg, dict) else None
            raise InputError(name, f"message {i}: expected an object with a role in {sorted(ROLES)}, got {role!r}")
        content = msg.get("content")
        if content is not None and not isinstance(content, str | list):
            raise InputError(name, f"message {i}: content must be a string or a list of parts")
        if isinstance(content, list) and any(not isinstance(p, dict) or p.get("type") != "text" for p in content):
            raise InputError(name, f"message {i}: only text content parts are supported")
        blocks = paragraphs_to_blocks(content_text(content), Source.CHAT)
        pages.append(Page(number=i, role=str(msg["role"]), blocks=tuple(blocks)))
    return Document(pages=tuple(pages), kind=DocumentKind.CHAT, name=name)


def document_messages(doc: Document, originals: Sequence[Message]) -> list[Message]:
    """The cleaned document back into the original dicts: a message whose text changed gets the new text.

    A message whose text the pipeline left alone is returned as it came (content parts
    included), byte for byte, so a re-sent history renders to the same prompt prefix.
    """
    out = []
    for page, rendered in zip(doc.pages, render_messages(doc), strict=True):
        original = originals[page.number - 1]
        if rendered["content"] == content_text(original.get("content")) or (
            original.get("content") is None and not rendered["content"]
        ):
            out.append(original)
        else:
            out.append({**original, "content": rendered["content"]})
    return out


def neutralise_fields(messages: Sequence[Message], tokenizer: Tokenizer) -> tuple[list[Message], list[Change]]:
    """Escape control-token spellings in every string of each message except its role and content."""
    changes: list[Change] = []
    out = []
    for i, msg in enumerate(messages, start=1):
        rest = {k: v for k, v in msg.items() if k not in ("role", "content")}
        clean, found = neutralise_json(rest, tokenizer)
        changes.extend(escaped_changes(found, tokenizer, i))
        out.append({**msg, **clean} if found else msg)
    return out, changes


def neutralise_json(value: Any, tokenizer: Tokenizer) -> tuple[Any, list[str]]:
    """``value`` with control-token spellings escaped in every string inside it (keys too), and what was found."""
    if isinstance(value, str):
        text, found = neutralise(value, tokenizer)
        return text, found
    if isinstance(value, list):
        items = [neutralise_json(v, tokenizer) for v in value]
        found = [t for _, f in items for t in f]
        return ([v for v, _ in items] if found else value), found
    if isinstance(value, dict):
        found = []
        out = {}
        for k, v in value.items():
            key, f1 = neutralise_json(k, tokenizer) if isinstance(k, str) else (k, [])
            val, f2 = neutralise_json(v, tokenizer)
            out[key] = val
            found += f1 + f2
        return (out if found else value), found
    return value, []


def escaped_changes(found: list[str], tokenizer: Tokenizer, page: int) -> list[Change]:
    """One change per control-token spelling found (page 0: the request itself, not one of its messages)."""
    escaped = guard_for(tokenizer).escaped
    return [ESCAPED.change("control token escaped", page, t, replacement=escaped[t]) for t in found]


def tools_neutralised(tools: Any, tokenizer: Tokenizer) -> tuple[Any, list[Change]]:
    """The request's ``tools`` with control-token spellings escaped."""
    if tools is None:
        return None, []
    clean, found = neutralise_json(tools, tokenizer)
    return clean, escaped_changes(found, tokenizer, 0)
