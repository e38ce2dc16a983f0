"""Control-token spellings in the parts of a chat request the stages do not read.

The cleaning stages (and the ``special_tokens`` stage among them) see a message's text
(:class:`docsan.api.ChatCleaner`). The chat template renders more than that: names, tool-call
arguments and the request's ``tools`` go into the prompt too, as JSON, where ``<|im_start|>``
is as live as in the content. Those strings are escaped here, with the same guard and the same
change code, so a request cannot smuggle control tokens past the stages in its other fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docsan.budget import Tokenizer, neutralise
from docsan.budget.control_tokens import guard_for
from docsan.model import Change
from docsan.stages.special_tokens import ESCAPED

Message = dict[str, Any]


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
