"""The normalize stage's fast path: text it calls plain is text the full path leaves alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.stages.normalize import Normalize, _Cleaner, _is_plain, _Tally

# Characters at the edge of what counts as plain: spaces of every kind, line
# breaks, tabs, controls, CJK, typographic punctuation, mojibake material.
_EDGE = "aZ9 .\n\t\r\u3000\u00a0\u2028\x0c\x02\u200b\ufeff中文。「\u2019\u2014\u2026Ã©â€™"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_EDGE, max_size=12), st.booleans(), st.booleans())
def test_plain_text_is_left_unchanged_by_the_full_path(text: str, keep_indent: bool, in_table: bool) -> None:
    cleaner = _Cleaner(Normalize())
    tally = _Tally()
    cleaned = cleaner.clean(text, tally, keep_indent=keep_indent, in_table=in_table)
    if _is_plain(text):
        assert cleaned == text
        assert not tally.removed and not tally.fixes and not tally.tags
        assert not any(cleaner.stats.values())


def test_fast_path_covers_ordinary_text_and_not_its_neighbours() -> None:
    assert _is_plain("Total revenue (2013)\n12,345 中文报告")
    for text in ("two  spaces", "trailing \nline", " lead", "end\n", "nbsp\u00a0here", "tab\there", "a\n\n\nb"):
        assert not _is_plain(text), text
