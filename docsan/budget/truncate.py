"""Fit a document into a token budget, by whole paragraphs, counted exactly.

The guarantee: ``tokenizer.count(render_text(result.document)) <= budget``,
where the count is taken on the final joined text, never summed over pieces
(summing is LangChain's bug: BPE merges across a join change the total).

How:

1. The document is split into units (:mod:`docsan.budget.segment`): one
   block each, headings glued to the block after them.
2. Each unit's cost is counted in one ``encode_batch`` call, as
   ``count(unit + "\\n\\n")`` so the join is mostly priced in.
3. Units are taken greedily in the strategy's priority order while they fit.
   The first cuttable unit that does not fit is cut to the space left, at a
   sentence end, or, only when no sentence end fits and more than
   :data:`TOKEN_CUT_MIN_SHARE` of the budget would stay empty, at a token
   boundary (or when nothing else would be kept). Tables and headings are
   never cut.
4. The kept units are put back in document order, rendered, and counted
   exactly. While the count is over (a merge at a join the estimate missed),
   the last unit taken is cut further or dropped: every round removes
   tokens, so the loop ends. Then any slack left is offered to each cut
   unit once, verified the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from docsan.budget.rank import bm25_scores
from docsan.budget.segment import Piece, Unit, rendered_pieces, sentence_ends, units
from docsan.budget.tokenizer import Tokenizer
from docsan.config import BudgetStrategy
from docsan.config.token_budget import check_budget
from docsan.errors import ConfigError
from docsan.model import ChangeKind, Document
from docsan.render import render_text
from docsan.report import Change, ChangeCode, StageResult

Keep = Literal["head", "tail"]

JOINER = "\n\n"  # what render_text puts between blocks
# head-tail gives the beginning two thirds of the budget: titles, summaries
# and definitions come first in reports and contracts; the last third keeps
# the conclusion, signature block or latest entries. Head space left unused
# flows to the tail.
HEAD_SHARE = 2 / 3
# A token-boundary cut (mid-sentence) is a last resort: made only when no
# sentence end fits and otherwise more than this share of the budget (and
# at least TOKEN_CUT_MIN tokens) would stay empty, or nothing at all would
# be kept. Below that, a few unused tokens are better than a broken
# sentence at the end of the prompt.
TOKEN_CUT_MIN_SHARE = 0.05
TOKEN_CUT_MIN = 8

DROPPED = ChangeCode("budget.dropped", ChangeKind.REMOVED, "a block left out to fit the token budget")
CUT_SENTENCE = ChangeCode(
    "budget.cut_sentence", ChangeKind.REMOVED, "a block cut at a sentence end to fit the budget (replacement: kept)"
)
CUT_TOKEN = ChangeCode(
    "budget.cut_token",
    ChangeKind.REMOVED,
    "a block cut at a token boundary where no sentence end fits (replacement: kept)",
)
_REASONS = {
    DROPPED: "dropped: over budget",
    CUT_SENTENCE: "cut at sentence end: over budget",
    CUT_TOKEN: "cut at token boundary: no sentence end fits",
}


@dataclass(slots=True)
class _Taken:
    """A unit kept in the output; ``body`` is the cut body text, or None when kept whole."""

    unit: Unit
    cost: int
    keep: Keep
    body: str | None = None
    # How the body was cut (CUT_SENTENCE or CUT_TOKEN); None when kept whole.
    cut: ChangeCode | None = None

    @property
    def pieces(self) -> tuple[Piece, ...]:
        """The blocks kept: a tail cut keeps the end of a section, so its headings go."""
        if self.body is not None and self.keep == "tail":
            return (self.unit.body,)
        return self.unit.pieces


# Sentence ends are searched a little past the token bound: an end offset
# includes the spaces after the sentence mark.
_BOUND_SLACK = 16


@dataclass(slots=True)
class _Fitter:
    tokenizer: Tokenizer
    budget: int
    min_token_cut: int
    taken: list[_Taken] = field(default_factory=list)

    def fits(self, text: str, room: int) -> bool:
        return self.tokenizer.count(text + JOINER) <= room

    def cut(self, unit: Unit, room: int, keep: Keep, *, allow_token: bool = True) -> _Taken | None:
        """Cut ``unit``'s body so the unit costs at most ``room``; None when nothing useful fits.

        At the last sentence end that fits; failing that, with
        ``allow_token`` and enough room, at a token boundary.
        """
        if not unit.cuttable or room <= 0:
            return None
        heads = "".join(p.text + JOINER for p in unit.pieces[:-1]) if keep == "head" else ""
        if heads and not self.fits(heads.rstrip(), room):
            return None
        body = unit.body.text
        offsets = self.tokenizer.offsets(body)
        # Text past the room-th token cannot fit, so only sentence ends
        # before it are tried; substrings are built only for the ~log2(n)
        # positions the binary search visits.
        limit = min(room, len(offsets))
        if keep == "head":
            bound = offsets[limit - 1][1] if limit else 0
            positions = [e for e in reversed(sentence_ends(body)) if e <= bound + _BOUND_SLACK]

            def candidate(pos: int) -> str:
                return body[:pos].rstrip()
        else:
            bound = offsets[len(offsets) - limit][0] if limit else len(body)
            positions = [e for e in sentence_ends(body) if e >= bound - _BOUND_SLACK]

            def candidate(pos: int) -> str:
                return body[pos:].lstrip()

        best = _first_fitting(positions, lambda pos: self.fits(heads + candidate(pos), room))
        if best is not None and candidate(best):
            text = candidate(best)
            return _Taken(unit, self.tokenizer.count(heads + text + JOINER), keep, text, CUT_SENTENCE)
        if not allow_token or (room < self.min_token_cut and self.taken):
            return None
        text = self._token_cut(body, offsets, heads, room, keep)
        if text is None:
            return None
        return _Taken(unit, self.tokenizer.count(heads + text + JOINER), keep, text, CUT_TOKEN)

    def _token_cut(self, body: str, offsets: list[tuple[int, int]], heads: str, room: int, keep: Keep) -> str | None:
        """The longest token-aligned prefix (or suffix) of ``body`` that fits; shrinks by the overshoot."""
        k = min(len(offsets), room - self.tokenizer.count(heads))
        while k > 0:
            text = body[: offsets[k - 1][1]].rstrip() if keep == "head" else body[offsets[-k][0] :].lstrip()
            if text.strip():
                over = self.tokenizer.count(heads + text + JOINER) - room
                if over <= 0:
                    return _at_word_end(text, keep)
                k -= over
            else:
                k -= 1
        return None

    def greedy(self, order: Sequence[Unit], costs: Sequence[int], room: int, keep: Keep, *, stop_at_cut: bool) -> int:
        """Take units in ``order`` while they fit; cut the first cuttable one that does not. Returns room left.

        One cut at most: a prompt ending in several sentence fragments reads
        worse than one. With ``stop_at_cut`` (head, head-tail) the walk ends
        at that cut; it always ends at a unit already taken (the tail
        walking back into the head).
        """
        taken_ids = {t.unit.index for t in self.taken}
        cut_made = False
        # Where no sentence end fits, the first such unit, for the last-resort token cut.
        fallback: Unit | None = None
        for unit in order:
            if unit.index in taken_ids:
                break
            cost = costs[unit.index]
            if cost <= room:
                self.taken.append(_Taken(unit, cost, keep))
                room -= cost
                continue
            if not unit.cuttable or cut_made:
                continue  # dropped whole (a table, or one cut already made); smaller units may follow
            piece = self.cut(unit, room, keep, allow_token=stop_at_cut)
            if piece is not None:
                self.taken.append(piece)
                room -= piece.cost
                cut_made = True
            elif fallback is None:
                fallback = unit
            if stop_at_cut:
                break
        if not cut_made and fallback is not None:
            # query order: only after every whole unit had its chance does a
            # token-boundary cut fill what is left.
            piece = self.cut(fallback, room, keep)
            if piece is not None:
                self.taken.append(piece)
                room -= piece.cost
        return room


# A token cut backs off to the last word end within this many characters,
# so English is not cut mid-word; text without spaces (CJK) keeps the token cut.
_WORD_BACKOFF = 40


def _at_word_end(text: str, keep: Keep) -> str:
    """Shorten a token-boundary cut to a word boundary when one is near (a shorter text still fits)."""
    if keep == "head":
        ws = max(text.rfind(" ", len(text) - _WORD_BACKOFF), text.rfind("\n", len(text) - _WORD_BACKOFF))
        return text[:ws].rstrip() if ws > 0 and text[:ws].strip() else text
    found = [i for i in (text.find(" ", 0, _WORD_BACKOFF), text.find("\n", 0, _WORD_BACKOFF)) if i >= 0]
    return text[min(found) :].lstrip() if found and text[min(found) :].strip() else text


def _first_fitting(positions: list[int], fits: Callable[[int], bool]) -> int | None:
    """Binary search for the first position (longest text first) that fits; counts grow with length."""
    lo, hi = 0, len(positions)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(positions[mid]):
            hi = mid
        else:
            lo = mid + 1
    return positions[lo] if lo < len(positions) else None


def resolve_strategy(strategy: BudgetStrategy | None, query: str | None) -> BudgetStrategy:
    """``query`` when a question is given, else ``head``; a query strategy without a question is an error.

    ``recent`` is a chat history's strategy (docsan.budget.chat_trim): a document refuses it.
    """
    if strategy == "recent":
        raise ConfigError("budget: strategy 'recent' is for chat histories; a document takes head, head-tail or query")
    if strategy is None:
        return "query" if query and query.strip() else "head"
    if strategy == "query" and not (query and query.strip()):
        raise ConfigError("budget: strategy 'query' needs a query (--query)")
    return strategy


def fit_document(
    doc: Document,
    budget: int,
    tokenizer: Tokenizer,
    *,
    strategy: BudgetStrategy | None = None,
    query: str | None = None,
    markdown: bool = False,
    table_html: bool = False,
    suffix: str = "",
) -> StageResult:
    """Return ``doc`` cut to at most ``budget`` tokens of rendered text, with a Change per dropped/cut block.

    ``markdown``/``table_html`` must match how the result will be rendered
    (:func:`docsan.render.render_text`); the count is taken on that text
    followed by ``suffix`` (the CLI's final newline, when it writes one).
    ``stats`` holds ``tokens`` (exact count of the result), ``tokens_in``, ``budget``,
    ``fill`` (tokens / budget) and ``units_total/kept/dropped/cut``.
    """
    check_budget(budget)
    chosen = resolve_strategy(strategy, query)
    pieces = rendered_pieces(doc, markdown=markdown, table_html=table_html)
    all_units = units(pieces)
    costs = tokenizer.count_batch([u.text + JOINER for u in all_units])
    # tokens_in: the input's count, exact when it fits, else the sum of its units' counts (each with its join).
    stats: dict[str, int | float] = {"budget": budget, "units_total": len(all_units), "tokens_in": sum(costs)}

    def render(d: Document) -> str:
        return render_text(d, markdown=markdown, table_html=table_html) + suffix

    # Fast path: when the estimate says it may fit, the exact count decides.
    if sum(costs) <= budget * 1.05 + 16:
        total = tokenizer.count(render(doc))
        if total <= budget:
            stats.update(
                tokens_in=total,
                tokens=total,
                units_kept=len(all_units),
                units_dropped=0,
                units_cut=0,
                fill=total / budget,
            )
            return StageResult(doc, [], stats)

    fitter = _Fitter(tokenizer, budget, max(TOKEN_CUT_MIN, int(budget * TOKEN_CUT_MIN_SHARE)))
    if chosen == "head":
        fitter.greedy(all_units, costs, budget, "head", stop_at_cut=True)
    elif chosen == "head-tail":
        left = fitter.greedy(all_units, costs, int(budget * HEAD_SHARE), "head", stop_at_cut=True)
        used = int(budget * HEAD_SHARE) - left
        fitter.greedy(all_units[::-1], costs, budget - used, "tail", stop_at_cut=True)
    else:
        scores = bm25_scores(query or "", [u.text for u in all_units])
        order = sorted(all_units, key=lambda u: (-scores[u.index], u.index))
        fitter.greedy(order, costs, budget, "head", stop_at_cut=False)

    out, tokens = _verify(doc, fitter, render)
    out, tokens = _fill_slack(doc, fitter, render, out, tokens)
    changes = _changes(all_units, fitter.taken)
    stats.update(
        tokens=tokens,
        units_kept=len(fitter.taken),
        units_dropped=len(all_units) - len(fitter.taken),
        units_cut=sum(1 for t in fitter.taken if t.body is not None),
        fill=round(tokens / budget, 4),
    )
    return StageResult(out, changes, stats)


def _verify(doc: Document, fitter: _Fitter, render: Callable[[Document], str]) -> tuple[Document, int]:
    """Count the final joined text exactly; while over, shrink or drop the last unit taken."""
    while True:
        out = _build(doc, fitter.taken)
        tokens = fitter.tokenizer.count(render(out))
        if tokens <= fitter.budget or not fitter.taken:
            return out, tokens
        last = fitter.taken.pop()
        smaller = fitter.cut(last.unit, last.cost - (tokens - fitter.budget), last.keep)
        if smaller is not None and smaller.cost < last.cost:
            fitter.taken.append(smaller)


def _fill_slack(
    doc: Document, fitter: _Fitter, render: Callable[[Document], str], out: Document, tokens: int
) -> tuple[Document, int]:
    """Offer the unused tokens to each cut unit once (estimates are pessimistic at joins)."""
    for k, old in enumerate(fitter.taken):
        slack = fitter.budget - tokens
        if slack <= 0:
            break
        if old.body is None:
            continue
        bigger = fitter.cut(old.unit, old.cost + slack, old.keep)
        if bigger is None or bigger.body is None or len(bigger.body) <= len(old.body):
            continue
        fitter.taken[k] = bigger
        trial = _build(doc, fitter.taken)
        n = fitter.tokenizer.count(render(trial))
        if n <= fitter.budget:
            out, tokens = trial, n
        else:
            fitter.taken[k] = old
    return out, tokens


def _build(doc: Document, taken: list[_Taken]) -> Document:
    """The document with only the taken blocks (cut bodies replaced); blank blocks stay."""
    kept: dict[tuple[int, int], str | None] = {}
    for t in taken:
        for p in t.pieces:
            kept[(p.page, p.block)] = t.body if p is t.unit.body else None
    pages = []
    for pi, page in enumerate(doc.pages):
        blocks = []
        for bi, block in enumerate(page.blocks):
            key = (pi, bi)
            if key in kept:
                text = kept[key]
                blocks.append(block if text is None else block.with_text(text))
            elif not block.text.strip():
                blocks.append(block)  # never rendered, so never counted: left for later stages
        pages.append(page.with_blocks(blocks))
    return replace(doc, pages=tuple(pages))


def _changes(all_units: list[Unit], taken: list[_Taken]) -> list[Change]:
    """One Change per dropped block and per cut body, in document order."""
    by_index = {t.unit.index: t for t in taken}
    changes = []
    for unit in all_units:
        t = by_index.get(unit.index)
        if t is None:
            changes.extend(_dropped(p) for p in unit.pieces)
            continue
        changes.extend(_dropped(p) for p in unit.pieces if p not in t.pieces)
        if t.body is not None:
            p = unit.body
            assert t.cut is not None
            changes.append(t.cut.change(_REASONS[t.cut], p.page_number, p.text, replacement=t.body))
    return changes


def _dropped(piece: Piece) -> Change:
    return DROPPED.change(_REASONS[DROPPED], piece.page_number, piece.text)
