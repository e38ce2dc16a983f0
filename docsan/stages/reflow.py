"""The reflow stage: join the lines a PDF layout broke back into paragraphs.

Within a block, a line break is removed ("joined") when it looks like a wrap:
the line before it is near the block's full width and does not end in a
colon or a table-of-contents page number, and the line after it does not start something of its own (a list
item, an indented or Markdown line).
A short line ends a paragraph; that break becomes a blank line, so that
running the stage again sees two paragraphs and joins nothing more (the
stage is idempotent: after one pass every remaining single line break sits
before a list marker or an indented line, which a second pass keeps too).

Joining never puts a space between two CJK characters; a hyphen at a line end
is dropped only when the document itself spells the word without it; spaces
that OCR puts between two CJK characters are removed everywhere. Tables are
never touched, headings become one line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import ClassVar

import regex
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from docsan.geometry import is_row_of_pieces, merge_line_blocks
from docsan.model import Block, BlockKind, ChangeKind, Document, Source
from docsan.report import Change, ChangeCode, StageResult
from docsan.text.chardata import CJK, CJK_PUNCTUATION, display_width, is_cjk
from docsan.text.paragraphs import SHORT_LINE
from docsan.text.wrapping import (
    FIT_RATIO,
    STARTS_ITEM,
    continues_on_next_page,
    ends_own_line,
    first_word,
    has_fence,
)

REFLOWED = ChangeCode(
    "reflow.reflowed",
    ChangeKind.REWRITTEN,
    "a block's layout line breaks joined into paragraphs (hyphens, CJK spaces; the reason lists what)",
)
ACROSS_PAGES = ChangeCode(
    "reflow.across_pages",
    ChangeKind.REWRITTEN,
    "a paragraph cut by a page break joined back, on the page where it starts (its line breaks reflowed too)",
)
_CJK_PUNCT = regex.compile(rf"[{CJK_PUNCTUATION}]")
# Line-final characters that continue a token across the break (see _joiner).
_GLUE_AFTER = frozenset("–—/")
# Spaces between two CJK characters ("费用 分 类"). The lookarounds are one
# character wide and the run is one class: linear.
_CJK_SPACES = regex.compile(rf"(?<=[{CJK}]) +(?=[{CJK}])")
# "Human: ", "AI: ", "User 2: ": a speaker's turn in a pasted dialogue starts its own line.
# Bounded repeat, one class: linear.
_SPEAKER = regex.compile(r"\p{Lu}[\p{L}\p{N} _-]{0,24}:\s")
# In text files, a line starting like this is a line of its own: a Markdown heading, a control-token
# spelling ("<|im_start|>system" names a turn), a quote.
_OWN_LINE_STARTS = ("#", "<|", "<｜", "<<", "[INST]", ">")
# Sources whose line breaks the author typed (see Reflow.plain_min_wrap_width).
_AUTHOR_LINES = frozenset({Source.PLAIN_TEXT, Source.CHAT})
_HYPHENS = ("-", "\u2010")
# The lowercase fragment that continues a word broken at a line end.
_LOWER_START = regex.compile(r"\p{Ll}+")
_WORD = regex.compile(r"\p{L}+")
# Starts only at a word's first letter and takes the letters possessively:
# a plain "\p{L}+-\p{L}+" retries from every letter of a long word that is
# not followed by a hyphen, which is quadratic.
_HYPHENATED = regex.compile(r"(?<!\p{L})\p{L}++[-\u2010]\p{L}+")


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Reflow:
    """Join wrapped lines into paragraphs; de-hyphenate; remove OCR spaces between CJK characters."""

    name: ClassVar[str] = "reflow"

    # A line break is deliberate (a paragraph end, a heading, a label) when
    # the next line's first word would have fitted on the line: line width +
    # space + word width at most this fraction of the block's longest line.
    # Below 1 because widths are counted in characters while fonts are
    # proportional: a line of "m"s holds fewer characters than a line of
    # "i"s, so "fits" must fit with room to spare.
    fit_ratio: float = Field(FIT_RATIO, gt=0, le=1)
    # A block whose longest line is narrower than this (display columns, a
    # CJK character counting two) is a list of short lines (names, an
    # address, a form) and not wrapped prose: its breaks are kept.
    min_wrap_width: int = Field(SHORT_LINE, ge=1)
    # The same for text files and chat, whose line breaks are the author's unless the text was
    # hard-wrapped, at 60-80 columns by every tool that does it: a poem, an address, a dialogue
    # ("Human: ... / AI: ...") has shorter lines, and joining them changes what it says.
    plain_min_wrap_width: int = Field(60, ge=1)
    # Sources whose line breaks are layout, not the author's. Plain text and
    # chat are included because uploads are often hard-wrapped; indentation,
    # list markers and code fences protect their real structure.
    join_sources: tuple[Source, ...] = (Source.TEXT_LAYER, Source.OCR, Source.PLAIN_TEXT, Source.CHAT)
    # Put back together paragraphs whose lines the PDF stored as separate
    # blocks, one line each (see docsan.geometry.merge_line_blocks); only geometry decides.
    merge_line_blocks: bool = True
    # Drop a line-end hyphen when the document spells the joined word
    # without one elsewhere ("pre-\nprocessing" + "preprocessing" seen).
    dehyphenate: bool = True
    # Remove spaces between two CJK characters: OCR and some PDF text
    # layers space every character ("费用 分 类"); Chinese and Japanese never
    # separate words with spaces. Spaces next to Latin letters or digits are
    # left as they are.
    remove_cjk_spaces: bool = True
    # Join a paragraph that a page break cut in two (see continues_on_next_page):
    # once the furniture stage has removed the running head and page number
    # between them, the halves are the last block of one page and the first
    # of the next.
    join_pages: bool = True

    def __call__(self, doc: Document) -> StageResult:
        vocab = _Vocabulary(doc) if self.dehyphenate else None
        stats: defaultdict[str, int] = defaultdict(int)
        changes: list[Change] = []
        page_groups = [
            merge_line_blocks(page.blocks) if self.merge_line_blocks else [(b, (b,)) for b in page.blocks]
            for page in doc.pages
        ]
        heads = self._join_pages(page_groups) if self.join_pages and not doc.is_chat else {}
        # Every output block: [page index, block, its source blocks, text, counts, page breaks crossed].
        out: list[list] = []
        where: dict[tuple[int, int], int] = {}  # (page index, group index) -> index into out
        for i, (page, groups) in enumerate(zip(doc.pages, page_groups, strict=True)):
            if doc.is_chat and self.dehyphenate:
                # A message is reflowed on its own words: what a later message
                # says must not change how an earlier one reads, or a growing
                # history would lose the engine's prefix cache at every turn.
                vocab = _Vocabulary(doc.with_pages([page]))
            for g, (block, sources) in enumerate(groups):
                counts: defaultdict[str, int] = defaultdict(int)
                if len(sources) > 1:
                    counts["blocks_merged"] += len(sources) - 1
                # Each half is reflowed on its own lines, as it would be without the other.
                text = self.block_text(block, vocab, counts)
                head = heads.get((i, g))
                if head is None:
                    where[(i, g)] = len(out)
                    out.append([i, block, sources, text, counts, 0])
                    continue
                entry = out[where[head]]
                where[(i, g)] = where[head]
                entry[3] = self._seam(entry[3], text, vocab, counts)
                entry[2] = entry[2] + sources
                _add(entry[4], counts)
                entry[5] += 1
        blocks: list[list[Block]] = [[] for _ in doc.pages]
        for i, block, sources, text, counts, crossed in out:
            page = doc.pages[i]
            if crossed:
                # The joined paragraph read once more as one block, as the next clean would read it: its
                # lines' widths changed with the seam (a short half's last line grew), so a wrap judged on
                # one half alone can read otherwise on the whole (cleaning twice must change nothing).
                text = self.block_text(block.with_text(text), vocab, counts)
            if counts or crossed:
                stats["blocks_reflowed"] += 1
                _add(stats, counts)
                details = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()) if v)
                before = "\n\n".join(b.text for b in sources)
                if crossed:
                    stats["pages_joined"] += crossed
                    reason = f"reflow: joined across {crossed} page break(s)" + (f", {details}" if details else "")
                    changes.append(ACROSS_PAGES.change(reason, page.number, before, text))
                else:
                    changes.append(REFLOWED.change(f"reflow: {details}", page.number, before, text))
                block = block.with_text(text)
            blocks[i].append(block)
        pages = [
            page.with_blocks(new) if new != list(page.blocks) else page
            for page, new in zip(doc.pages, blocks, strict=True)
        ]
        return StageResult(document=doc.with_pages(pages), changes=changes, stats=dict(stats))

    def _join_pages(
        self, page_groups: list[list[tuple[Block, tuple[Block, ...]]]]
    ) -> dict[tuple[int, int], tuple[int, int]]:
        """Which page's first block continues the previous page's last (see continues_on_next_page).

        Returns (page index, group index) of each continuation -> that of the
        block it continues. A paragraph over three pages: the middle page is
        all one block, which continues the first page's and is continued by
        the third page's first.
        """
        heads: dict[tuple[int, int], tuple[int, int]] = {}
        last: tuple[int, int] | None = None  # the last block so far
        for i, groups in enumerate(page_groups):
            if not groups:
                continue
            if last is not None:
                prev = page_groups[last[0]][last[1]][0]
                if continues_on_next_page(prev, groups[0][0], self.fit_ratio):
                    heads[(i, 0)] = last
            last = (i, len(groups) - 1)
        return heads

    def _seam(self, head: str, tail: str, vocab: _Vocabulary | None, counts: defaultdict[str, int]) -> str:
        """The reflowed halves of a paragraph as one: the first's last paragraph joined to the second's first."""
        before, _, last = head.rpartition("\n\n")
        first, _, after = tail.partition("\n\n")
        joined = self._join_run([last, first], vocab, counts)
        return "\n\n".join(p for p in (before, joined, after) if p)

    def block_text(self, block: Block, vocab: _Vocabulary | None, counts: defaultdict[str, int]) -> str:
        """The reflowed text of one block; ``counts`` tallies what was done."""
        if block.kind is BlockKind.TABLE or has_fence(block.text):
            # Tables keep their grid; a fenced code block's lines are code.
            return block.text
        text = block.text
        if self.remove_cjk_spaces and not text.isascii():
            text, n = _CJK_SPACES.subn("", text)
            if n:
                counts["cjk_spaces_removed"] += n
        if "\n" not in text or is_row_of_pieces(block):
            # One line; or cells and labels side by side on one printed line,
            # which are not a wrap.
            return text
        if block.kind is BlockKind.HEADING:
            lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
            return self._join_run(lines, vocab, counts) if lines else text
        if block.source not in self.join_sources:
            return text
        plain = block.source in _AUTHOR_LINES
        return "\n\n".join(self._paragraph(p, vocab, counts, plain=plain) for p in text.split("\n\n"))

    def _paragraph(self, text: str, vocab: _Vocabulary | None, counts: defaultdict[str, int], *, plain: bool) -> str:
        lines = text.split("\n")
        widths = [display_width(ln.strip()) for ln in lines]
        widest = max(widths)
        if len(lines) < 2 or widest < (self.plain_min_wrap_width if plain else self.min_wrap_width):
            return text
        out: list[str] = []
        # Tallied apart: a text file's paragraph that turns out to be typed line by line is kept as it
        # was, and what was joined before that was seen must not be reported as done.
        done: defaultdict[str, int] = defaultdict(int)
        run = [lines[0]]
        for prev_width, line in zip(widths, lines[1:], strict=False):
            if (
                line[:1].isspace()
                or STARTS_ITEM.match(line)
                or ends_own_line(run[-1])
                or (plain and (_SPEAKER.match(line) or run[-1].lstrip().startswith(_OWN_LINE_STARTS)))
            ):
                out.append(self._join_run(run, vocab, done))
                out.append("\n")
                run = [line]
            elif prev_width + 1 + display_width(first_word(line)) <= self.fit_ratio * widest:
                # A short line ends a paragraph. In a PDF the break becomes a blank line (so a second pass
                # sees two paragraphs). In a text file a short line means the author broke the lines: the
                # paragraph is not hard-wrapped prose and stays exactly as typed (joining part of it would
                # change the widths a second pass judges by).
                if plain:
                    return text
                out.append(self._join_run(run, vocab, done))
                out.append("\n\n")
                done["paragraph_breaks"] += 1
                run = [line]
            else:
                run.append(line)
        out.append(self._join_run(run, vocab, done))
        _add(counts, done)
        return "".join(out)

    def _join_run(self, lines: list[str], vocab: _Vocabulary | None, counts: defaultdict[str, int]) -> str:
        """Join lines that belong to one paragraph; the first keeps its indentation."""
        # Pieces collected in a list: repeated str concatenation is quadratic
        # on a paragraph of thousands of lines.
        parts: list[str] = []
        for line in lines:
            nxt = line.strip() if parts else line.rstrip()
            if not nxt.strip():
                continue
            if not parts:
                parts.append(nxt)
                continue
            counts["lines_joined"] += 1
            prev = parts[-1]
            head = _word_before_hyphen(prev)
            if head:
                # "self-\nreport", "COVID-\n19": the hyphen stays and no space is
                # added, unless the document's own spelling says it was a break.
                cont = _LOWER_START.match(nxt)
                if cont and vocab is not None and vocab.prefers_joined(head, cont.group()):
                    counts["dehyphenated"] += 1
                    parts[-1] = prev[:-1]
            else:
                parts.append(_joiner(prev[-1], nxt[0], prev[-2:-1]))
            parts.append(nxt)
        return "".join(parts)


def _add(total: defaultdict[str, int], counts: Mapping[str, int]) -> None:
    """Add ``counts`` into ``total``, key by key in ``counts``' order.

    The stage's tallies are ``defaultdict(int)``, not ``Counter``: only counted into, thousands a run
    (one per block and per paragraph), and a ``Counter`` costs several times a dict to make and to
    update from a mapping (its ``Mapping`` test), for nothing the stage uses.
    """
    for key, n in counts.items():
        total[key] += n


def _joiner(last: str, first: str, before_last: str) -> str:
    """What replaces a line break between ``last`` and ``first``: a space or nothing.

    Nothing between two CJK characters or next to CJK punctuation (it
    carries its own spacing), and after a dash or slash that ends a line
    ("FAA–2020–" + "0746", "https://" + "www..."). A space between CJK and
    Latin/digits, which keeps "公司" and "2,078,800" from a table row apart.
    """
    if not (last.isascii() and first.isascii()):  # no CJK character or punctuation is ASCII
        if _CJK_PUNCT.match(last) or _CJK_PUNCT.match(first):
            return ""
        if is_cjk(last) and is_cjk(first):
            return ""
    if last in _GLUE_AFTER and before_last and not before_last.isspace():
        return ""
    return " "


def _word_before_hyphen(text: str) -> str:
    """The letters before a hyphen that ends ``text`` ("pre" in "the pre-"), else "".

    A backwards scan rather than a regex anchored at the end: a regex search
    for ``\\p{L}+-$`` retries from every letter of a long word and is quadratic.
    """
    if not text.endswith(_HYPHENS):
        return ""
    start = len(text) - 1
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    return text[start:-1]


class _Vocabulary:
    """The document's own words: evidence for undoing a line-end hyphen.

    No English wordlist ships offline, and a fixed list misses domain terms.
    The document itself usually spells a long word again unbroken
    ("preprocessing") or hyphenated ("well-known"); that decides. With no
    evidence either way the hyphen stays: "pre-processing" still reads right,
    while wrongly joining "well-\\nknown" would invent a word.
    """

    # Words looked up in the text before the whole set is built: most documents ask a few
    # questions (a handful of line-end hyphens) and the set costs a scan of every word (a 300 KB
    # text: 11 ms); each lookup is one substring search, so a document that asks many pays for at
    # most this many searches before it gets the set.
    LOOKUPS = 32

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.text: str | None = None
        self.words: set[str] | None = None
        self.hyphenated: set[str] | None = None
        self.lookups = self.LOOKUPS

    def _text(self) -> str:
        if self.text is None:
            self.text = "\n".join(b.text for _, b in self.doc.blocks()).lower()
        return self.text

    def _hyphenated(self) -> set[str]:
        # Searched only in the stretches that hold a hyphen, in one call: the pattern tried at every
        # position of the whole text (or of every line with a hyphen) cost more than the rest of the vocabulary.
        if self.hyphenated is None:
            stretches = " ".join(_hyphen_stretches(self._text()))
            self.hyphenated = {w.replace("\u2010", "-") for w in _HYPHENATED.findall(stretches)}
        return self.hyphenated

    def _is_word(self, word: str) -> bool:
        """``word`` is one of the text's words: a whole run of letters in it, as :data:`_WORD` finds them."""
        if not _WORD.fullmatch(word):
            return False
        if self.words is None:
            text = self._text()
            at = text.find(word)
            while self.lookups > 0:
                self.lookups -= 1
                if at < 0:
                    return False
                end = at + len(word)
                if (at == 0 or not _WORD.match(text, at - 1)) and not _WORD.match(text, end):
                    return True
                at = text.find(word, at + 1)
            # A run of letters lies within a stretch between whitespace: each distinct stretch searched once.
            self.words = set(_WORD.findall(" ".join(set(text.split()))))
        return word in self.words

    def prefers_joined(self, head: str, tail: str) -> bool:
        head, tail = head.lower(), tail.lower()
        return self._is_word(head + tail) and f"{head}-{tail}" not in self._hyphenated()


def _hyphen_stretches(text: str) -> list[str]:
    """The stretches of ``text`` between spaces and line breaks that hold a hyphen, in order.

    A hyphenated word (:data:`_HYPHENATED`) holds neither a space nor a line break, so each one
    lies within a stretch, and the character before a stretch is not a letter. Each mark is
    looked for ahead only once the last one found is passed, and back only within the stretch,
    so the text is scanned a bounded number of times however many hyphens it holds.
    """
    end = len(text)
    ahead: dict[str, int] = {}

    def next_at(mark: str, at: int) -> int:
        found = ahead.get(mark, -1)
        if found < at:
            found = text.find(mark, at)
            found = ahead[mark] = end if found < 0 else found
        return found

    stretches: list[str] = []
    start = 0
    while (at := min(next_at(h, start) for h in _HYPHENS)) < end:
        first = max(start, text.rfind(" ", start, at) + 1, text.rfind("\n", start, at) + 1)
        start = min(next_at(" ", at), next_at("\n", at))
        stretches.append(text[first:start])
    return stretches
