"""Control-token spellings in the parts of a chat request that are not a message's text.

The stages clean a message's text. A chat template renders more than that:
a message's ``name``, its ``tool_calls`` (their ``function.arguments`` as the
object they encode) and the request's ``tools`` go into the prompt too, where
a pasted ``<|im_start|>`` is as live as in the content. Every string in them
(keys too) goes through the same guard as the text (:mod:`docsan.budget.control_tokens`).

``function.arguments`` is a JSON document in a string: a backslash inserted
into its raw text would be an invalid JSON escape (``"<\\|im_start|>"``) and
the engine would read the call as ``{}``. So a string ``arguments`` that
parses as JSON is guarded in its decoded strings (where ``\\u003c|im_start|>``
is caught too, since that is what the template writes out) and serialised
again only when something was found; one that does not parse is guarded as
plain text.
"""

from __future__ import annotations

import json
from typing import Any

from docsan.budget.control_tokens import Action, Guard, neutralise_with

# The keys a message's text sits under: the stages clean those.
TEXT_KEYS = frozenset({"role", "content"})
ARGUMENTS = "arguments"


def neutralise_json(
    value: Any, guard: Guard, action: Action = "escape", key: str | None = None
) -> tuple[Any, list[str]]:
    """``value`` with control-token spellings neutralised in every string inside it (keys too), and the tokens found.

    ``value`` itself is returned (the same object) when nothing was found, so
    an untouched message keeps its identity and its bytes.
    """
    if isinstance(value, str):
        return _arguments(value, guard, action) if key == ARGUMENTS else neutralise_with(value, guard, action)
    if isinstance(value, list):
        items = [neutralise_json(v, guard, action) for v in value]
        found = [t for _, f in items for t in f]
        return ([v for v, _ in items] if found else value), found
    if isinstance(value, dict):
        found = []
        out = {}
        for k, v in value.items():
            new_key, f1 = neutralise_with(k, guard, action) if isinstance(k, str) else (k, [])
            new_value, f2 = neutralise_json(v, guard, action, k if isinstance(k, str) else None)
            out[new_key] = new_value
            found += f1 + f2
        return (out if found else value), found
    return value, []


def _arguments(text: str, guard: Guard, action: Action) -> tuple[str, list[str]]:
    """A tool call's ``arguments``: guarded as the JSON it is, so it stays valid JSON."""
    try:
        decoded = json.loads(text)
    except ValueError:
        return neutralise_with(text, guard, action)
    clean, found = neutralise_json(decoded, guard, action)
    return (json.dumps(clean, ensure_ascii=False) if found else text), found


def neutralise_message_fields(
    message: dict[str, Any], guard: Guard, action: Action = "escape"
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``message`` with every string outside its role and content neutralised; ``(key, token)`` for each find."""
    found: list[tuple[str, str]] = []
    changed: dict[str, Any] = {}
    for key, value in message.items():
        if key in TEXT_KEYS:
            continue
        new, hits = neutralise_json(value, guard, action, key)
        if hits:
            changed[key] = new
            found += [(key, t) for t in hits]
    return ({**message, **changed} if changed else message), found
