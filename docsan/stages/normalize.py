"""The normalize stage: repair mojibake, remove invisible characters, tidy whitespace.

Runs first so every later stage compares clean text. Three steps per block:

1. Invisible characters are removed (:mod:`docsan.text.chardata`): controls,
   zero-width and bidi characters, tag characters, soft hyphens, U+FFFD. They
   are how hidden instructions are smuggled into prompts, so each removal is
   reported, grouped per block and per character class. Two emoji sequences
   need them and keep them: a ZWJ between two emoji (👨‍👩‍👧) and the tag
   characters of the subdivision flags (England, Scotland, Wales). Variation
   selectors stay only where they select a glyph (chardata.VARIATION_SELECTORS).
   A form feed inside a block splits the block: the layout meant a break.
2. ftfy repairs mojibake, line by line, with a CJK-safe configuration (see
   :meth:`Normalize.ftfy_config`).
3. Whitespace: other Unicode spaces become ASCII spaces, runs collapse to one,
   trailing spaces go, blank-line runs shrink to one paragraph break.

The steps are repeated until the text stops changing (at most a few rounds):
removing a control character or folding an NBSP can bring two halves of a
mojibake sequence together, and a repaired sequence can decode to a control.
This is what makes the stage idempotent.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass as plain_dataclass
from dataclasses import field, replace
from typing import ClassVar

import ftfy
import regex
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

from docsan.model import Block, BlockKind, Cell, ChangeKind, Document, Page, Source, Table
from docsan.render import table_text
from docsan.report import Change, ChangeCode, StageResult
from docsan.text.chardata import CJK, INVISIBLE_CLASSES, REMOVABLE, VARIATION_SELECTORS, invisible_class, invisible_slug

MOJIBAKE = ChangeCode("normalize.mojibake", ChangeKind.REWRITTEN, "ftfy repaired mis-decoded text (mojibake)")
# One code per class of invisible characters (docsan.text.chardata), the variation selectors that
# select no glyph, and the form feed that splits a block.
INVISIBLE = {
    name: ChangeCode(
        f"normalize.invisible.{invisible_slug(name)}", ChangeKind.REMOVED, f"{name}s removed from the text"
    )
    for name in [*(name for name, _ in INVISIBLE_CLASSES), "variation selector", "form feed"]
}

# Tag-character spellings of the subdivision flags that have an emoji
# (RGI): England, Scotland, Wales. Anything else in tag characters is a
# hidden message, not a flag.
RGI_FLAG_TAGS: tuple[str, ...] = ("gbeng", "gbsct", "gbwls")

# The patterns over code-point classes alone (no Unicode properties, nothing the two engines read
# differently) are compiled by the standard library's engine: it scans a class about three times
# faster than ``regex``, and every block that is not plain goes through them.
# Zs spaces other than the ASCII space and the ideographic space U+3000:
# NBSP, the typographic spaces U+2000-U+200A, narrow NBSP, math space, ogham.
_OTHER_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
# A run of two or more spaces/tabs after visible text on the same line.
# Fixed-width lookbehind, one greedy class: linear.
_SPACE_RUN = re.compile(r"(?<=[^ \t\n])[ \t]{2,}")
_BLANK_LINES = re.compile(r"\n{3,}")
_LINE_BREAKS = re.compile(r"\r\n|[\r\x85\u2028\u2029]")
_ANY_REMOVABLE = re.compile(rf"[{REMOVABLE}{VARIATION_SELECTORS}]")
# See Normalize._ftfy: one class, fullmatch, linear.
_FTFY_NOT_NEEDED = regex.compile(rf"[\x20-\x7e\n\t{CJK}\u3000\u2013\u2014\u2018\u2019\u201c\u201d\u2026]*")
# The layout whitespace stripped from line ends; U+3000 included, since an
# ideographic space at a line end indents nothing.
_TRAILING = " \t\u3000"
# Text this stage leaves exactly as it is (see _is_plain): visible ASCII, CJK and
# the typographic characters ftfy ignores, single spaces and line breaks. One
# class, fullmatch: linear.
_PLAIN_CHARS = regex.compile(rf"[\x21-\x7e{CJK}\u2013\u2014\u2018\u2019\u201c\u201d\u2026 \n]*")
_NOT_PLAIN_EDGES = (" ", "\n")
_NOT_PLAIN_RUNS = ("  ", " \n", "\n ", "\n\n\n")
# The same test for ASCII text (nearly every line and cell), whole in one pattern of the standard
# library's engine, which starts a match several times faster than ``regex``: visible characters
# separated by one space, one line break or one blank line. Possessive, one character of
# lookahead: linear.
_PLAIN_ASCII = re.compile(r"(?:[\x21-\x7e]++(?: |\n\n?+)(?=[\x21-\x7e]))*+[\x21-\x7e]*+")
# Pages from these sources were laid out by a PDF: line-leading spaces are
# positioning noise there, while in text files and chat they are indentation
# (code, nested lists) and kept.
_LAYOUT_SOURCES = frozenset({Source.TEXT_LAYER, Source.OCR, Source.TABLE_EXTRACTOR})
# Enough rounds of ftfy + removal for any real input; each round either
# changes nothing (and stops) or removes characters, so this only bounds the
# pathological case.
_MAX_ROUNDS = 4
# Code points listed by name in one report line before the rest is summed up
# (a hidden message in tag characters uses dozens).
_MAX_LISTED = 6


def _flag_pattern(flags: tuple[str, ...]) -> str:
    seqs = ["".join(chr(0xE0000 + ord(c)) for c in f) for f in flags]
    return "\U0001f3f4(?:" + "|".join(regex.escape(s) for s in seqs) + ")\U000e007f" if seqs else "(?!)"


# Every character a match of _invisible_pattern can start with (its lookbehinds
# consume nothing): the flag's black flag, ZWJ, soft hyphen, ESC, the removable
# characters and the variation selectors. Text without any of them is left as it
# is by that pattern, and one class search finds that about ten times faster
# than the alternation, which tries its lookbehinds at every position.
_INVISIBLE_STARTS = re.compile(rf"[\U0001f3f4\u200d\u00ad\x1b{REMOVABLE}{VARIATION_SELECTORS}]")


def _invisible_pattern(flags: tuple[str, ...]) -> regex.Pattern[str]:
    # Alternation tried at each position: a kept flag sequence (bounded
    # length), a kept ZWJ between emoji (single-character lookarounds), or
    # one removable character. No nested quantifiers: linear.
    emoji_before = r"[\p{Extended_Pictographic}\ufe0f\U0001f3fb-\U0001f3ff]"
    return regex.compile(
        rf"(?P<flag>{_flag_pattern(flags)})"
        rf"|(?P<zwj>(?<={emoji_before})\u200d(?=\p{{Extended_Pictographic}}))"
        # A soft hyphen at a line end is a word break the layout used: the
        # word continues on the next line, so the line break goes with it.
        r"|(?P<drop>\u00ad\n)"
        # An ANSI terminal escape (colour codes in pasted logs): the whole
        # sequence, not just its ESC, or "[31m" would be left in the text.
        r"|(?P<drop>\x1b\[[0-9;]{0,32}[A-Za-z])"
        rf"|(?P<drop>[{REMOVABLE}])"
        # Variation selectors that select a glyph stay (chardata.VARIATION_SELECTORS says which);
        # the lookbehinds see one base character, so a second selector in a row is always dropped.
        r"|(?P<vs>(?<=\p{Ideographic})[\U000e0100-\U000e01ef])"
        r"|(?P<vs>(?<=\p{Emoji})[\ufe0e\ufe0f])"
        r"|(?P<vs>(?<=[^\x00-\x7f\ufe00-\ufe0f\U000e0100-\U000e01ef])[\ufe00-\ufe0d])"
        rf"|(?P<drop>[{VARIATION_SELECTORS}])"
    )


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Normalize:
    """Repair mojibake and remove the invisible characters used to hide text."""

    name: ClassVar[str] = "normalize"

    # ftfy's encoding repair ("Ã©" -> "é"). On by default: PDFs and pasted text
    # often carry UTF-8 read as Windows-1252; ftfy only acts on text its
    # badness heuristic flags, so correct CJK text is left alone.
    fix_mojibake: bool = True
    # Ligatures (ﬁ, ﬂ) become their letters: PDF fonts emit them, and a
    # ligature splits words for search, de-hyphenation and the tokenizer.
    fix_ligatures: bool = True
    # Remove the invisible characters listed in docsan.text.chardata.INVISIBLE_CLASSES.
    # Off only to inspect raw extractor output.
    remove_invisible: bool = True
    # Subdivision flags whose tag characters survive (tag letters, e.g.
    # "gbeng"). Only the RGI flags by default: allowing any tag spelling
    # would let a "flag" carry a hidden ASCII message.
    emoji_flag_tags: tuple[str, ...] = RGI_FLAG_TAGS
    # NBSP, thin spaces etc. become ASCII spaces. The ideographic space
    # U+3000 is kept: Chinese uses it for paragraph indentation and to align
    # fields ("姓名　张三"); folding it would change the text's layout meaning.
    unify_spaces: bool = True
    # Collapse runs of spaces/tabs inside a line to one space (a single tab
    # is kept: it may separate columns); strip trailing spaces; shrink runs
    # of blank lines to one paragraph break.
    collapse_whitespace: bool = True

    def ftfy_config(self) -> ftfy.TextFixerConfig:
        """ftfy with everything that would change correct CJK text switched off.

        - ``fix_character_width=False``: width folding turns Chinese full-width
          punctuation (，：（）) into ASCII.
        - ``uncurl_quotes=False``: curly quotes are text, not damage; Chinese
          uses “”‘’ as its quotation marks.
        - ``normalization=None``: even NFC changes CJK text. The 268 CJK
          compatibility ideographs (U+F900-U+FAFF...) have canonical
          singleton decompositions, so NFC rewrites e.g. U+F900 豈 to U+8C48;
          that changes what the source said (tests/test_normalize.py proves it).
        - ``unescape_html=False``: "&lt;b&gt;" in a document is literal text;
          unescaping would turn it into markup the document never had.
        - ``fix_c1_controls=False``: C1 controls are removed and reported by
          this stage rather than guessed into Windows-1252 punctuation.
        - ``remove_terminal_escapes=False``: this stage removes ANSI escape
          sequences itself, before ftfy runs, so that U+FFFD and controls are
          gone before ftfy looks (its "sloppy" codecs read U+FFFD as byte
          0x1A and would report a repair that was only a removal).
        - ``remove_control_chars=False``: this stage removes controls itself,
          so each removal is reported, and ftfy's list would also strip the
          tag characters of emoji flags.
        - ``restore_byte_a0=False`` and ``decode_inconsistent_utf8=False``:
          both repair fragments that do not decode as a whole, which is where
          ftfy guesses. On the corpus (ibm_redp5110 p3, a font without a
          Unicode map) the fragment repair turned garbage into different
          garbage ("ì£" -> "죆"); and it reads "Â " as a lost NBSP, so a line
          ending in "Â" would be "repaired" only after reflow joined it to the
          next line, breaking idempotence. Whole-segment mojibake
          ("cafÃ© teamâ€™s") is still repaired.
        - ``replace_lossy_sequences=False``: it turns would-be mojibake with a
          "?" in it into U+FFFD, which this stage then deletes: text would be
          lost on a guess.
        """
        return ftfy.TextFixerConfig(
            unescape_html=False,
            remove_terminal_escapes=False,
            fix_encoding=self.fix_mojibake,
            restore_byte_a0=False,
            replace_lossy_sequences=False,
            decode_inconsistent_utf8=False,
            fix_c1_controls=False,
            fix_latin_ligatures=self.fix_ligatures,
            fix_character_width=False,
            uncurl_quotes=False,
            fix_line_breaks=True,
            fix_surrogates=True,
            remove_control_chars=False,
            normalization=None,
            explain=True,
        )

    def __call__(self, doc: Document) -> StageResult:
        cleaner = _Cleaner(self)
        pages = []
        for page in doc.pages:
            blocks: list[Block] = []
            for block in page.blocks:
                blocks.extend(cleaner.block(page, block))
            pages.append(page if tuple(blocks) == page.blocks else page.with_blocks(blocks))
        return StageResult(document=doc.with_pages(pages), changes=cleaner.changes, stats=dict(cleaner.stats))


@plain_dataclass(slots=True)
class _Tally:
    """What cleaning one block did: removed characters, ftfy's steps, hidden tag text."""

    removed: Counter[str] = field(default_factory=Counter)
    fixes: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    selectors: list[str] = field(default_factory=list)

    def drop(self, match: regex.Match[str]) -> str:
        if match.group("drop") is None:
            return match.group()
        char = match.group()[0]
        self.removed[char] += 1
        if 0xE0020 <= ord(char) <= 0xE007E:
            # Tag characters spell ASCII (U+E0041 is "A"): keep the message they hid for the report.
            self.tags.append(chr(ord(char) - 0xE0000))
        elif 0xE0100 <= ord(char) <= 0xE01EF:
            # Variant smuggling spells a byte as U+E0100 + byte: the report shows what it said.
            self.selectors.append(chr(ord(char) - 0xE0100))
        return ""


