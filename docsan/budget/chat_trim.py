"""Trim a chat history to a token budget, keeping what the latest question needs.

The incident's clients re-sent ever-growing histories, and the question in
the latest turn often asks about something said at the start. The rules:

1. System (and developer) messages are always kept, and so is the latest
   turn (the last user message and whatever follows it).
2. Older turns are kept or dropped whole (:mod:`docsan.chat.turns`): a
   question never loses its answer, a tool call never its result, and the
   role order stays one the input already had.
3. Which older turns stay is the strategy's choice:

   - ``query`` (the default): the turns that matter most to the query,
     which is the latest user message unless one is given. A turn's score is
     the BM25 score (:mod:`docsan.budget.rank`) of its best paragraph among
     all the paragraphs of the older turns: the best paragraph, not the
     whole turn, so a long pasted document that holds the asked fact is not
     pushed down by its own length. Turns are taken best first (equal
     scores, and turns sharing no term with the query: newest first) while
     they fit, then put back in their order. The best turn that does not fit
     whole is cut to the room left (its most relevant paragraphs, every
     message keeping some text), once.
   - ``recent``: the newest turns; the oldest are dropped first.

4. If what must be kept is still over budget, the text of its largest
   messages is cut to a common size, the largest that fits ("water
   filling"; by paragraph with :func:`docsan.budget.truncate.fit_document`,
   the query's most relevant paragraphs first), so every message keeps some
   text; a budget too small even for that is a :class:`ConfigError`.
5. Nothing goes silently: every dropped message is a Change whose reason
   gives its turn's position and score, every cut a Change from the cut.

What a set of messages costs is ``count_messages`` (a list of OpenAI
message dicts to a token count). The runner and the gateway pass the exact
count of the served model's chat template; the default,
:func:`count_messages_default`, is the text tokens plus :data:`MESSAGE_OVERHEAD`
per message plus :data:`REPLY_OVERHEAD` once. Choosing turns uses per-turn
estimates of that count (one ``encode_batch``); the result is counted
exactly, and while it is over, the lowest-ranked turn taken goes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from docsan.budget.rank import bm25_scores
from docsan.budget.tokenizer import Tokenizer
from docsan.budget.truncate import fit_document
from docsan.chat.shape import message_page, message_text, render_messages, text_slots, with_texts
from docsan.chat.turns import turns
from docsan.config.token_budget import check_budget
from docsan.errors import ConfigError
from docsan.model import ChangeKind, Document, DocumentKind
from docsan.render import render_text
from docsan.report import Change, ChangeCode, StageResult
from docsan.text.batchcache import MIB, BatchCache, text_bytes
from docsan.text.paragraphs import split_paragraphs

CountMessages = Callable[[list[dict[str, Any]]], int]
ChatStrategy = Literal["query", "recent"]

# Per-message template tokens: ChatML spends 5 (<|im_start|>, role, "\n",
# <|im_end|>, "\n"), Llama 3 spends 4, DeepSeek 1-2 (<｜User｜>,
# <｜Assistant｜>, <｜end▁of▁sentence｜>). 5 covers all three.
MESSAGE_OVERHEAD = 5
# The assistant header that opens the answer (ChatML "<|im_start|>assistant\n": 3) plus BOS.
REPLY_OVERHEAD = 4
DROPPED_TURN = ChangeCode(
    "budget.dropped_turn",
    ChangeKind.REMOVED,
    "an older chat turn (a question, its answer, its tool calls) left out to fit; the reason gives its position "
    "and score",
)
DROPPED_TURN_REASON = "dropped: turn {turn} of {turns} over budget ({strategy}, score {score:.2f})"
# Water filling converges in one or two rounds (the cap estimate is off by
# the template's seams only); the bound keeps a pathological counter finite.
_MAX_ROUNDS = 32
# A history is counted whole (with the caller's template count) only when the
# per-message estimate is within this factor of the budget; beyond it, it is over.
_COUNT_WHOLE_BELOW = 1.25


# Token counts per (tokenizer, text), kept across calls (docsan.text.batchcache says why). 32,768 entries held
# 25 MiB on the replay traffic (docs/benchmarks.md, "The gateway's memory and the collector settings"); the byte
# bound keeps long messages from taking more. An entry is about its text (the count is a small int).
_TOKENS: BatchCache[tuple[str, str], int] = BatchCache(32768, 16 * MIB, lambda key, count: text_bytes(key[1]))


def text_tokens(tokenizer: Tokenizer, texts: list[str]) -> list[int]:
    """``tokenizer.count_batch(texts)``, texts counted before taken from a bounded cache."""
    return _TOKENS.get_many(
        [(tokenizer.name, t) for t in texts], lambda keys: tokenizer.count_batch([t for _, t in keys])
    )


def countable_text(message: dict[str, Any]) -> str:
    """What of a message reaches the prompt as text: its text, its name, its tool calls as JSON."""
    parts = [message_text(message)]
    if message.get("name"):
        parts.append(str(message["name"]))
    if message.get("tool_calls"):
        parts.append(json.dumps(message["tool_calls"], ensure_ascii=False, sort_keys=True))
    return "\n".join(p for p in parts if p)


def count_messages_default(tokenizer: Tokenizer, overhead: int = MESSAGE_OVERHEAD) -> CountMessages:
    """Text tokens (exact, per message; tool calls as JSON) + ``overhead`` per message + :data:`REPLY_OVERHEAD`."""

    def count(messages: list[dict[str, Any]]) -> int:
        if not messages:
            return 0
        contents = text_tokens(tokenizer, [countable_text(m) for m in messages])
        return sum(contents) + overhead * len(messages) + REPLY_OVERHEAD

    return count


def resolve_query(strategy: ChatStrategy | None, query: str | None, messages: Sequence[dict[str, Any]]) -> str | None:
    """The query the ``query`` strategy ranks by (None: rank by recency): the given one, else the latest user text."""
    if (strategy or "query") != "query":
        return None
    if query and query.strip():
        return query
    for m in reversed(messages):
        if m.get("role") == "user":
            return message_text(m) or None
    return None


@dataclass(slots=True)
class ChatFit:
    """The trimmed history.

    ``messages``: the kept messages in order, each the given dict when kept
    whole, a copy with its text cut otherwise; ``indices``: their positions in
    the given list; ``changes``: what was dropped or cut (``page`` is the
    1-based position of the message); ``tokens``: ``count_messages`` of
    ``messages``; ``stats``: counters for the report.
    """

    messages: list[dict[str, Any]]
    indices: list[int]
    changes: list[Change]
    tokens: int
    stats: dict[str, int | float] = field(default_factory=dict)


@dataclass(slots=True)
class _Trim:
    """One trimming: the messages, their text token counts (one ``encode_batch``), the counter."""

    messages: list[dict[str, Any]]
    budget: int
    tokenizer: Tokenizer
    count: CountMessages | None  # None: the default count, computed from ``sizes``
    query: str | None
    sizes: list[int] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    # The last exact count, by (indices, cut copies): selection and the final count often ask twice.
    _memo: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.sizes = text_tokens(self.tokenizer, [countable_text(m) for m in self.messages])

    def estimate(self, indices: Sequence[int]) -> int:
        """The default count of these messages (exact for it; an estimate of a template's count)."""
        if not indices:
            return 0
        return sum(self.sizes[i] for i in indices) + MESSAGE_OVERHEAD * len(indices) + REPLY_OVERHEAD

    def cost(self, indices: Sequence[int], replaced: dict[int, dict[str, Any]] | None = None) -> int:
        """The count of the messages at ``indices`` (in order), cut copies from ``replaced`` in their place."""
        replaced = replaced or {}
        if self.count is not None:
            key = (tuple(sorted(indices)), tuple(id(replaced[i]) for i in sorted(indices) if i in replaced))
            if key not in self._memo:
                self._memo = {key: self.count([replaced.get(i, self.messages[i]) for i in key[0]])}
            return self._memo[key]
        cut = [i for i in indices if i in replaced]
        recounted = dict(zip(cut, self.tokenizer.count_batch([countable_text(replaced[i]) for i in cut]), strict=True))
        whole = [i for i in indices if i not in replaced]
        return (
            self.estimate(whole)
            + sum(recounted.values())
            + MESSAGE_OVERHEAD * len(cut)
            + (REPLY_OVERHEAD if cut and not whole else 0)
        )

    def cut_to(
        self,
        cut: Sequence[int],
        kept: Sequence[int],
        budget: int,
        replaced: dict[int, dict[str, Any]],
        *,
        by_query: bool,
    ) -> dict[int, dict[str, Any]] | None:
        """Cut the text of messages ``cut`` so ``kept`` (which holds them) costs at most ``budget``.

        Water filling: every text slot of those messages longer than a cap T
        is cut to about T tokens, T the largest that fits. The cap comes from
        the slots' sizes and what the rest costs; the exact count then checks
        it, and an overshoot lowers T by its share. Returns the cut messages,
        or None when not even a few tokens of each fit (no slot is ever cut to nothing). Appends the cuts' changes.
        """
        slots = [(i, part, text) for i in cut for part, text in text_slots(replaced.get(i, self.messages[i])) if text]
        if not slots:
            return None
        sizes = self.tokenizer.count_batch([text for _, _, text in slots])
        fixed = self.cost(kept, replaced) - sum(sizes)
        cap = _water_level(sorted(sizes), budget - fixed)
        for _ in range(_MAX_ROUNDS):
            if cap < 1:
                break
            trial = dict(replaced)
            changes: list[Change] = []
            texts: dict[int, dict[int | None, str]] = {}
            for (i, part, text), size in zip(slots, sizes, strict=True):
                if size > cap:
                    text = self._cut_text(text, cap, i, changes, by_query=by_query)
                texts.setdefault(i, {})[part] = text
            if all(t for by_part in texts.values() for t in by_part.values()):
                for i, by_part in texts.items():
                    trial[i] = with_texts(self.messages[i], by_part)
                over = self.cost(kept, trial) - budget
                if over <= 0:
                    self.changes += changes
                    return trial
            else:
                over = 1
            n_cut = sum(1 for s in sizes if s > cap) or 1
            cap = min(cap - 1, cap - math.ceil(over / n_cut))
        return None

    def _cut_text(self, text: str, cap: int, index: int, changes: list[Change], *, by_query: bool) -> str:
        """``text`` cut by paragraph to ``cap`` tokens: the query's most relevant paragraphs, or head and tail.

        Head and tail when the message is the query itself (the latest user
        message: ranking it by itself says nothing), so a question written
        after a pasted document survives with the document's beginning.
        """
        body = Document(pages=(message_page({"role": "user", "content": text}, index + 1),), kind=DocumentKind.TEXT)
        strategy = "query" if by_query and self.query else "head-tail"
        fit = fit_document(body, cap, self.tokenizer, strategy=strategy, query=self.query)
        changes += fit.changes
        return render_text(fit.document)


def _water_level(sizes: list[int], room: int) -> int:
    """The largest cap T with sum(min(s, T)) <= room, for ascending ``sizes`` (0 when none)."""
    spent = 0
    for k, size in enumerate(sizes):
        left = len(sizes) - k
        if spent + size * left > room:
            return max(0, (room - spent) // left)
        spent += size
    return sizes[-1] if sizes else 0


def _turn_scores(query: str, messages: Sequence[dict[str, Any]], groups: list[list[int]]) -> list[float]:
    """Each turn's score: the BM25 score of its best paragraph among all the paragraphs of these turns."""
    owners: list[int] = []
    texts: list[str] = []
    for t, group in enumerate(groups):
        for i in group:
            for para in split_paragraphs(countable_text(messages[i])):
                owners.append(t)
                texts.append(para)
    best = [0.0] * len(groups)
    for t, score in zip(owners, bm25_scores(query, texts), strict=True):
        best[t] = max(best[t], score)
    return best


def fit_messages(
    messages: Sequence[dict[str, Any]],
    budget: int,
    tokenizer: Tokenizer,
    *,
    count_messages: CountMessages | None = None,
    strategy: ChatStrategy | None = None,
    query: str | None = None,
) -> ChatFit:
    """Trim OpenAI ``messages`` (any shape: parts, tool calls...) so ``count_messages`` of them is within ``budget``.

    ``strategy``: ``"query"`` (default) or ``"recent"``; ``query``: what the
    ``query`` strategy ranks by (default: the latest user message's text).
    Messages kept whole are the given dicts; a cut one is a copy with only
    its text cut. Raises :class:`ConfigError` when the budget cannot hold even
    the system messages and a little of the latest turn.
    """
    check_budget(budget)
    if strategy not in (None, "query", "recent"):
        raise ConfigError(f"budget: unknown chat strategy {strategy!r} (query or recent)")
    msgs = list(messages)
    q = resolve_query(strategy, query, msgs)
    trim = _Trim(msgs, budget, tokenizer, count_messages, q)
    everything = list(range(len(msgs)))
    stats: dict[str, int | float] = {"budget": budget, "messages_total": len(msgs)}
    # A history whose estimate is far over the budget is not counted whole
    # with the template: the selection below is, and it is what is sent.
    if trim.estimate(everything) <= budget * _COUNT_WHOLE_BELOW + 64:
        total = trim.cost(everything)
        if total <= budget:
            stats.update(tokens=total, messages_kept=len(msgs), turns_dropped=0)
            return ChatFit(msgs, everything, [], total, stats)
    name = "query" if q else "recent"
    system, groups = turns([str(m.get("role")) for m in msgs])
    older, latest = (groups[:-1], groups[-1]) if groups else ([], [])
    base = sorted(system + latest)
    scores = _turn_scores(q, msgs, older) if q else [0.0] * len(older)
    taken = _by_score(trim, base, older, scores) if q else _most_recent(trim, base, older)
    kept = sorted(base + [i for t in taken for i in older[t]])
    replaced: dict[int, dict[str, Any]] = {}
    if trim.cost(kept) > budget:
        cut = trim.cut_to(base, kept, budget, replaced, by_query=query is not None)
        if cut is None:
            raise ConfigError(
                f"budget {budget} is too small for this chat: its system messages and latest turn need more "
                "than that even with their text cut to a few tokens each"
            )
        replaced = cut
    elif q:
        replaced = _cut_best_left(trim, kept, older, scores, taken, replaced)
        kept = sorted(set(kept) | {i for i in replaced})
    dropped = [t for t in range(len(older)) if t not in taken and not any(i in replaced for i in older[t])]
    for t in dropped:
        reason = DROPPED_TURN_REASON.format(turn=t + 1, turns=len(groups), strategy=name, score=scores[t])
        trim.changes += [DROPPED_TURN.change(reason, i + 1, countable_text(msgs[i])) for i in older[t]]
    out = [replaced.get(i, msgs[i]) for i in kept]
    tokens = trim.cost(kept, replaced)
    stats.update(
        tokens=tokens,
        messages_kept=len(kept),
        messages_cut=len(replaced),
        turns_dropped=len(dropped),
    )
    return ChatFit(out, kept, sorted(trim.changes, key=lambda c: c.page), tokens, stats)


def _by_score(trim: _Trim, base: list[int], older: list[list[int]], scores: list[float]) -> set[int]:
    """Turns taken best first while their estimates fit; then, while the exact count is over, the worst taken goes."""
    estimates = [trim.estimate(g) - REPLY_OVERHEAD for g in older]
    room = trim.budget - trim.cost(base)
    order = sorted(range(len(older)), key=lambda t: (-scores[t], -t))
    taken: list[int] = []
    for t in order:
        if estimates[t] <= room:
            taken.append(t)
            room -= estimates[t]
    while taken:
        over = trim.cost(base + [i for t in taken for i in older[t]]) - trim.budget
        if over <= 0:
            break
        # The worst taken turns go until their estimates cover the overshoot: one exact count per round.
        freed = 0
        while taken and freed < over:
            freed += estimates[taken.pop()]
    return set(taken)


def _most_recent(trim: _Trim, base: list[int], older: list[list[int]]) -> set[int]:
    """The newest turns that fit: the estimates say how many of the oldest go, the exact count confirms it."""
    room = trim.budget - trim.estimate(base)
    first = len(older)
    while first > 0 and trim.estimate(older[first - 1]) - REPLY_OVERHEAD <= room:
        first -= 1
        room -= trim.estimate(older[first]) - REPLY_OVERHEAD
    while first < len(older) and trim.cost(base + [i for t in older[first:] for i in t]) > trim.budget:
        first += 1
    return set(range(first, len(older)))


def _cut_best_left(
    trim: _Trim,
    kept: list[int],
    older: list[list[int]],
    scores: list[float],
    taken: set[int],
    replaced: dict[int, dict[str, Any]],
) -> dict[int, dict[str, Any]]:
    """The best-scoring turn left out, cut into the room that is left, when some of it fits (else nothing)."""
    left = [t for t in range(len(older)) if t not in taken and scores[t] > 0]
    if not left:
        return replaced
    best = max(left, key=lambda t: (scores[t], t))
    room = trim.budget - trim.cost(kept)
    if room < MESSAGE_OVERHEAD * len(older[best]) * 4:
        return replaced  # no room for even a sentence of each message
    before = len(trim.changes)
    cut = trim.cut_to(older[best], kept + older[best], trim.budget, replaced, by_query=True)
    if cut is None:
        del trim.changes[before:]
        return replaced
    return cut


def fit_chat(
    doc: Document,
    budget: int,
    tokenizer: Tokenizer,
    *,
    count_messages: CountMessages | None = None,
    strategy: ChatStrategy | None = None,
    query: str | None = None,
) -> StageResult:
    """The budget stage on a chat document: :func:`fit_messages` on its messages, in their own shape."""
    messages = render_messages(doc)
    fit = fit_messages(messages, budget, tokenizer, count_messages=count_messages, strategy=strategy, query=query)
    numbers = [p.number for p in doc.pages]
    pages = []
    for i, message in zip(fit.indices, fit.messages, strict=True):
        page = doc.pages[i]
        pages.append(page if message is messages[i] else message_page(message, page.number))
    changes = [replace(c, page=numbers[c.page - 1]) for c in fit.changes]
    return StageResult(doc.with_pages(pages), changes, dict(fit.stats))
