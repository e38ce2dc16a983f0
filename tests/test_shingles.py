"""Shingles: non-ASCII punctuation separates words as ASCII punctuation does; non-ASCII letters stay in them."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.text.chardata import CJK_LETTERS
from docsan.text.shingles import _ASCII_WORD, _ascii_words, novel_length, shingle

# ASCII, the corpus's non-ASCII punctuation and symbols, accented and combining letters, CJK letters and
# punctuation, a CJK radical (script Han, not a letter), other scripts' digits and numerals.
_ALPHABET = "ab XY 12 .,-'\n’–•“”—®°§ éßﬁ\u0301 中文ひカ〇々⺀。， ١٢Ⅳ½²"
_SEPARATOR = regex.compile(rf"[^\x00-\x7f\p{{L}}\p{{M}}\p{{N}}{CJK_LETTERS}]")


def _fields(text: str) -> tuple:
    s = shingle(text)
    return s.shingles, s.normalized, s.has_ngrams, s.length


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60), st.text(alphabet=_ALPHABET, max_size=60))
def test_non_ascii_punctuation_separates_words_as_a_space_does(text: str, other: str) -> None:
    spaced = _SEPARATOR.sub(" ", text)
    assert _fields(text) == _fields(spaced)
    known = shingle(other + text[: len(text) // 2]).shingles
    assert novel_length(text, known) == novel_length(spaced, known)


def test_non_ascii_letters_stay_in_their_words() -> None:
    assert shingle("the naïve café’s crème brûlée").shingles == {
        "the naïve café",
        "naïve café s",
        "café s crème",
        "s crème brûlée",
    }
    assert shingle("don’t stop – now •").normalized == "don t stop now"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET + "\x00\t\x0b\x1c\x1f\x7f\x80\x85\xa0\u2028\udc80_~", max_size=80))
def test_ascii_words_are_the_ascii_word_pattern_s(text: str) -> None:
    # Whitespace of every kind, controls, NUL, a lone surrogate: all separate the words as the regex does.
    assert _ascii_words(text) == _ASCII_WORD.findall(text)
