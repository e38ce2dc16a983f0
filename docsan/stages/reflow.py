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

from collections import Counter
from typing import ClassVar

import regex
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from docsan.geometry import is_row_of_pieces, merge_line_blocks
from docsan.model import Block, BlockKind, ChangeKind, Document, Source
from docsan.report import Change, ChangeCode, StageResult
from docsan.text.chardata import CJK, CJK_PUNCTUATION, display_width, is_cjk

REFLOWED = ChangeCode(
    "reflow.reflowed",
    ChangeKind.REWRITTEN,
    "a block's layout line breaks joined into paragraphs (hyphens, CJK spaces; the reason lists what)",
)
_CJK_PUNCT = regex.compile(rf"[{CJK_PUNCTUATION}]")
# Line-final characters that continue a token across the break (see _joiner).
_GLUE_AFTER = frozenset("–—/")
# Spaces between two CJK characters ("费用 分 类"). The lookarounds are one
# character wide and the run is one class: linear.
_CJK_SPACES = regex.compile(rf"(?<=[{CJK}]) +(?=[{CJK}])")
# What starts a line of its own: bullets, numbered items (1. 1) (1) （1）
# （一） 一、 ①), Chinese article/chapter numbers (第三条), letter items (a) A.),
# and Markdown structure (# heading, > quote, | table row). Every repeat is
# bounded and nothing is nested: linear.
_STARTS_ITEM = regex.compile(
    r"[•·●○◦▪▫■□◆◇►▶➢✓✔※\-*+–—]\s"
    r"|\d{1,3}[.)]\s|\d{1,3}[、．]"
    r"|[(（][\d一二三四五六七八九十百]{1,4}[)）]"
    r"|[一二三四五六七八九十百]{1,4}[、．]"
    r"|第[\d一二三四五六七八九十百千]{1,6}[章节条款部篇]"
    r"|[a-zA-Z][.)]\s|[ivxIVX]{1,5}[.)]\s"
    r"|[\u2460-\u2473\u2776-\u277f]"
    r"|[#>|]"
)
# "Human: ", "AI: ", "User 2: ": a speaker's turn in a pasted dialogue starts its own line.
# Bounded repeat, one class: linear.
_SPEAKER = regex.compile(r"\p{Lu}[\p{L}\p{N} _-]{0,24}:\s")
# In text files, a line starting like this is a line of its own: a Markdown heading, a control-token
# spelling ("<|im_start|>system" names a turn), a quote.
_OWN_LINE_STARTS = ("#", "<|", "<｜", "<<", "[INST]", ">")
# Sources whose line breaks the author typed (see Reflow.plain_min_wrap_width).
_AUTHOR_LINES = frozenset({Source.PLAIN_TEXT, Source.CHAT})
_FENCE = regex.compile(r"^[ \t]*(?:```|~~~)", flags=regex.MULTILINE)
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
    fit_ratio: float = Field(0.85, gt=0, le=1)
    # A block whose longest line is narrower than this (display columns, a
    # CJK character counting two) is a list of short lines (names, an
    # address, a form) and not wrapped prose: its breaks are kept.
    min_wrap_width: int = Field(24, ge=1)
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

    def __call__(self, doc: Document) -> StageResult:
        vocab = _Vocabulary(doc) if self.dehyphenate else None
        stats: Counter[str] = Counter()
        changes: list[Change] = []
        pages = []
        for page in doc.pages:
            if doc.is_chat and self.dehyphenate:
                # A message is reflowed on its own words: what a later message
                # says must not change how an earlier one reads, or a growing
                # history would lose the engine's prefix cache at every turn.
                vocab = _Vocabulary(doc.with_pages([page]))
            blocks = []
            groups = merge_line_blocks(page.blocks) if self.merge_line_blocks else [(b, (b,)) for b in page.blocks]
            for block, sources in groups:
                counts: Counter[str] = Counter()
                if len(sources) > 1:
                    counts["blocks_merged"] += len(sources) - 1
                text = self.block_text(block, vocab, counts)
                if counts:
                    stats["blocks_reflowed"] += 1
                    stats.update(counts)
                    reason = "reflow: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(counts.items()))
                    before = "\n\n".join(b.text for b in sources)
                    changes.append(REFLOWED.change(reason, page.number, before, text))
                    block = block.with_text(text)
                blocks.append(block)
            pages.append(page.with_blocks(blocks) if blocks != list(page.blocks) else page)
        return StageResult(document=doc.with_pages(pages), changes=changes, stats=dict(stats))

    def block_text(self, block: Block, vocab: _Vocabulary | None, counts: Counter[str]) -> str:
        """The reflowed text of one block; ``counts`` tallies what was done."""
        if block.kind is BlockKind.TABLE or _FENCE.search(block.text):
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

    def _paragraph(self, text: str, vocab: _Vocabulary | None, counts: Counter[str], *, plain: bool) -> str:
        lines = text.split("\n")
        widths = [display_width(ln.strip()) for ln in lines]
        widest = max(widths)
        if len(lines) < 2 or widest < (self.plain_min_wrap_width if plain else self.min_wrap_width):
            return text
        out: list[str] = []
        run = [lines[0]]
        for prev_width, line in zip(widths, lines[1:], strict=False):
            if (
                line[:1].isspace()
                or _STARTS_ITEM.match(line)
                or _ends_own_line(run[-1])
                or (plain and (_SPEAKER.match(line) or run[-1].lstrip().startswith(_OWN_LINE_STARTS)))
            ):
                out.append(self._join_run(run, vocab, counts))
                out.append("\n")
                run = [line]
            elif prev_width + 1 + display_width(_first_word(line)) <= self.fit_ratio * widest:
                # A short line ends a paragraph. In a PDF the break becomes a blank line (so a second pass
                # sees two paragraphs). In a text file a short line means the author broke the lines: the
                # paragraph is not hard-wrapped prose and stays exactly as typed (joining part of it would
                # change the widths a second pass judges by).
                if plain:
                    return text
                out.append(self._join_run(run, vocab, counts))
                out.append("\n\n")
                counts["paragraph_breaks"] += 1
                run = [line]
            else:
                run.append(line)
        out.append(self._join_run(run, vocab, counts))
        return "".join(out)

    def _join_run(self, lines: list[str], vocab: _Vocabulary | None, counts: Counter[str]) -> str:
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


