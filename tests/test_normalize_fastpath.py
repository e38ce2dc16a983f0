"""The normalize stage's fast path: text it calls plain is text the full path leaves alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.stages.normalize import (
    _ANY_REMOVABLE,
    _BLANK_LINES,
    _FTFY_NOT_NEEDED,
    _INVISIBLE_STARTS,
    _LINE_BREAKS,
    _OTHER_SPACES,
    _SPACE_RUN,
    Normalize,
    _Cleaner,
    _is_plain,
    _Tally,
)

# Characters at the edge of what counts as plain: spaces of every kind, line
# breaks, tabs, controls, CJK, typographic punctuation, mojibake material.
_EDGE = "aZ9 .\n\t\r\u3000\u00a0\u2028\x0c\x02\u200b\ufeff中文。「\u2019\u2014\u2026Ã©â€™"
# What plain text is made of: words of visible ASCII, CJK and the typographic
# punctuation ftfy leaves alone, joined by single spaces and line breaks.
_WORD = st.text(alphabet="aZ9.,;(#~中文。「」\u2018\u2019\u201c\u201d\u2013\u2014\u2026", min_size=1, max_size=6)
_PLAIN = st.lists(st.tuples(_WORD, st.sampled_from([" ", "\n", "\n\n"])), min_size=1, max_size=8).map(
    lambda parts: "".join(w + sep for w, sep in parts).rstrip()
)


def _full_path(text: str, keep_indent: bool, in_table: bool) -> tuple[str, _Tally, _Cleaner]:
    cleaner = _Cleaner(Normalize())
    tally = _Tally()
    return cleaner.clean(text, tally, keep_indent=keep_indent, in_table=in_table), tally, cleaner


@settings(max_examples=300, deadline=None)
@given(_PLAIN, st.booleans(), st.booleans())
def test_plain_text_is_left_unchanged_by_the_full_path(text: str, keep_indent: bool, in_table: bool) -> None:
    # Every example is plain (built so), so every example checks the claim.
    assert _is_plain(text)
    cleaned, tally, cleaner = _full_path(text, keep_indent, in_table)
    assert cleaned == text
    assert not tally.removed and not tally.fixes and not tally.tags
    assert not any(cleaner.stats.values())


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_EDGE, max_size=12), st.booleans(), st.booleans())
def test_text_the_full_path_would_change_is_never_called_plain(text: str, keep_indent: bool, in_table: bool) -> None:
    cleaned, tally, _ = _full_path(text, keep_indent, in_table)
    if cleaned != text or tally.removed or tally.fixes:
        assert not _is_plain(text)


def test_fast_path_covers_ordinary_text_and_not_its_neighbours() -> None:
    assert _is_plain("Total revenue (2013)\n12,345 中文报告")
    for text in ("two  spaces", "trailing \nline", " lead", "end\n", "nbsp\u00a0here", "tab\there", "a\n\n\nb"):
        assert not _is_plain(text), text


# Spaces, tabs and line breaks of every kind among letters, CJK, a removable character and mojibake material.
_SPACES = "a中 \t\n\r\x85\u2028\u2029\u00a0\u2003\u3000\u200bÃ©"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_SPACES, max_size=16))
def test_the_substring_tests_before_each_space_pattern_let_every_match_through(text: str) -> None:
    # _Cleaner.clean skips a pattern's scan when a substring test says it cannot match.
    if _SPACE_RUN.search(text):
        assert "  " in text or "\t" in text
    if _BLANK_LINES.search(text):
        assert "\n\n\n" in text
    if _LINE_BREAKS.search(text):
        assert "\r" in text or not text.isascii()
    if _OTHER_SPACES.search(text):
        assert not text.isascii()


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=_SPACES, max_size=16), st.booleans())
def test_the_space_steps_leave_nothing_for_another_round(text: str, keep_indent: bool) -> None:
    # A round that starts with nothing removable and nothing for ftfy ends without the test for another.
    if _INVISIBLE_STARTS.search(text) or not _FTFY_NOT_NEEDED.fullmatch(text):
        return
    spaced = _Cleaner(Normalize())._whitespace(_OTHER_SPACES.sub(" ", text), keep_indent=keep_indent)
    assert _FTFY_NOT_NEEDED.fullmatch(spaced) and not _ANY_REMOVABLE.search(spaced)
