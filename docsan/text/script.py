"""Character classes shared by the repeats and near-duplicate stages."""

from __future__ import annotations

import unicodedata

# CJK ideographs, kana, hangul, CJK symbols/punctuation and full-width forms:
# scripts written without spaces, where a line break inside a sentence is
# layout, not content.
CJK_CLASS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\u3000-\u303f\u30fc\uff00-\uffef"


def is_cjk(ch: str) -> bool:
    """A wide (East Asian full-width) character: CJK ideographs, kana, hangul, full-width forms."""
    return unicodedata.east_asian_width(ch) in ("W", "F")


def is_word_char(ch: str) -> bool:
    """A letter or digit of a space-separated script: cutting between two of these splits a word."""
    return ch.isalnum() and not is_cjk(ch)


def is_separator(ch: str) -> bool:
    """Whitespace or punctuation: what may end a repeated unit ("bye " in "bye bye bye")."""
    return ch.isspace() or unicodedata.category(ch)[0] in "PZ"
