"""Neutralise text that would encode as the served model's control tokens.

vLLM encodes a prompt with the model's tokenizer, which matches every added
token literally anywhere in the text: a pasted ``<｜end▁of▁sentence｜>`` or
``<｜User｜>`` in a document becomes the real control token and can end the
turn or open a fake one. No anchor tool guards against this.

The guard finds every added token of the tokenizer in one left-to-right pass
(one regex of the escaped literals arranged as a trie, compiled once per
tokenizer; leftmost-longest, as the tokenizer matches them) and either

- ``escape`` (default): inserts a backslash after the token's first
  character (``<\\｜User｜>``); the text stays readable and visibly escaped,
  and encodes as ordinary tokens. Each escaped form is checked by encoding
  it when the guard is built; a zero-width character would not do, the
  normalize stage strips those;
- ``remove``: deletes the token string.

The ``special_tokens`` stage (:mod:`docsan.stages.special_tokens`) applies
it to every block and table cell and reports each occurrence as a Change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal

import regex

from docsan.budget.tokenizer import Tokenizer

Action = Literal["escape", "remove"]
ESCAPE = "\\"


@dataclass(frozen=True, slots=True)
class Guard:
    """The compiled matcher and the verified escaped form of each control token of one tokenizer."""

    pattern: regex.Pattern[str] | None
    escaped: dict[str, str]


def _escape_token(token: str, tokenizer: Tokenizer) -> str:
    """A backslash after the first character; after every character if that still hits an added token."""
    for candidate in (token[:1] + ESCAPE + token[1:], ESCAPE.join(token)):
        if not set(tokenizer.encode(candidate)) & tokenizer.special_ids:
            return candidate
    return ""  # nothing plain spells it: removing is the only safe choice


@cache
def guard_for(tokenizer: Tokenizer) -> Guard:
    tokens = sorted(tokenizer.special_tokens, key=lambda t: (-len(t), t))
    if not tokens:
        return Guard(None, {})
    return Guard(regex.compile(_trie_pattern(tokens)), {t: _escape_token(t, tokenizer) for t in tokens})


def _trie_pattern(tokens: list[str]) -> str:
    """One regex for all tokens, shaped as a trie: ``<(?:｜(?:User｜>|Assistant｜>)|think>)``.

    A flat alternation of 1,283 literals retries every one of them at every
    "<" (12 s on 400k characters of "<｜"); in the trie each position
    follows one branch per character, so the scan costs at most the longest
    token's length per position. A greedy optional group after a complete
    token prefers the longer token (leftmost-longest, like the tokenizer).
    """
    end = ""
    root: dict[str, dict] = {}
    for token in tokens:
        node = root
        for ch in token:
            node = node.setdefault(ch, {})
        node[end] = {}

    def emit(node: dict[str, dict]) -> str:
        alts = [regex.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch != end]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if end in node else body

    return emit(root)


def neutralise(text: str, tokenizer: Tokenizer, action: Action = "escape") -> tuple[str, list[str]]:
    """Return ``text`` with every control-token spelling escaped (or removed), and the tokens found.

    Escaping can, in principle, make a new token appear across the edge of
    the replacement; the pass is repeated until nothing matches (at most a
    few rounds), then remaining matches are removed.
    """
    guard = guard_for(tokenizer)
    if guard.pattern is None or not text:
        return text, []
    found: list[str] = []
    for round_ in range(4):
        hits: list[str] = []

        def sub(m: regex.Match[str], hits: list[str] = hits, last: bool = round_ == 3) -> str:
            hits.append(m.group())
            return "" if action == "remove" or last else guard.escaped[m.group()]

        text = guard.pattern.sub(sub, text)
        found.extend(hits)
        if not hits:
            break
    return text, found
