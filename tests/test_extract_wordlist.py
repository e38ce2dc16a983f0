"""The text-layer scorer's word list, read straight from wordfreq's file, is wordfreq's own list."""

from __future__ import annotations

import pytest
from wordfreq import top_n_list

from docsan.extract.textlayer_quality import ENGLISH_WORDS, top_words


@pytest.mark.parametrize("lang, n", [("en", ENGLISH_WORDS), ("en", 1_000), ("fr", 2_000)])
def test_word_list_is_wordfreqs_top_n_list(lang: str, n: int) -> None:
    assert top_words(lang, n) == top_n_list(lang, n)
