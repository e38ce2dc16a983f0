"""What a wrapped line is: the rules by which a block's lines are joined, and the page-break test.

The reflow stage joins a block's lines with these rules; :func:`continues_on_next_page`
asks the same of the last block of a page and the first of the next, and both the reflow
stage (joining the halves) and the furniture stage (finding a running head between them)
ask it. The stages are peers, so the rule lives here, under both.
"""

from __future__ import annotations

import regex

from docsan.model import Block, BlockKind
from docsan.text.chardata import display_width, is_cjk
from docsan.text.paragraphs import is_short_lines, split_paragraphs

# The default of Reflow.fit_ratio: a line is full when the next line's first word would not fit in this share of
# the widest line (the furniture stage judges a page break's halves by it too).
FIT_RATIO = 0.85
# What ends a paragraph's last line on purpose: a sentence end, a colon (a list follows).
ENDS_SENTENCE = frozenset(".!?:;。！？：；…")
_CLOSING = frozenset("”’」』）)]\"'")
_OPENS = frozenset("([{“‘「『（【《-–—/")
_CONTINUES = frozenset(",;:)]}’”」』、，；：）】》")
# What starts a line of its own: bullets, numbered items (1. 1) (1) （1）
# （一） 一、 ①), Chinese article/chapter numbers (第三条), letter items (a) A.),
# and Markdown structure (# heading, > quote, | table row). Every repeat is
# bounded and nothing is nested: linear.
STARTS_ITEM = regex.compile(
    r"[•·●○◦▪▫■□◆◇►▶➢✓✔※\-*+–—]\s"
    r"|\d{1,3}[.)]\s|\d{1,3}[、．]"
    r"|[(（][\d一二三四五六七八九十百]{1,4}[)）]"
    r"|[一二三四五六七八九十百]{1,4}[、．]"
    r"|第[\d一二三四五六七八九十百千]{1,6}[章节条款部篇]"
    r"|[a-zA-Z][.)]\s|[ivxIVX]{1,5}[.)]\s"
    r"|[\u2460-\u2473\u2776-\u277f]"
    r"|[#>|]"
)
# A Markdown code fence: a block holding one is code, whose lines are never joined.
FENCE = regex.compile(r"^[ \t]*(?:```|~~~)", flags=regex.MULTILINE)


def has_fence(text: str) -> bool:
    """A line of ``text`` opens or closes a Markdown code fence (:data:`FENCE`).

    Asked of every block; the substring tests answer most without the
    multiline search.
    """
    return ("```" in text or "~~~" in text) and FENCE.search(text) is not None


def continues_on_next_page(prev: Block, nxt: Block, fit_ratio: float, column: float | None = None) -> bool:
    """Is ``nxt``, the first block of a page, the rest of ``prev``, the last block of the page before?

    All of: both are prose text of one source (and one font size, within 10%,
    when known; neither a block of short lines); ``prev`` does not end a sentence (nor with a colon: a list
    follows) and its last line is full, as reflow judges a wrapped line (the
    next line's first word would not have fitted); ``nxt`` starts
    mid-sentence: in lower case, or for CJK after a first half that ended
    on a CJK letter or a comma, with a CJK letter, or after a first half
    that ended on an opening bracket or quote, a hyphen or a dash, or with
    a closing mark or a comma (no paragraph starts with one); not with
    something that starts a line of its own (a list item, a numbered
    heading). Furniture must be gone: a running head or a page number left
    between the halves is a block of its own, which fails these tests.

    ``column``: the display width of the pages' wrapped lines, when the caller
    has the pages' original lines (the furniture stage does, reflow does not).
    Against it a single line at the foot of a page and a single line at the
    head of the next still show whether the first was full; where either half
    has two lines, their own widest line is the measure, as without it.
    """
    if prev.kind is not BlockKind.TEXT or nxt.kind is not BlockKind.TEXT or prev.source is not nxt.source:
        return False
    if prev.font_size and nxt.font_size and abs(prev.font_size - nxt.font_size) > 0.1 * prev.font_size:
        return False
    head, tail = prev.text.rstrip(), nxt.text.lstrip()
    if not head or not tail or STARTS_ITEM.match(tail) or has_fence(head) or has_fence(tail):
        return False
    if is_short_lines(head) or is_short_lines(tail):
        return False  # a list, a form or a table read as text: its pieces are not a paragraph's lines
    end = head[-2] if head[-1] in _CLOSING and len(head) > 1 else head[-1]
    if end in ENDS_SENTENCE or ends_own_line(head):
        return False
    first = tail[0]
    # An opening bracket or quote, a hyphen or a dash cannot end a paragraph: whatever comes next continues it.
    # Nor does a paragraph start with a closing mark or a comma ("’s bandwidth", ", and").
    opened = head[-1] in _OPENS or first in _CONTINUES
    if not (opened or first.islower() or (is_cjk(first) and first.isalpha() and (is_cjk(end) or end in "，、,"))):
        return False
    # The halves must show their column, and the first half's last line must be full. Two lines of
    # either half show it: a single line at the foot of a page (a clause the break cut after its
    # first line) is measured against the wrapped lines of the second half. Two single lines prove
    # nothing (and a paragraph reflow already joined is one line: joining again on a second run
    # would not be idempotent).
    head_lines = [ln.strip() for ln in split_paragraphs(head)[-1].split("\n") if ln.strip()]
    tail_lines = [ln.strip() for ln in split_paragraphs(tail)[0].split("\n") if ln.strip()]
    if len(head_lines) < 2 and len(tail_lines) < 2:
        if column is None:
            return False
        widest = column
    else:
        widest = max(display_width(ln) for ln in head_lines + tail_lines)
    return display_width(head_lines[-1]) + 1 + display_width(first_word(tail)) > fit_ratio * widest


def ends_own_line(line: str) -> bool:
    """A line that ends so that the next one starts afresh, however full it is.

    An introduction ending in a colon (a list follows), and a table-of-contents
    entry: dot leaders and a page number ("Chemotherapy......39").
    """
    text = line.rstrip()
    if text.endswith((":", "：")):
        return True
    head = text.rstrip("0123456789ivxlcIVXLC").rstrip()
    return len(text) - len(head) <= 8 and head.endswith(("...", "…", "···", "・・・"))


def first_word(line: str) -> str:
    """What must have fitted at the end of the line before for that line to count as short ("" for a blank)."""
    words = line.split(None, 1)
    return words[0] if words else ""
