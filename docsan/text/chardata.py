"""Named character classes: what "invisible", "CJK", "wide" and "word character" mean, once.

Data apart from logic, in ftfy's manner: every stage, the extractor's joining
and the budget's ranking take their character classes from here, so the stage
that removes invisible characters, the stage that joins CJK lines and the
tests that check the output all agree. Every class is a plain ``regex``
character class body, so patterns built from them stay linear-time.

Two notions that look alike are kept apart on purpose:

* **CJK** (:data:`CJK`, :func:`is_cjk`): scripts written without spaces
  between words, where a line break or a space between two characters is
  layout, not content. Hangul is not in it: Korean separates words with spaces.
* **wide** (:func:`is_wide`, :func:`display_width`): East Asian Wide and
  Fullwidth characters, two columns on a page. That includes Hangul and most
  emoji; it is what widths on a page are estimated from.
"""

from __future__ import annotations

import unicodedata

import regex

# The characters normalize removes, grouped by the name a report shows, as
# inclusive (first, last) code point ranges. Each is a way to hide text from
# a human reader while a model still reads it (prompt smuggling), or noise
# that only wastes tokens.
INVISIBLE_CLASSES: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    # C0 except \t and \n (\x0c, the form feed, is handled apart: it is a
    # page/paragraph break, not noise), DEL, and C1. \r is included as a
    # fallback: ftfy turns every line break into \n before this runs.
    ("control character", ((0x00, 0x08), (0x0B, 0x0B), (0x0D, 0x1F), (0x7F, 0x9F))),
    ("soft hyphen", ((0xAD, 0xAD),)),
    ("zero-width character", ((0x200B, 0x200D),)),
    ("bidirectional control", ((0x202A, 0x202E), (0x2066, 0x2069))),
    ("invisible format character", ((0x2060, 0x2064),)),
    ("byte order mark", ((0xFEFF, 0xFEFF),)),
    ("replacement character", ((0xFFFD, 0xFFFD),)),
    ("tag character", ((0xE0000, 0xE007F),)),
    # Never valid in text that can be written as UTF-8; a lone surrogate
    # would make the output file unwritable.
    ("unpaired surrogate", ((0xD800, 0xDFFF),)),
)


def _class_body(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" if lo != hi else f"\\U{lo:08x}" for lo, hi in ranges)


# A regex class body with every removable code point (the form feed excluded).
REMOVABLE = "".join(_class_body(ranges) for _, ranges in INVISIBLE_CLASSES)

# Variation selectors: VS1-16 (U+FE00-U+FE0F) and the ideographic VS17-256 (U+E0100-U+E01EF).
# They are removed (and reported) except where they select a glyph: an ideographic variation
# sequence (one of U+E0100-U+E01EF after an ideograph), VS15/VS16 after an emoji-capable
# character, VS1-14 after a non-ASCII base. Anywhere else, and any second selector in a row,
# they only carry bits: "variant smuggling" spells ASCII as U+E0100 + byte.
VARIATION_SELECTOR_RANGES: tuple[tuple[int, int], ...] = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
VARIATION_SELECTORS = _class_body(VARIATION_SELECTOR_RANGES)

# Letters of the scripts written without spaces: Han ideographs, kana,
# Bopomofo, and the prolonged sound mark U+30FC (a kana letter of script
# Common). What tokenisers cut into characters (shingles, BM25 bigrams).
CJK_LETTERS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Bopomofo}\u30fc"

# Characters written without spaces between them: the letters above, CJK
# punctuation (U+3001-U+303F, not the ideographic space U+3000, which is
# layout), CJK compatibility/vertical forms, and full-width forms. Hangul is
# deliberately absent: Korean separates words with spaces.
# How much a CJK letter weighs against a Latin letter or a digit when text is measured for
# "enough to matter": a Chinese word is one or two characters, an English one about five
# letters, so at three the same amount of text weighs about the same in both scripts.
CJK_WEIGHT = 3

CJK = CJK_LETTERS + r"\u3001-\u303f\ufe30-\ufe4f\uff01-\uff60\uffe0-\uffe6"
_CJK_CHAR = regex.compile(rf"[{CJK}]")
# CJK and full-width punctuation (not full-width letters or digits): it carries
# its own spacing, so no space is written on either side of it.
CJK_PUNCTUATION = r"\u3001-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff60"


def is_cjk(ch: str) -> bool:
    """True for a character of :data:`CJK`: no space is written next to it, a line break beside it is layout."""
    return bool(ch) and _CJK_CHAR.match(ch) is not None


def invisible_slug(name: str) -> str:
    """A class name as one word of a code or a statistics key (``zero-width character`` -> ``zero_width_character``)."""
    return name.replace(" ", "_").replace("-", "_")


def invisible_class(char: str) -> str:
    """The report name of a removable character (``"control character"``...)."""
    cp = ord(char)
    if cp == 0x0C:
        return "form feed"
    for name, ranges in (*INVISIBLE_CLASSES, ("variation selector", VARIATION_SELECTOR_RANGES)):
        if any(lo <= cp <= hi for lo, hi in ranges):
            return name
    raise ValueError(f"U+{cp:04X} is not a removable character")


# East Asian Wide and Fullwidth characters: two columns on a page.
_WIDE = regex.compile(r"[\p{East_Asian_Width=Wide}\p{East_Asian_Width=Fullwidth}]")


def is_wide(ch: str) -> bool:
    """An East Asian Wide or Fullwidth character (CJK, Hangul, most emoji): about one em wide when printed."""
    return unicodedata.east_asian_width(ch) in ("W", "F")


def display_width(text: str) -> int:
    """Columns ``text`` takes on a page: wide (CJK) characters count two.

    Reflow compares line lengths to tell a wrapped line from a short one;
    counting characters would make a full line of Chinese look half as long
    as a full line of English.
    """
    return len(text) if text.isascii() else len(text) + len(_WIDE.findall(text))


def is_word_char(ch: str) -> bool:
    """A letter or digit of a space-separated script: cutting between two of these splits a word."""
    return ch.isalnum() and not is_cjk(ch)


def is_separator(ch: str) -> bool:
    """Whitespace or punctuation: what may end a repeated unit ("bye " in "bye bye bye")."""
    return ch.isspace() or unicodedata.category(ch)[0] in "PZ"
