"""The reconstructed incident TextSanitizer behaves as the incident report's code does."""

from __future__ import annotations

from bench.seed_sanitizer import TextSanitizer, remove_hidden_chars, truncate_by_paragraph


def test_hidden_chars_removed_but_lines_kept():
    assert remove_hidden_chars("a\x00b\x0cc\x1fd\n\te") == "abcd\n\te"


def test_regex_collapses_four_repeats_and_damages_numbers():
    s = TextSanitizer(count=len)
    assert s.clean("abcabcabcabc") == "abc"
    # Three copies are left alone: the regex wants four or more.
    assert s.clean("abcabcabc") == "abcabcabc"
    # The known flaw: a digit run is a "repeat" too.
    assert s.clean("capital 10000 yuan") == "capital 10 yuan"


def test_truncation_keeps_whole_paragraphs_within_the_limit():
    text = "\n\n".join(["aaaa", "bbbb", "cccc"])
    assert truncate_by_paragraph(text, 10, len) == "aaaa\n\nbbbb"
    assert truncate_by_paragraph(text, 3, len) == ""


def test_default_count_is_deepseek_tokens():
    from bench.common import count_tokens

    s = TextSanitizer()
    text = "\n\n".join(["第一段文字。"] * 5)
    assert count_tokens(s.clean(text)) <= 8000
    assert s.count is count_tokens
