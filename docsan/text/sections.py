"""Sections of a document: the blocks between two section headings, for telling boilerplate from copies.

A clause that a contract or a report prints once in every section ("Figures
in this section are unaudited…") is repeated on purpose: read section by
section (a retrieval chunk, a quoted page) each copy is needed. Copies
pasted into a document follow no such order. :func:`is_boilerplate` says
which repeated paragraphs are the first kind.

A section starts at a heading block, or at a one-line block that numbers a
section (``5.3.5 小节 导出说明``, ``第三条``, ``一、``, ``Section 12``, ``§ 4``):
text files carry no heading marks. A single number (``3. 文件上传必须经过预处理``)
is a list item as often as a heading, so numbers need two levels. A heading whose text came before starts
no new section: a document's sections have titles of their own, and a
heading met again is part of a copy. The notion only ever keeps text (a
paragraph wrongly taken for a heading can only keep a copy), never removes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import regex

from docsan.model import Block, BlockKind, Document
from docsan.text.chardata import display_width
from docsan.text.paragraphs import paragraph_spans

# A section number at the start of a line. Bounded repeats, no nesting: linear.
_NUMBERED = regex.compile(
    r"(?:\d{1,3}(?:\.\d{1,3}){1,5}\.?\s"
    r"|第[\d一二三四五六七八九十百千]{1,6}[章节条款部篇]"
    r"|[一二三四五六七八九十]{1,3}[、．]"
    r"|(?:section|article|chapter|part)\s{1,3}\d{1,4}"
    r"|§\s{0,2}\d)",
    regex.IGNORECASE,
)
# A heading is short and holds no clause punctuation ("8. 请求体中出现大量重复文本片段，最高重复率达60%" and
# "2. 默认配置下block分配策略低效：" are list items, "5.3.5 小节 导出说明" is a heading).
_MAX_HEADING_WIDTH = 48
_CLAUSE = regex.compile(r"[，。；：！？、,;:!?]|\.(?:\s|$)")


def is_section_heading(block: Block) -> bool:
    if block.kind is BlockKind.HEADING:
        return True
    if block.kind is not BlockKind.TEXT:
        return False
    text = block.text.strip()
    # A text's display width is at least its length: a long paragraph is no heading without counting its wide
    # characters (a regex pass over the whole text).
    if not text or "\n" in text or len(text) > _MAX_HEADING_WIDTH or display_width(text) > _MAX_HEADING_WIDTH:
        return False
    number = _NUMBERED.match(text)
    return number is not None and _CLAUSE.search(text, number.end()) is None


# A paragraph of a document: (page index, block index, paragraph index in the block).
ParagraphKey = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Sections:
    """The section of every block, the headings that open them, and the first and last body paragraph of each."""

    number: dict[tuple[int, int], int]  # (page index, block index) -> 1-based section, 0 before the first
    count: int
    first: dict[int, ParagraphKey]
    last: dict[int, ParagraphKey]
    # The blocks whose heading opens a section: a later text that repeats one (a copy glued to the
    # heading's text, pasted before it) does not make the section's own title a copy.
    headings: frozenset[tuple[int, int]] = frozenset()

    def of(self, page: int, block: int) -> int:
        return self.number.get((page, block), 0)


NO_SECTIONS = Sections({}, 0, {}, {})


def find_sections(doc: Document, spans: Mapping[tuple[int, int], list[tuple[int, int]]] | None = None) -> Sections:
    """The document's sections; one without section headings has none (count 0).

    ``spans``: the blocks' paragraph spans by (page index, block index), when
    the caller has them (:class:`docsan.text.paragraphs.BlockParagraphs`).
    """
    number: dict[tuple[int, int], int] = {}
    first: dict[int, ParagraphKey] = {}
    last: dict[int, ParagraphKey] = {}
    section = 0
    titles: set[str] = set()
    headings: set[tuple[int, int]] = set()
    for i, page in enumerate(doc.pages):
        for j, block in enumerate(page.blocks):
            heading = is_section_heading(block)
            if heading and (title := "".join(block.text.split())) not in titles:
                titles.add(title)
                headings.add((i, j))
                section += 1
            number[(i, j)] = section
            if not heading and block.kind is BlockKind.TEXT and block.text.strip():
                paragraphs = len(spans[(i, j)] if spans is not None else paragraph_spans(block.text))
                first.setdefault(section, (i, j, 0))
                last[section] = (i, j, paragraphs - 1)
    return Sections(number, section, first, last, frozenset(headings))


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where one copy of a repeated paragraph stands: its section, and whether it opens or closes it."""

    section: int
    opens: bool
    closes: bool


def occurrence(sections: Sections, first: ParagraphKey, last: ParagraphKey) -> Occurrence:
    """The occurrence of a paragraph (or of whole blocks) running from paragraph ``first`` to ``last``."""
    section = sections.of(first[0], first[1])
    return Occurrence(section, sections.first.get(section) == first, sections.last.get(section) == last)


# Weighted like neardup's min_chars (a CJK letter counting three): a clause or two. Notices that
# sections repeat are short; a long paragraph found in most sections is more likely pasted.
SHORT_CLAUSE = 300


def is_boilerplate(occurrences: Sequence[Occurrence], count: int, weight: int) -> bool:
    """Are these copies of one paragraph (at most one per section, ``weight`` long) a section's own boilerplate?

    "Really there once per section": in three sections or more (or both of
    two), and either opening every section it is in, or closing every one,
    or, for a clause or two (:data:`SHORT_CLAUSE`), in most sections (two in
    three). Copies pasted into a document land in a few sections at random
    places; what is pasted into a section after its closing clause does not
    make the clause any less its own.
    """
    sections = {o.section for o in occurrences}
    if count < 2 or 0 in sections or len(sections) != len(occurrences) or len(sections) < min(3, count):
        return False
    if weight <= SHORT_CLAUSE and 3 * len(sections) >= 2 * count:
        return True
    return all(o.opens for o in occurrences) or all(o.closes for o in occurrences)
