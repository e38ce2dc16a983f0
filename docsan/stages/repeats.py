"""Collapse exact repeats: characters, words, phrases, lines, and over-printed ("fake bold") text.

The incident's fix was ``re.sub(r"(.+?)\\1{3,}", r"\\1", text)``, which backtracks
quadratically or worse on text without line breaks (100k characters: more than
two minutes). This stage finds every maximal tandem repeat with
:func:`docsan.text.runs.find_runs` (vectorised, O(n log max_period)),
decides per run whether it is noise or legitimate text, and deletes all but one
copy. Only exact copies are ever deleted, and each deletion is reported.

What counts (each threshold is an option; the defaults are explained there):

* **phrases, words, characters** inside a line: at least ``min_copies`` copies
  ("项目经验项目经验项目经验" → "项目经验"), the unit must contain a letter
  (digits, leaders and rules are data or layout: "100000", "........", "——"),
  the run must not start or end inside a Latin word ("0xFFFFFFFF"), and it
  must be at least ``min_run_width`` columns wide ("#FAFAFA", "hahaha" stay).
  A single CJK character (or emoji) repeated ``min_cjk_char_copies`` times
  keeps two copies: reduplication ("哈哈", "谢谢") is grammatical Chinese.
* **lines** (copies separated by line breaks) in a PDF block are collapsed
  only when the block shows over-printing: every non-blank line of it is part
  of a repeated-line run, and after collapsing the block is no taller and no
  wider than its remaining lines need (:func:`_overprinted`). PDFs draw fake
  bold by printing the same line 2–4 times at the same spot; a table column
  that repeats a value ("06/30/2015" in consecutive rows) is as tall as its
  rows, a table row as wide as its cells, and both are left alone. Text
  without geometry (plain text, chat) uses the phrase rules above.
* **blocks** printed on top of each other (same text, same box) keep one copy.

CJK line breaks between two CJK characters are layout (the script has no
spaces), so runs are searched in a view with those breaks removed: a wrapped
"项目经验项目经…\\n验项目经验…" is still one run.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import ClassVar

import numpy as np
import regex
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.model import BBox, Block, BlockKind, ChangeKind, Document, Page
from docsan.report import Change, ChangeCode, StageResult
from docsan.text.chardata import CJK, display_width, is_separator, is_wide, is_word_char
from docsan.text.runs import Run, RunFilter, find_runs

# A single newline between two CJK characters: a soft wrap. One character of
# look-around on each side, no quantifiers: linear.
_CJK_WRAP = regex.compile(rf"(?<=[{CJK}])\n(?=[{CJK}])")
_SENTINEL = "\x00"

OVERPRINTED_BLOCK = ChangeCode(
    "repeats.overprinted_block", ChangeKind.REMOVED, "a block drawn again on top of itself (same text, same box)"
)
FAKE_BOLD = ChangeCode(
    "repeats.fake_bold", ChangeKind.REMOVED, "copies of a line printed on top of each other (fake bold)"
)
# One per scale of an exact repeat inside text; text is the run, replacement what is left of it.
SCALES = {
    scale: ChangeCode(f"repeats.{scale}", ChangeKind.REMOVED, f"copies of a repeated {scale} in a row")
    for scale in ("line", "phrase", "word", "character")
}


@dataclass(slots=True)
class _Views:
    """All eligible blocks' views concatenated, with the maps back to each block's text."""

    keys: list[tuple[int, int]]
    text: str  # views joined by _SENTINEL
    codes: np.ndarray
    owner: np.ndarray  # view position -> index into keys (-1 at sentinels)
    orig: np.ndarray  # view position -> offset in that block's original text
    nl_prefix: np.ndarray  # newlines in the view before each position
    wrap_prefix: np.ndarray  # removed CJK wraps before each position (counted at the next char)

    def newlines(self, start: int, stop: int) -> int:
        """Line breaks in the original text between view positions ``start`` and ``stop``."""
        return int(
            self.nl_prefix[stop] - self.nl_prefix[start] + self.wrap_prefix[stop + 1] - self.wrap_prefix[start + 1]
        )


@dataclass(slots=True)
class _Collapse:
    run: Run
    copies: int
    keep: int  # copies left in place
    scale: str
    needs_overprint: bool
    removed: int = field(init=False)

    def __post_init__(self) -> None:
        self.removed = (self.copies - self.keep) * self.run.period


def _batches(texts: dict[tuple[int, int], str], size: int) -> list[dict[tuple[int, int], str]]:
    """``texts`` cut, in order, into groups of whole blocks of about ``size`` characters (a longer block alone)."""
    out: list[dict[tuple[int, int], str]] = [{}]
    chars = 0
    for key, text in texts.items():
        if out[-1] and chars + len(text) > size:
            out.append({})
            chars = 0
        out[-1][key] = text
        chars += len(text)
    return out


def _build_views(texts: dict[tuple[int, int], str]) -> _Views:
    """One array for all blocks, built with a few whole-array operations (documents have thousands of blocks)."""
    keys = list(texts)
    parts: list[str] = []
    wrapped: list[tuple[int, np.ndarray]] = []  # (block index, removed newline offsets) for blocks with soft wraps
    for i, key in enumerate(keys):
        text = texts[key]
        # No CJK character is ASCII: most blocks need no search for soft wraps.
        removed = [] if text.isascii() else [m.start() for m in _CJK_WRAP.finditer(text)]
        if removed:
            wrapped.append((i, np.array(removed, dtype=np.int64)))
            text = _CJK_WRAP.sub("", text)
        parts.append(text)
    joined = _SENTINEL.join(parts) + _SENTINEL
    lengths = np.array([len(v) + 1 for v in parts], dtype=np.int64)  # each view and its sentinel
    bases = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(parts), dtype=np.int64), lengths)
    orig = np.arange(total, dtype=np.int64) - np.repeat(bases, lengths)
    sentinels = bases + lengths - 1
    owner[sentinels] = -1
    orig[sentinels] = -1
    wraps = np.zeros(total + 1, dtype=np.int64)
    for i, removed in wrapped:
        # view position j of this block sits at original offset j + (removed newlines before it)
        view_pos = removed - np.arange(removed.size)  # where each removed newline would have been
        base, n = int(bases[i]), int(lengths[i]) - 1
        orig[base : base + n] += np.searchsorted(view_pos, np.arange(n), side="right")
        wraps[base + view_pos] += 1
    # surrogatepass: a lone surrogate (JSON "\ud83d") is a code point like any other here
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    codes[sentinels] = -1 - np.arange(sentinels.size)  # unique: no run crosses a block boundary
    nl_prefix = np.concatenate(([0], np.cumsum(codes == 10)))
    wrap_prefix = np.concatenate(([0], np.cumsum(wraps[:total])))
    return _Views(keys, joined, codes, owner, orig, nl_prefix, wrap_prefix)


def _est_width_em(line: str) -> float:
    """Rough printed width of a line in ems: CJK is square, Latin glyphs average ~0.6 em."""
    return sum(1.0 if is_wide(c) else 0.6 for c in line.strip())


# Narrow glyphs: about a quarter em in proportional fonts.
_NARROW = frozenset(" .,;:'|!il")


def _min_width_em(line: str) -> float:
    """The least a line can be wide in ems: CJK 0.9, narrow glyphs 0.25, any other Latin glyph 0.4.

    A lower bound over fonts (condensed Latin averages about 0.4 em), so that
    ``copies`` side-by-side copies are at least ``copies`` times this wide.
    """
    return sum(0.9 if is_wide(c) else 0.25 if c in _NARROW else 0.4 for c in line.strip())


def _overprinted(block: Block, text: str, line_runs: list[_Collapse], collapsed: str, views: _Views) -> bool:
    """Were the repeated lines of this block drawn on top of each other (fake bold)?

    Coverage is needed: every non-blank line of the block takes part in a
    repeated-line run; fake bold repeats every line, while a table row or
    column that repeats one value has other lines too. Then either of:

    * seams: two or more runs with the same number of copies, each glued to
      the next on one line ("2011\n2011\n2011 年年度报告\n年年度报告…"): the
      extractor interleaving over-printed copies, which tables do not produce;
    * geometry: the block's box fits the collapsed text alone, no taller than
      its remaining lines and no wider than its widest line; a column of equal
      values is as tall as all its copies, a row of them as wide. (Blank lines
      that an earlier stage removed still count in the box: hence the seams.)
      "No wider" is judged two ways: against the line's usual width, or, for
      fonts wider than usual (a CJK font's Latin glyphs are up to 1 em), as
      narrower than the copies laid side by side could be in any font: four
      copies of a heading in a one-line box that holds one copy are drawn on
      top of each other.
    """
    assert block.bbox is not None and block.font_size
    spans = sorted((int(views.orig[c.run.start]), int(views.orig[c.run.end - 1]) + 1) for c in line_runs)
    pos = 0
    for line in text.split("\n"):
        lo, hi = pos, pos + len(line)
        pos = hi + 1
        if line.strip() and not any(a < hi and lo < b for a, b in spans):
            return False
    same_copies = len(line_runs) >= 2 and len({c.copies for c in line_runs}) == 1
    if same_copies and all("\n" not in text[a[1] : b[0]] for a, b in itertools.pairwise(spans)):
        return True
    lines = collapsed.split("\n")
    fs, bbox = block.font_size, block.bbox
    if bbox.height > 1.5 * fs * len(lines):
        return False
    if bbox.width <= 1.5 * fs * max(_est_width_em(line) for line in lines):
        return True
    copies = min(c.copies for c in line_runs)
    return bbox.width < copies * fs * max(_min_width_em(line) for line in lines)


def _iou(a: BBox, b: BBox) -> float:
    ix = max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0))
    iy = max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))
    inter = ix * iy
    union = a.width * a.height + b.width * b.height - inter
    return inter / union if union > 0 else float(a == b)


def _has_geometry(block: Block) -> bool:
    return block.bbox is not None and bool(block.font_size)


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True)
class Repeats:
    """Collapse runs of exact repeats to one copy (see the module docstring for the rules)."""

    name: ClassVar[str] = "repeats"

    # Two copies are common in legitimate text ("bye bye", "very very", "看看",
    # "天天", "2020 2020" in a table row); three or more in a row almost only
    # come from extraction noise or pasted spam.
    min_copies: int = Field(3, ge=2)
    # A single CJK character three times ("嘻嘻嘻", "哈哈哈") is ordinary
    # expressive writing; four or more is a flood. Such runs keep two copies,
    # because reduplication ("哈哈", "谢谢") is how the word is written.
    min_cjk_char_copies: int = Field(4, ge=3)
    # Runs narrower than this (CJK counts 2 columns per character) stay: they
    # cost a token or two and short runs are often data ("#FAFAFA", "AAA").
    min_run_width: int = Field(8, ge=1)
    # Longest repeated unit searched, in characters. 8192 covers a long
    # paragraph pasted several times without line breaks; each doubling adds
    # one linear pass.
    max_period: int = Field(8192, ge=1, le=1 << 20)
    # Collapse lines drawn on top of each other (fake bold) when the geometry
    # proves it; off leaves repeated lines in PDFs alone.
    overprint: bool = True
    # Collapsing can expose a new run ("ab ab ab ab ab ab" inside a repeated
    # line); passes repeat until nothing changes, at most this many times.
    max_passes: int = Field(8, ge=1)
    # Blocks are searched in batches of about this many characters: the search's working arrays
    # take ~80 bytes per character, so one view of a 5,000-page PDF (8 M characters) held 650 MB.
    # No run crosses a block, so batching changes nothing but the peak memory.
    batch_chars: int = Field(250_000, ge=1_000)

    def __call__(self, doc: Document) -> StageResult:
        changes: list[Change] = []
        stats: dict[str, int | float] = defaultdict(int)
        pages = [list(p.blocks) for p in doc.pages]
        if self.overprint:
            for i, page in enumerate(doc.pages):
                pages[i] = self._drop_overprinted_blocks(page, changes, stats)
        texts = {
            (i, j): b.text
            for i, blocks in enumerate(pages)
            for j, b in enumerate(blocks)
            if b.kind is not BlockKind.TABLE and len(b.text) >= 2
        }
        pending = dict(texts)
        for _ in range(self.max_passes):
            if not pending:
                break
            stats["passes"] += 1
            new: dict[tuple[int, int], str] = {}
            for batch in _batches(pending, self.batch_chars):
                new.update(self._one_pass(batch, pages, doc, changes, stats))
            texts.update(new)
            pending = new
        new_pages = []
        for i, page in enumerate(doc.pages):
            blocks = [
                b.with_text(texts[(i, j)]) if (i, j) in texts and texts[(i, j)] != b.text else b
                for j, b in enumerate(pages[i])
            ]
            same = len(blocks) == len(page.blocks) and all(x is y for x, y in zip(blocks, page.blocks, strict=True))
            new_pages.append(page if same else page.with_blocks(blocks))
        return StageResult(dc_replace(doc, pages=tuple(new_pages)), changes, dict(stats))

    def _drop_overprinted_blocks(self, page: Page, changes: list[Change], stats: dict) -> list[Block]:
        kept: list[Block] = []
        copies = 1
        for block in page.blocks:
            prev = kept[-1] if kept else None
            if (
                prev is not None
                and block.kind is not BlockKind.TABLE
                and prev.kind is block.kind
                and block.bbox is not None
                and prev.bbox is not None
                and block.text.strip()
                and block.text.strip() == prev.text.strip()
                and _iou(block.bbox, prev.bbox) >= 0.8
            ):
                copies += 1
                reason = f"overprinted block (drawn {copies}x)"
                changes.append(OVERPRINTED_BLOCK.change(reason, page.number, block.text, duplicate_of=prev.text))
                stats["blocks_dropped"] += 1
                stats["chars_removed"] += len(block.text)
                continue
            copies = 1
            kept.append(block)
        return kept

    def _one_pass(
        self,
        texts: dict[tuple[int, int], str],
        pages: list[list[Block]],
        doc: Document,
        changes: list[Change],
        stats: dict,
    ) -> dict[tuple[int, int], str]:
        views = _build_views(texts)
        runs = find_runs(views.codes, max_period=self.max_period, keep=self._prefilter(views))
        per_block: dict[int, list[_Collapse]] = defaultdict(list)
        for run in runs:
            owner = int(views.owner[run.start])
            key = views.keys[owner]
            collapse = self._judge(run, views, _has_geometry(pages[key[0]][key[1]]))
            if collapse is not None:
                per_block[owner].append(collapse)
        out: dict[tuple[int, int], str] = {}
        for owner, found in per_block.items():
            key = views.keys[owner]
            block = pages[key[0]][key[1]]
            chosen = _non_overlapping(found)
            line_runs = [c for c in chosen if c.needs_overprint]
            if line_runs and not _overprinted(block, texts[key], line_runs, _apply(texts[key], chosen, views), views):
                chosen = [c for c in chosen if not c.needs_overprint]
            if not chosen:
                continue
            text = texts[key]
            page_no = doc.pages[key[0]].number
            for c in chosen:
                lo, hi = int(views.orig[c.run.start]), int(views.orig[c.run.end - 1]) + 1
                cut = int(views.orig[c.run.start + c.removed])
                kept = " (kept 2)" if c.keep == 2 else ""
                code = FAKE_BOLD if c.needs_overprint else SCALES[c.scale]
                reason = f"repeated {c.copies}x: {c.scale}{kept}"
                changes.append(code.change(reason, page_no, text[lo:hi], replacement=text[cut:hi]))
                stats[f"collapsed_{code.stat}"] += 1
                stats["chars_removed"] += cut - lo
            out[key] = _apply(text, chosen, views)
        return out

    def _prefilter(self, views: _Views) -> RunFilter:
        """Vectorised first cut, before runs become Python objects: long enough to matter at all."""

        def keep(starts: np.ndarray, ends: np.ndarray, periods: np.ndarray) -> np.ndarray:
            length = ends - starts
            phrase = length >= np.where(periods == 1, min(self.min_copies, 3), self.min_copies * periods - 1)
            unit_nl = views.nl_prefix[starts + periods] - views.nl_prefix[starts]
            unit_nl += views.wrap_prefix[starts + periods + 1] - views.wrap_prefix[starts + 1]
            return phrase | (unit_nl > 0)

        return keep

    def _judge(self, run: Run, views: _Views, geometry: bool) -> _Collapse | None:
        """Apply the rules of the module docstring to one run; None leaves it alone."""
        s, e, p = run.start, run.end, run.period
        vs = views.text
        unit = vs[s : s + p]
        copies = run.length // p
        if p > 1 and run.length % p == p - 1 and is_separator(unit[-1]):
            copies += 1  # "bye bye bye": the last copy lacks only its separator
        if copies < 2 or unit.isspace():
            return None  # blank lines and runs of spaces are layout: the normalize stage's business
        line = views.newlines(s, s + (copies - 1) * p) >= copies - 1
        if line and geometry:
            return _Collapse(run, copies, 1, "line", needs_overprint=True) if self.overprint else None
        if p == 1 and is_wide(unit):
            # ideographs and emoji; full-width punctuation ("。。。", "．．．．" leaders) is layout
            if copies < self.min_cjk_char_copies or not (unit.isalpha() or unicodedata.category(unit) == "So"):
                return None
            return _Collapse(run, copies, 2, "character", needs_overprint=False)
        if copies < self.min_copies or not any(c.isalpha() for c in unit):
            return None
        if run.length < self.min_run_width and display_width(vs[s:e]) < self.min_run_width:
            return None
        end = min(s + copies * p, e)
        if s > 0 and is_word_char(vs[s - 1]) and is_word_char(vs[s]):
            return None
        if end < len(vs) and is_word_char(vs[end - 1]) and is_word_char(vs[end]):
            return None
        scale = "line" if line else "character" if p == 1 else _unit_scale(unit)
        return _Collapse(run, copies, 1, scale, needs_overprint=False)


def _unit_scale(unit: str) -> str:
    core = unit.strip()
    if core and not any(is_separator(c) for c in core) and not any(is_wide(c) for c in core):
        return "word"
    return "phrase"


def _non_overlapping(found: list[_Collapse]) -> list[_Collapse]:
    """Greedy by removed characters: overlapping runs would delete text another run keeps."""
    starts: list[int] = []  # sorted starts of the chosen, pairwise disjoint runs
    ends: list[int] = []
    chosen = []
    for c in sorted(found, key=lambda c: (-c.removed, c.run.start)):
        i = bisect.bisect_left(starts, c.run.start)
        if (i > 0 and ends[i - 1] > c.run.start) or (i < len(starts) and starts[i] < c.run.end):
            continue
        starts.insert(i, c.run.start)
        ends.insert(i, c.run.end)
        chosen.append(c)
    return sorted(chosen, key=lambda c: c.run.start)


def _apply(text: str, chosen: list[_Collapse], views: _Views) -> str:
    """Delete the first (copies - keep) copies of each run from the block's original text."""
    out, pos = [], 0
    for c in chosen:
        lo = int(views.orig[c.run.start])
        cut = int(views.orig[c.run.start + c.removed])
        out.append(text[pos:lo])
        pos = cut
    out.append(text[pos:])
    return "".join(out)