class _Cleaner:
    """One run of the stage over a document: holds the compiled patterns and the tallies."""

    def __init__(self, stage: Normalize) -> None:
        self.stage = stage
        self.config = stage.ftfy_config()
        self.pattern = _invisible_pattern(stage.emoji_flag_tags)
        self.changes: list[Change] = []
        self.stats: Counter[str] = Counter()
        self.touched = False  # see _touch_space_counters
        # ftfy's answer for each line it was asked about: a document repeats lines (running heads,
        # bullets, table cells), and on the corpus a third of ftfy's lines were ones it had seen.
        self.fixed_lines: dict[str, ftfy.ExplainedText] = {}

    def block(self, page: Page, block: Block) -> list[Block]:
        if block.kind is BlockKind.TABLE and block.table is not None:
            return [self._table(page, block)]
        if block.text and _is_plain(block.text):
            # What self.text would say of its one piece (plain text holds no form feed), without the
            # tally and the lists: most blocks need nothing.
            self._touch_space_counters()
            return [block]
        tally = _Tally()
        # The form feed inside a block is a break the layout meant; the
        # pieces become separate blocks (paragraphs).
        pieces = block.text.split("\x0c")
        if len(pieces) > 1:
            tally.removed["\x0c"] += len(pieces) - 1
            self.stats["form_feeds"] += len(pieces) - 1
        indent = block.source not in _LAYOUT_SOURCES
        texts = [self.text(p, tally, keep_indent=indent) for p in pieces]
        texts = [t for t in texts if t.strip()]
        if len(texts) == 1 and texts[0] == block.text:
            return [block]
        out = [block.with_text(t) for t in texts]
        self.stats["blocks_changed"] += 1
        if not out:
            self.stats["blocks_emptied"] += 1
        self._report(page, block.text, "\n\n".join(texts), tally)
        return out

    def _table(self, page: Page, block: Block) -> Block:
        assert block.table is not None
        tally = _Tally()
        # The cells are the table's content; the block's plain text is
        # their rendering, rebuilt from the cleaned cells (cleaning it as
        # prose would squeeze the spaces around an empty cell).
        rows = tuple(tuple(self._cell(c, tally) for c in row) for row in block.table.rows)
        table = Table(rows=rows, header_rows=block.table.header_rows)
        text = table_text(table)
        if text == block.text and table == block.table:
            return block
        self.stats["blocks_changed"] += 1
        self._report(page, block.text, text, tally)
        return replace(block, text=text, table=table)

    def _cell(self, cell: Cell, tally: _Tally) -> Cell:
        text = self.text(cell.text, tally, keep_indent=False, in_table=True)
        # Unchanged cells are kept as they are: a table has thousands of them.
        return cell if text == cell.text else replace(cell, text=text)

    def text(self, text: str, tally: _Tally, *, keep_indent: bool, in_table: bool = False) -> str:
        """Clean one piece of text, recording what was removed or repaired in ``tally``."""
        if _is_plain(text):
            # Most text (and nearly every table cell) needs nothing: skip the
            # regex passes. The counters are touched as the full path does, so
            # the stage's statistics keep the same keys in the same order.
            self._touch_space_counters()
            return text
        return self.clean(text, tally, keep_indent=keep_indent, in_table=in_table)

    def clean(self, text: str, tally: _Tally, *, keep_indent: bool, in_table: bool) -> str:
        """:meth:`text` without the fast path for plain text."""
        if in_table and "\x0c" in text:
            # A cell has no paragraphs: a form feed there is just a stray control.
            tally.removed["\x0c"] += text.count("\x0c")
            text = text.replace("\x0c", " ")
        # Line breaks first (CR LF, CR, NEL, U+2028/9): NEL is a C1 control
        # but means a new line, and must not be removed as one. Of them ASCII text can only hold CR.
        if "\r" in text or not text.isascii():
            text = _LINE_BREAKS.sub("\n", text)
        # Repeated to a fixed point: removing a control character or folding
        # an NBSP can complete a mojibake sequence ftfy did not see before.
        for _ in range(_MAX_ROUNDS):
            before = text
            removable = _INVISIBLE_STARTS.search(text) is not None
            if self.stage.remove_invisible and removable:
                text = self.pattern.sub(tally.drop, text)
            # Text made only of characters no ftfy fix involves (printable ASCII, CJK, curly quotes,
            # dashes) is left alone without ftfy's scans, which cost as much as extraction on CJK pages.
            # Every mojibake ftfy repairs contains a Latin-1, Latin Extended, Cyrillic, box-drawing or
            # other symbol character outside this set.
            quiet = _FTFY_NOT_NEEDED.fullmatch(text) is not None
            if not quiet:
                text = self._ftfy(text, tally.fixes)
            if self.stage.unify_spaces:
                text, n = _OTHER_SPACES.subn(" ", text) if not text.isascii() else (text, 0)
                self.stats["spaces_unified"] += n
            if self.stage.collapse_whitespace:
                text = self._whitespace(text, keep_indent=keep_indent)
            # Another round only if it could find something: the space steps
            # are idempotent on their own, so with nothing removable and
            # nothing for ftfy left the text is already final. The space steps only turn characters
            # into ASCII spaces and take spaces and line breaks out, so a round that began with
            # nothing removable and had nothing for ftfy ends so too (the test is not needed).
            if (
                text == before
                or (quiet and not removable)
                or (_FTFY_NOT_NEEDED.fullmatch(text) and not _ANY_REMOVABLE.search(text))
            ):
                break
        return text

    def _touch_space_counters(self) -> None:
        # Once the keys exist, adding 0 changes neither their values nor their order.
        if self.touched:
            return
        self.touched = True
        if self.stage.unify_spaces:
            self.stats["spaces_unified"] += 0
        if self.stage.collapse_whitespace:
            self.stats["whitespace_runs_collapsed"] += 0

    def _ftfy(self, text: str, fixes: list[str]) -> str:
        # Line by line, as ftfy.fix_text does: whether a segment decodes
        # depends on all of it, and reflow and the text loader later regroup
        # lines into other segments. A line is the unit that stays the same.
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if _FTFY_NOT_NEEDED.fullmatch(line):
                continue
            known = self.fixed_lines.get(line)
            if known is None:
                known = self.fixed_lines[line] = ftfy.fix_and_explain(line, self.config)
            fixed, steps = known
            if fixed != line:
                self.stats["ftfy_fixes"] += 1
                fixes.extend(f"{s.action} {s.parameter}" for s in steps or [])
                lines[i] = fixed
        return "\n".join(lines)

    def _whitespace(self, text: str, *, keep_indent: bool) -> str:
        # The run pattern's lookbehind skips line-leading indentation; the
        # strips are plain str methods (a regex anchored at line ends would
        # rescan a long run of spaces from each of its positions).
        # A run of two spaces or tabs holds two spaces or a tab; most text has neither.
        text, n = _SPACE_RUN.subn(" ", text) if "  " in text or "\t" in text else (text, 0)
        self.stats["whitespace_runs_collapsed"] += n
        if keep_indent:
            lines = (line.rstrip(_TRAILING) for line in text.split("\n"))
        else:
            lines = (line.lstrip(" \t").rstrip(_TRAILING) for line in text.split("\n"))
        text = "\n".join(lines)
        return (_BLANK_LINES.sub("\n\n", text) if "\n\n\n" in text else text).strip("\n")

    def _report(self, page: Page, before: str, after: str, tally: _Tally) -> None:
        if tally.fixes:
            steps = ", ".join(dict.fromkeys(tally.fixes))
            self.changes.append(MOJIBAKE.change(f"repaired by ftfy ({steps})", page.number, before, after))
        by_class: dict[str, Counter[str]] = {}
        for char, n in tally.removed.items():
            by_class.setdefault(invisible_class(char), Counter())[char] = n
        for cls, chars in by_class.items():
            reason = f"{cls}: {_counts(chars)}"
            hidden = {"tag character": tally.tags, "variation selector": tally.selectors}.get(cls)
            if hidden:
                reason += f' (hidden text "{"".join(hidden)[:200]}")'
            code = INVISIBLE[cls]
            self.changes.append(code.change(reason, page.number, before, after))
            self.stats["removed_" + code.rule] += sum(chars.values())
            self.stats["chars_removed"] += sum(chars.values())


def _is_plain(text: str) -> bool:
    """True when every step of the stage would return ``text`` unchanged and remove nothing.

    Its characters are neither removable, nor line breaks to unify, nor
    anything ftfy repairs, nor other spaces; and no line starts or ends with
    a space, no spaces run, no blank-line run, no leading or trailing break.
    """
    if text.isascii():
        return _PLAIN_ASCII.fullmatch(text) is not None
    return _plain_by_parts(text)


def _plain_by_parts(text: str) -> bool:
    """:func:`_is_plain` for any text, one condition at a time."""
    return (
        _PLAIN_CHARS.fullmatch(text) is not None
        and not text.startswith(_NOT_PLAIN_EDGES)
        and not text.endswith(_NOT_PLAIN_EDGES)
        and not any(run in text for run in _NOT_PLAIN_RUNS)
    )


def _counts(chars: Counter[str]) -> str:
    """Per code point (``U+0002 ×3, U+0004 ×1``), the most frequent few; a total for the rest."""
    top = sorted(chars.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"U+{ord(c):04X} ×{n}" for c, n in sorted(top[:_MAX_LISTED]))
    rest = sum(n for _, n in top[_MAX_LISTED:])
    return f"{shown} and {rest} more" if rest else shown
