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

Beside the tokenizer's own tokens, the guard takes the markers of well-known
chat templates (:mod:`docsan.budget.template_markers`: ChatML's
``<|im_start|>``, Llama 3's ``<|eot_id|>``...), which a cleaned document
could meet in another model's template; ``families`` chooses them (all by
default, ``()`` for the tokenizer's own only). Their escapes are checked with
the tokenizer in the same way, and each keeps its family for the report.

The ``special_tokens`` stage (:mod:`docsan.stages.special_tokens`) applies
it to every block and table cell and reports each occurrence as a Change.
The stage is in the default stage list, so every output of ``docsan clean``
is escaped for the default tokenizer (DeepSeek-V4) unless told otherwise
(``--tokenizer``, or ``--keep-control-tokens`` to turn it off). To keep that
cheap, the 6 MB ``tokenizer.json`` is not loaded per run: the token list
and its verified escapes are cached in ``$DOCSAN_HOME/control-tokens/``
(keyed by the file's path, size and modification time), text without any
token's first character is passed over without a regex, and the matcher is
compiled only when such a character appears.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

import regex

from docsan.budget.template_markers import TEMPLATE_MARKERS, markers_of
from docsan.budget.tokenizer import Tokenizer, resolve_tokenizer_file
from docsan.paths import docsan_home

Action = Literal["escape", "remove"]
ESCAPE = "\\"
DEFAULT_FAMILIES: tuple[str, ...] = tuple(TEMPLATE_MARKERS)


@dataclass(frozen=True, slots=True)
class Guard:
    """The control tokens of one tokenizer with the verified escaped form of each; the matcher on demand."""

    escaped: dict[str, str]
    # The first character of every token: text holding none of them needs no matching at all.
    firsts: frozenset[str]
    # A template marker that is not the tokenizer's own -> its family (``chatml``...), for the report.
    families: dict[str, str]

    @property
    def pattern(self) -> regex.Pattern[str] | None:
        return _compiled(tuple(self.escaped)) if self.escaped else None

    def may_match(self, text: str) -> bool:
        return any(ch in text for ch in self.firsts)


def _guard(own: dict[str, str], markers: dict[str, str], families: tuple[str, ...]) -> Guard:
    """The guard of a tokenizer's verified escapes ``own`` plus the template markers of ``families``."""
    chosen = {m: f for m, f in markers_of(families).items() if m not in own}
    escaped = {**own, **{m: markers[m] for m in chosen}}
    return Guard(escaped, frozenset(t[0] for t in escaped if t), chosen)


@cache
def _compiled(tokens: tuple[str, ...]) -> regex.Pattern[str]:
    return regex.compile(_trie_pattern(sorted(tokens, key=lambda t: (-len(t), t))))


def _escape_token(token: str, tokenizer: Tokenizer) -> str:
    """A backslash after the first character; after every character if that still hits an added token."""
    for candidate in (token[:1] + ESCAPE + token[1:], ESCAPE.join(token)):
        if not set(tokenizer.encode(candidate)) & tokenizer.special_ids:
            return candidate
    return ""  # nothing plain spells it: removing is the only safe choice


def _escapes(tokenizer: Tokenizer) -> tuple[dict[str, str], dict[str, str]]:
    """The verified escapes of the tokenizer's own tokens, and of every table marker it does not have."""
    tokens = sorted(tokenizer.special_tokens, key=lambda t: (-len(t), t))
    own = {t: _escape_token(t, tokenizer) for t in tokens}
    markers = {m: _escape_token(m, tokenizer) for m in markers_of(DEFAULT_FAMILIES) if m not in own}
    return own, markers


@cache
def guard_for(tokenizer: Tokenizer, families: tuple[str, ...] = DEFAULT_FAMILIES) -> Guard:
    return _guard(*_escapes(tokenizer), families)


@cache
def guard_for_spec(spec: str | None, families: tuple[str, ...] = DEFAULT_FAMILIES) -> Guard:
    """The guard of the tokenizer ``spec`` names (None: DeepSeek-V4), from the cache when it is current."""
    file, _ = resolve_tokenizer_file(spec)
    stat = file.stat()
    # The marker table is in the key: editing it must not reuse escapes computed without the new markers.
    table = json.dumps(TEMPLATE_MARKERS, sort_keys=True)
    ident = f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{table}"
    key = hashlib.sha256(ident.encode()).hexdigest()[:24]
    cache_file = docsan_home() / "control-tokens" / f"{key}.json"
    try:
        cached = json.loads(cache_file.read_text(encoding="utf-8"))
        return _guard(cached["tokens"], cached["markers"], families)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    own, markers = _escapes(Tokenizer.load(spec))
    _write_cache(cache_file, {"tokens": own, "markers": markers})
    return _guard(own, markers, families)


def _write_cache(path: Path, escapes: dict[str, dict[str, str]]) -> None:
    # Best effort: an unwritable home only costs the next run the full load.
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(escapes, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


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


def neutralise(
    text: str, tokenizer: Tokenizer, action: Action = "escape", families: tuple[str, ...] = DEFAULT_FAMILIES
) -> tuple[str, list[str]]:
    """Return ``text`` with every control-token spelling escaped (or removed), and the tokens found.

    Escaping can, in principle, make a new token appear across the edge of
    the replacement; the pass is repeated until nothing matches (at most a
    few rounds), then remaining matches are removed.
    """
    return neutralise_with(text, guard_for(tokenizer, families), action)


def neutralise_with(text: str, guard: Guard, action: Action = "escape") -> tuple[str, list[str]]:
    """:func:`neutralise` with a guard already built (see :func:`guard_for_spec`)."""
    if not text or not guard.may_match(text):
        return text, []
    pattern = guard.pattern
    assert pattern is not None  # may_match is False without tokens
    found: list[str] = []
    for round_ in range(4):
        hits: list[str] = []

        def sub(m: regex.Match[str], hits: list[str] = hits, last: bool = round_ == 3) -> str:
            hits.append(m.group())
            return "" if action == "remove" or last else guard.escaped[m.group()]

        text = pattern.sub(sub, text)
        found.extend(hits)
        if not hits:
            break
    return text, found