def _joiner(last: str, first: str, before_last: str) -> str:
    """What replaces a line break between ``last`` and ``first``: a space or nothing.

    Nothing between two CJK characters or next to CJK punctuation (it
    carries its own spacing), and after a dash or slash that ends a line
    ("FAA–2020–" + "0746", "https://" + "www..."). A space between CJK and
    Latin/digits, which keeps "公司" and "2,078,800" from a table row apart.
    """
    if _CJK_PUNCT.match(last) or _CJK_PUNCT.match(first):
        return ""
    if is_cjk(last) and is_cjk(first):
        return ""
    if last in _GLUE_AFTER and before_last and not before_last.isspace():
        return ""
    return " "


def _ends_own_line(line: str) -> bool:
    """A line that ends so that the next one starts afresh, however full it is.

    An introduction ending in a colon (a list follows), and a table-of-contents
    entry: dot leaders and a page number ("Chemotherapy......39").
    """
    text = line.rstrip()
    if text.endswith((":", "：")):
        return True
    head = text.rstrip("0123456789ivxlcIVXLC").rstrip()
    return len(text) - len(head) <= 8 and head.endswith(("...", "…", "···", "・・・"))


def _first_word(line: str) -> str:
    words = line.split(None, 1)
    return words[0] if words else ""


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

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.words: set[str] | None = None
        self.hyphenated: set[str] = set()

    def _build(self) -> set[str]:
        # Built on first use: most blocks never end a line with a hyphen.
        text = "\n".join(b.text for _, b in self.doc.blocks()).lower()
        self.hyphenated = {w.replace("\u2010", "-") for w in _HYPHENATED.findall(text)}
        return set(_WORD.findall(text))

    def prefers_joined(self, head: str, tail: str) -> bool:
        if self.words is None:
            self.words = self._build()
        head, tail = head.lower(), tail.lower()
        return f"{head}-{tail}" not in self.hyphenated and head + tail in self.words
