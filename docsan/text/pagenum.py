"""Recognise a line that is nothing but a page number, in the forms printers use.

Two strengths of evidence come out of :func:`parse_page_number`:

* ``explicit`` forms say "page" in words (``Page 3 of 10``, ``第 3 页 共 10 页``):
  at a page edge they are page numbers on their own;
* bare forms (``3``, ``- 3 -``, ``-3-``, ``3 / 81``, ``xiv``) are only numbers:
  the furniture stage accepts them only when the numbering agrees with the
  page order of at least one other page (see ``docsan.stages.furniture``).

Every pattern is anchored, has no nested quantifiers and bounded digit runs,
so matching is linear in the line length.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

_EXPLICIT = regex.compile(
    r"(?:page|pg\.?|p\.)\s{0,3}(\d{1,5})(?:\s{0,3}(?:of|/)\s{0,3}\d{1,5})?",
    regex.IGNORECASE,
)
_ZH = regex.compile(r"第\s{0,3}(\d{1,5})\s{0,3}页(?:\s{0,3}[，,]?\s{0,3}共\s{0,3}\d{1,5}\s{0,3}页)?")
# "3", "- 3 -", "-3-", "— 3 —", "[3]", "(3)", "3 / 81", "3 | Title" is not here (has letters).
_BARE = regex.compile(r"[-–—\[(]?\s{0,3}(\d{1,5})\s{0,3}[-–—\])]?")
_OF_TOTAL = regex.compile(r"(\d{1,5})\s{0,3}/\s{0,3}\d{1,5}")
_ROMAN = regex.compile(r"[-–—]?\s{0,3}([ivxlcdm]{1,8})\s{0,3}[-–—]?", regex.IGNORECASE)
_MAX_ROMAN = 300
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100, "d": 500, "m": 1000}


@dataclass(frozen=True, slots=True)
class PageNumber:
    value: int
    explicit: bool
    roman: bool = False


def roman_to_int(text: str) -> int | None:
    """Value of a canonical lower- or upper-case roman numeral; None for non-canonical strings."""
    s = text.lower()
    total = 0
    for i, ch in enumerate(s):
        v = _ROMAN_VALUES[ch]
        total += -v if i + 1 < len(s) and _ROMAN_VALUES[s[i + 1]] > v else v
    # The round-trip check rejects words made of roman letters ("dim", "civic");
    # the cap rejects canonical-looking words ("mix" = 1009): front matter is short.
    return total if 0 < total <= _MAX_ROMAN and _int_to_roman(total) == s else None


def _int_to_roman(n: int) -> str:
    out = []
    for value, sym in (
        (1000, "m"),
        (900, "cm"),
        (500, "d"),
        (400, "cd"),
        (100, "c"),
        (90, "xc"),
        (50, "l"),
        (40, "xl"),
        (10, "x"),
        (9, "ix"),
        (5, "v"),
        (4, "iv"),
        (1, "i"),
    ):
        count, n = divmod(n, value)
        out.append(sym * count)
    return "".join(out)


def parse_page_number(line: str) -> PageNumber | None:
    """The page number a whole line states, or None when the line says anything else."""
    s = line.strip()
    if not s or len(s) > 40:
        return None
    for pattern in (_EXPLICIT, _ZH):
        m = pattern.fullmatch(s)
        if m:
            return PageNumber(int(m.group(1)), explicit=True)
    for pattern in (_BARE, _OF_TOTAL):
        m = pattern.fullmatch(s)
        if m:
            return PageNumber(int(m.group(1)), explicit=False)
    m = _ROMAN.fullmatch(s)
    if m:
        value = roman_to_int(m.group(1))
        if value is not None:
            return PageNumber(value, explicit=False, roman=True)
    return None
