"""Trim a chat history to a token budget.

The incident's clients re-sent ever-growing histories. The rules, in order:

1. System (and developer) messages are always kept.
2. The latest turn (the last user message and whatever follows it) is always kept.
3. Older turns are dropped oldest first; a turn is a user message with the
   assistant/tool messages answering it, so a question never loses its
   answer or the other way round. Messages before the first user message
   form a turn of their own.
4. If what must be kept is still over budget, the largest kept message is
   cut by paragraph (:func:`docsan.budget.truncate.fit_document`), then the
   next largest, and so on; a message is never dropped silently: every
   dropped or cut block is a Change.

What a message costs is given by ``count_messages`` (a list of
``{"role", "content"}`` dicts to a token count). The runner passes the exact
count of its chat template; the default, :func:`count_messages_default`, is
the content tokens plus :data:`MESSAGE_OVERHEAD` per message plus
:data:`REPLY_OVERHEAD` once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from docsan.budget.tokenizer import Tokenizer
from docsan.budget.truncate import fit_document
from docsan.config import BudgetStrategy
from docsan.errors import ConfigError
from docsan.model import Document, DocumentKind, Page, Source
from docsan.render import render_messages
from docsan.report import Change, StageResult
from docsan.text.paragraphs import paragraphs_to_blocks

CountMessages = Callable[[list[dict[str, str]]], int]

STAGE = "budget"
# Per-message template tokens: ChatML spends 5 (<|im_start|>, role, "\n",
# <|im_end|>, "\n"), Llama 3 spends 4, DeepSeek 1-2 (<｜User｜>,
# <｜Assistant｜>, <｜end▁of▁sentence｜>). 5 covers all three.
MESSAGE_OVERHEAD = 5
# The assistant header that opens the answer (ChatML "<|im_start|>assistant\n": 3) plus BOS.
REPLY_OVERHEAD = 4
ALWAYS_KEPT_ROLES = frozenset({"system", "developer"})
DROPPED_TURN = "dropped: oldest turn over budget"


def count_messages_default(tokenizer: Tokenizer, overhead: int = MESSAGE_OVERHEAD) -> CountMessages:
    """Content tokens (exact, per message) + ``overhead`` per message + :data:`REPLY_OVERHEAD`."""

    def count(messages: list[dict[str, str]]) -> int:
        if not messages:
            return 0
        contents = tokenizer.count_batch([m.get("content") or "" for m in messages])
        return sum(contents) + overhead * len(messages) + REPLY_OVERHEAD

    return count


def turns(roles: Sequence[str]) -> tuple[list[int], list[list[int]]]:
    """Split message indices into (always-kept system messages, turns in order)."""
    system = [i for i, r in enumerate(roles) if r in ALWAYS_KEPT_ROLES]
    groups: list[list[int]] = []
    for i, role in enumerate(roles):
        if role in ALWAYS_KEPT_ROLES:
            continue
        if role == "user" or not groups:
            groups.append([])
        groups[-1].append(i)
    return system, groups


@dataclass(slots=True)
class ChatFit:
    """The trimmed history: ``messages`` (kept, in order), their original ``indices``, the changes, the count."""

    messages: list[dict[str, Any]]
    indices: list[int]
    changes: list[Change]
    tokens: int


def fit_chat(
    doc: Document,
    budget: int,
    tokenizer: Tokenizer,
    *,
    count_messages: CountMessages | None = None,
    strategy: BudgetStrategy | None = None,
    query: str | None = None,
) -> StageResult:
    """Trim a chat document (one page per message) so ``count_messages`` of its messages is within budget."""
    if budget < 1:
        raise ConfigError(f"budget: must be at least 1 token, got {budget}")
    count = count_messages or count_messages_default(tokenizer)
    pages = list(doc.pages)
    roles = [p.role or "user" for p in pages]
    system, groups = turns(roles)
    changes: list[Change] = []

    def cost(indices: list[int]) -> int:
        return count(render_messages(replace(doc, pages=tuple(pages[i] for i in indices))))

    # Oldest turns go first; the latest turn always stays. Dropping turns
    # only lowers the cost, so a binary search finds how many must go with
    # log2(turns) counts instead of one count per turn.
    lo, hi = 0, max(len(groups) - 1, 0)
    while lo < hi:
        mid = (lo + hi) // 2
        if cost(sorted(system + [i for t in groups[mid:] for i in t])) <= budget:
            hi = mid
        else:
            lo = mid + 1
    for turn in groups[:lo]:
        for i in turn:
            changes.extend(Change(STAGE, DROPPED_TURN, pages[i].number, b.text) for b in pages[i].blocks if b.text)
    kept_turns = groups[lo:]

    kept = sorted(system + [i for t in kept_turns for i in t])
    total = cost(kept)
    if total > budget:
        total = _cut_largest(doc, pages, kept, budget, tokenizer, cost, changes, strategy, query)
    out = replace(doc, pages=tuple(pages[i] for i in kept))
    stats: dict[str, int | float] = {
        "budget": budget,
        "tokens": total,
        "messages_total": len(doc.pages),
        "messages_kept": len(kept),
        "turns_dropped": len(groups) - len(kept_turns),
    }
    return StageResult(out, changes, stats)


def _cut_largest(
    doc: Document,
    pages: list[Page],
    kept: list[int],
    budget: int,
    tokenizer: Tokenizer,
    cost: Callable[[list[int]], int],
    changes: list[Change],
    strategy: BudgetStrategy | None,
    query: str | None,
) -> int:
    """Cut kept messages by paragraph, largest first, until the history fits; edits ``pages`` in place."""
    sizes = tokenizer.count_batch([pages[i].text for i in kept])
    for _, i in sorted(zip(sizes, kept, strict=True), reverse=True):
        original = pages[i]
        pages[i] = original.with_blocks([])
        room = budget - cost(kept)
        body = Document(pages=(original,), kind=DocumentKind.TEXT, name=doc.name)
        while room >= 1:
            fit = fit_document(body, room, tokenizer, strategy=strategy, query=query)
            pages[i] = fit.document.pages[0]
            over = cost(kept) - budget
            if over <= 0:
                changes.extend(fit.changes)
                return cost(kept)
            room -= over
        # Even its first sentence does not fit: the message stays, empty, and says so.
        pages[i] = original.with_blocks([])
        changes.extend(_emptied(original))
        total = cost(kept)
        if total <= budget:
            return total
    raise ConfigError(
        f"budget {budget} is too small for this chat: the kept messages cost {cost(kept)} tokens with no content"
    )


def _emptied(page: Page) -> list[Change]:
    return [Change(STAGE, "dropped: over budget (message emptied)", page.number, b.text) for b in page.blocks if b.text]


def fit_messages(
    messages: list[dict[str, Any]],
    budget: int,
    tokenizer: Tokenizer,
    *,
    count_messages: CountMessages | None = None,
    strategy: BudgetStrategy | None = None,
    query: str | None = None,
) -> ChatFit:
    """Trim an OpenAI-style ``messages`` list (string contents) to ``budget`` tokens.

    Messages kept whole are returned as given (extra keys included); a cut
    message gets its cut content. ``tokens`` is ``count_messages`` of the result.
    """
    pages = tuple(
        Page(
            number=i, role=str(m["role"]), blocks=tuple(paragraphs_to_blocks(str(m.get("content") or ""), Source.CHAT))
        )
        for i, m in enumerate(messages, start=1)
    )
    doc = Document(pages=pages, kind=DocumentKind.CHAT, name="<messages>")
    result = fit_chat(doc, budget, tokenizer, count_messages=count_messages, strategy=strategy, query=query)
    count = count_messages or count_messages_default(tokenizer)
    rendered = render_messages(result.document)
    # Untouched messages come back exactly as given (extra keys too). Their
    # original content may differ from the paragraph-split form that was
    # counted (runs of blank lines), so the result is counted again; if
    # that is over, every message takes the counted form.
    out, indices = [], []
    for page, msg in zip(result.document.pages, rendered, strict=True):
        original = messages[page.number - 1]
        untouched = page is doc.pages[page.number - 1]
        out.append(original if untouched else {**original, "content": msg["content"]})
        indices.append(page.number - 1)
    tokens = count([_plain(m) for m in out])
    if tokens > budget:
        out = [{**messages[i], "content": m["content"]} for i, m in zip(indices, rendered, strict=True)]
        tokens = count([_plain(m) for m in out])
    return ChatFit(out, indices, result.changes, tokens)


def _plain(message: dict[str, Any]) -> dict[str, str]:
    return {"role": str(message["role"]), "content": str(message.get("content") or "")}
