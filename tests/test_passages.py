"""Later copies of passages in a document's running text (docsan.text.copies, docsan.text.passages).

The copies a paragraph-level comparison misses: split at other paragraph
boundaries, with a heading inline in one copy and on its own line in the
other, running over a page break, with a sentence inserted.
"""

from __future__ import annotations

import numpy as np
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from docsan.model import Block, Document, Page
from docsan.stages import neardup
from docsan.stages.neardup import NearDuplicates
from docsan.text.copies import Windows, find_copies
from docsan.text.passages import cut_spans, find_passages
from docsan.text.rolling_hash import prefix_hashes

ZH_A = "以上命令都带一个可选参数，用于指定导出的目录，如果不指定则使用当前目录作为默认的导出位置。"
ZH_B = "接着说明导出文件的格式要求，每个文件都必须包含完整的元数据信息以便后续的检索与核对工作顺利进行。"
EN_A = (
    "The provider must not have the requisite level of knowledge that the material is infringing. "
    "The knowledge standard is met either by actual knowledge or by awareness of facts or circumstances."
)
EN_B = "If the provider has the right and ability to control the infringing activity, it must not receive a benefit."


def entries(*paragraphs: str | None, keep: frozenset[int] = frozenset()) -> list:
    """One block per paragraph, keyed by its index; None is a separator (a table)."""
    return [(k, text, 0, k in keep) for k, text in enumerate(paragraphs)]


def removed(paragraphs: list[str | None], **kw) -> dict[int, list[str]]:
    """What find_passages would cut, as text per paragraph index."""
    out: dict[int, list[str]] = {}
    for p in find_passages(entries(*paragraphs), min_weight=kw.pop("min_weight", 120), **kw):
        for key, lo, hi in p.pieces:
            out.setdefault(key, []).append(paragraphs[key][lo:hi])
    return out


def codes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def test_a_later_copy_is_found_and_its_source_stays() -> None:
    text = "x" * 3 + "the first passage that is copied later on, word for word" + "y" * 40
    text += "the first passage that is copied later on, word for word" + "z" * 5
    c = codes(text)
    (copy,) = find_copies(c, window=8, weights=np.ones(c.size), min_weight=40)
    assert text[copy.start : copy.end] == text[copy.source : copy.source + copy.length]
    assert copy.source + copy.length <= copy.start
    assert copy.source < 10 and copy.length >= 50


def test_copies_split_at_other_paragraph_boundaries_are_cut_whatever_their_breaks() -> None:
    # The source: a paragraph, a heading of its own, a paragraph. The copy: one
    # paragraph with the heading inline (the "5.3.5 小节" case).
    paragraphs = [
        "前言。",
        ZH_A,
        "5.3.5 小节",
        ZH_B,
        "中间无关的内容，用来隔开两份拷贝。",
        f"{ZH_A}5.3.5 小节 {ZH_B}最后一句是新的。",
    ]
    cut = removed(paragraphs)
    assert list(cut) == [5]
    assert cut[5] == [f"{ZH_A}5.3.5 小节 {ZH_B}"]
    assert 1 not in cut and 3 not in cut  # the first occurrence stays


def test_a_copy_over_a_page_break_is_found_in_its_two_blocks() -> None:
    # Page 1 ends mid-copy, page 2 goes on: two blocks, one copy.
    paragraphs = [
        EN_A + " " + EN_B,
        "Something else entirely, to keep the copies apart.",
        EN_A[:60],
        EN_A[60:] + " " + EN_B,
    ]
    cut = removed(paragraphs)
    assert cut == {2: [EN_A[:60].strip()], 3: [(EN_A[60:] + " " + EN_B).strip()]}


def test_a_copy_is_narrowed_to_whole_sentences() -> None:
    # Both copies are followed by "The", and the copy's first sentence starts
    # differently: only whole sentences of the copy go.
    source = f"Intro sentence here. {EN_A} The end of the source."
    copy = f"Another beginning of knowledge that the material is infringing. {EN_A} The other end, which stays."
    cut = removed([source, "Filler between them.", copy])
    assert cut == {2: [EN_A]}


def test_an_inserted_sentence_keeps_its_place_and_the_pieces_around_it_go() -> None:
    fact = "Contract HT-2023-0417 sets a penalty of USD 12,850 for late delivery."
    sentences = EN_A.split(". ")
    copy = f"{sentences[0]}. {fact} {sentences[1]} {EN_B}"
    cut = removed([f"{EN_A} {EN_B}", "Filler between them.", copy], piece_weight=40)
    kept = cut_spans(copy, [(copy.index(t), copy.index(t) + len(t)) for t in cut[2]])
    assert kept == fact


def test_a_short_passage_split_by_an_inserted_sentence_goes_when_its_pieces_weigh_enough() -> None:
    # Neither piece alone weighs min_weight; the source runs on between them, so they are one copy.
    first = "The export job writes one archive per knowledge base every night."
    second = "Each archive holds the documents and their metadata."
    fact = "The Shanghai rack carries the label SH-B2-117."
    copy = f"{first} {fact} {second}"
    cut = removed([f"{first} {second}", "Filler between them.", copy], min_weight=90, piece_weight=40)
    assert cut == {2: [first, second]}


def test_a_light_copy_pasted_against_a_cut_copy_goes_with_it() -> None:
    # The bench's en-1p-2: a heading and its first sentence (lighter than min_weight) pasted
    # right after a copy of another place. Touching a copy that goes, it is part of the paste;
    # the same light repeat standing among new text stays (test_short_repeats_stay).
    heading = "5.1.2 Data sources"
    light = "The export job writes one archive per knowledge base every night."
    source = f"{EN_A} {EN_B}"
    paragraphs = [heading, f"{light} Something else follows it here.", source, f"{EN_A} {heading} {light}"]
    cut = removed(paragraphs, piece_weight=40)
    assert cut == {3: [EN_A, f"{heading} {light}"]}
    kept = [heading, f"{light} Something else follows it here.", source, f"{EN_A} Something new. {heading} {light}"]
    assert removed(kept, piece_weight=40) == {3: [EN_A]}


def test_lists_that_share_some_items_stay() -> None:
    # The IRS instructions' two lists of education benefits: two items alike, a different one
    # between them in each list. Light pieces with other text in both gaps are not one copy.
    shared = ["Excludable U.S. series EE and I savings bond interest from Form 8815.", ""]
    shared[1] = "Any nontaxable distribution of Coverdell education savings account earnings."
    source = f"You must reduce your qualified expenses by the following amounts.\n{shared[0]}\n"
    source += f"Nontaxable qualified tuition program earnings or distributions.\n{shared[1]}"
    copy = f"You must reduce the expenses by the following benefits.\n{shared[0]}\n"
    copy += f"Any nontaxable distribution of qualified tuition program earnings.\n{shared[1]}"
    assert removed([source, "Filler between them.", copy], piece_weight=40) == {}


def test_a_bullet_read_as_a_stop_starts_a_sentence() -> None:
    # DMCA's bullets come out of the symbol font as "!": "below. ! If the provider ...".
    bullets = f"! {EN_A} ! {EN_B} ! The provider must act at once upon proper notice of a claim."
    cut = removed([bullets, "Filler between them.", f"Then the copy: {EN_B} ! Something new."], min_weight=60)
    assert cut == {2: [EN_B]}


def test_a_bullet_read_as_a_stop_opening_a_paragraph_starts_a_sentence() -> None:
    # The bench's en-5p-1: the copied list's first item opens its paragraph with the "!" bullet.
    items = f"! {EN_B} ! The provider must act at once upon proper notice of a claim."
    cut = removed([items, "Filler between them.", "Something new.", f"! {EN_B} ! Something new."], min_weight=60)
    assert cut == {3: [EN_B]}


def test_short_repeats_stay() -> None:
    sentence = "See the instructions for line 8 on page 12."
    assert removed([f"{sentence} One thing.", "Another paragraph.", f"Two things. {sentence}"]) == {}


def test_tables_interrupt_the_running_text() -> None:
    half = len(EN_A) // 2
    # The copy's halves sit on either side of a table: no copy runs over it.
    assert removed([EN_A, "Filler.", EN_A[:half], None, EN_A[half:]]) == {}


def test_kept_paragraphs_are_sources_but_never_cut() -> None:
    paragraphs = [EN_A, "Filler between them.", EN_A, "More filler here.", EN_A]
    found = find_passages(entries(*paragraphs, keep=frozenset({2})), min_weight=120)
    assert {key for p in found for key, *_ in p.pieces} == {4}


def test_periodic_data_is_never_a_copy() -> None:
    # A column of one value read as text (ca_warn's "Layoff Permanent" down a page).
    column = "\n".join(["Layoff Permanent"] * 200)
    assert removed([column, "A paragraph between.", column]) == {}
    assert removed(["a" * 5000, "b" * 5000]) == {}


def test_a_block_split_after_a_comma_is_not_a_sentence_start() -> None:
    # The source paragraph ends at a comma (a block the extractor split): the
    # copy's part up to there is half a sentence and stays.
    head = "If, during the year, you were an eligible recipient of the assistance described in the notes above,"
    rest = " see the note above. Then enter the amount on the line that applies to you."
    assert removed([head, "Filler.", head + rest]) == {}


def test_cut_spans_leaves_one_seam() -> None:
    assert cut_spans("A. COPY. B", [(3, 9)]) == "A. B"
    assert cut_spans("A.\n\nCOPY\n\nB", [(4, 8)]) == "A.\n\nB"
    assert cut_spans("COPY rest", [(0, 4)]) == "rest"
    assert cut_spans("甲。乙丙。丁", [(2, 5)]) == "甲。丁"


def test_the_finder_is_exact_on_hash_collisions() -> None:
    # Random text: any reported copy must be a real copy.
    rng = np.random.default_rng(3)
    c = rng.integers(0, 4, 20000).astype(np.int64)
    for copy in find_copies(c, window=16, weights=np.ones(c.size), min_weight=30):
        assert np.array_equal(c[copy.start : copy.end], c[copy.source : copy.source + copy.length])
        assert copy.source + copy.length <= copy.start


def test_windows_from_the_hashes_before_barring_find_the_same_copies() -> None:
    # find_passages hashes its codes once, for the run search and the windows, then bars the periodic stretches
    rng = np.random.default_rng(9)
    before = rng.integers(0, 6, 30_000).astype(np.int64)
    before[20_000:20_400] = before[3_000:3_400]
    codes = before.copy()
    codes[3_100:3_500] = -1 - np.arange(3_100, 3_500)  # barred: a source no copy may come from any more
    common = {"window": 16, "weights": np.ones(codes.size), "min_weight": 30}
    shared = find_copies(codes, windows=Windows.of(codes, 16, prefix_hashes(before)), **common)
    assert shared == find_copies(codes, **common)
    assert shared != find_copies(before, **common)


_SENTENCES = [
    "The committee reviewed the quarterly budget in detail and asked for a monthly report.",
    "Spending on outside consultants exceeded the approved plan by a wide margin this year.",
    "项目组完成了现场爆破试验并提交了成果报告，报告共三十九页，指导了施工单位的安全施工。",
    "The database migration was delayed by two months because the vendor shipped late.",
    "负责引水隧洞爆破方案优化设计及爆破震动监测工作，开展现场爆破试验七场次。",
    "The finance team will test the new reporting system before the end of the quarter.",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, len(_SENTENCES) - 1), min_size=1, max_size=4), min_size=1, max_size=10))
# Found by this test: a later round's source runs over a sentence an earlier round cut.
@example(picks=[[0], [2], [2, 0, 0], [2, 1, 0], [2], [1]])
def test_every_sentence_stays_once_and_cleaning_twice_is_once(picks: list[list[int]]) -> None:
    doc = Document(tuple(Page(1, (Block(" ".join(_SENTENCES[i] for i in pick)),)) for pick in picks))
    stage = NearDuplicates()
    once = stage(doc)
    kept = "".join(once.document.text.split())
    original = "".join(doc.text.split())
    # Each removal names what it repeats, quoted from the document as it stood in the round that found it:
    # a later round may quote two sentences side by side that an earlier round's cut brought together,
    # but never text the document did not hold.
    for change in once.changes:
        assert change.duplicate_of is not None
        for source in change.duplicate_of.split(" … "):
            for sentence in regex.split(r"(?<=[.。])\s*", source.rstrip("…")):
                assert "".join(sentence.split()) in original
    # Every sentence that was there is still there once.
    for sentence in {s for pick in picks for s in (_SENTENCES[i] for i in pick)}:
        assert "".join(sentence.split()) in kept
    again = stage(once.document)
    assert again.document.text == once.document.text


class _Forgetful(dict):
    """A dict that keeps nothing: every lookup misses."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


_MEMO = neardup._Memo


def forgetful_memo() -> neardup._Memo:
    """What neardup's rounds share, keeping nothing: put in place of ``neardup._Memo``, every round
    computes everything again (the full recomputation)."""
    return _MEMO(**{name: _Forgetful() for name in _MEMO.__dataclass_fields__})


# A paragraph: sentences; a block: paragraphs (a blank line between them) or a list of short lines; a page:
# blocks. A round can then cut a paragraph out of a block, or a passage out of several, and leave others.
_PARAGRAPH = st.lists(st.integers(0, len(_SENTENCES) - 1), min_size=1, max_size=3).map(
    lambda pick: " ".join(_SENTENCES[i] for i in pick)
)
_BLOCK = st.one_of(
    st.lists(_PARAGRAPH, min_size=1, max_size=3).map("\n\n".join),
    st.just("Name\nAddress\nPhone"),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_BLOCK, min_size=1, max_size=3), min_size=2, max_size=6))
@example(
    pages=[
        [_SENTENCES[0]],
        [_SENTENCES[2]],
        [" ".join(_SENTENCES[i] for i in (2, 0, 0))],
        [" ".join(_SENTENCES[i] for i in (2, 1, 0))],
        [_SENTENCES[2]],
        [_SENTENCES[1]],
    ]
)
def test_what_the_rounds_share_changes_nothing(pages: list[list[str]]) -> None:
    # The rounds after a cut passage reuse the last one's passages, verify's scores, the units of the
    # pages they left alone and the facts of unchanged block texts (neardup._Memo); a stage whose memo
    # forgets everything is the full recomputation, and must give the same result.
    doc = Document(tuple(Page(n, tuple(map(Block, blocks))) for n, blocks in enumerate(pages, 1)))
    stage = NearDuplicates()
    shared = stage(doc)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(neardup, "_Memo", forgetful_memo)
        full = stage(doc)
    assert shared.document == full.document
    assert shared.changes == full.changes
    assert shared.stats == full.stats


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.text(alphabet="ab .", min_size=20, max_size=60), min_size=1, max_size=3),
    st.integers(1, 40),
)
def test_repeat_within_finds_every_repeated_window(pieces: list[str], distance: int) -> None:
    seq = codes("".join(pieces))
    if seq.size < 16:
        return
    windows = Windows.of(seq, 16)
    at = [tuple(seq[k : k + 16]) for k in range(seq.size - 15)]
    pairs = [(x, y) for x in range(len(at)) for y in range(x + 1, len(at)) if at[x] == at[y]]
    assert windows.repeat_within() == bool(pairs)
    assert windows.repeat_within(distance) == any(y - x <= distance for x, y in pairs)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.text(alphabet="ab .", min_size=20, max_size=60), min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=1, max_size=200),
)
def test_first_occurrences_are_the_first_free_equal_window(pieces: list[str], bars: list[bool]) -> None:
    # Windows keeps only the windows whose hash another shares: every other one is still its own first.
    seq = codes("".join(pieces))
    if seq.size < 16:
        return
    count = seq.size - 15
    barred = np.array([bars[k % len(bars)] for k in range(count)])
    at = [tuple(seq[k : k + 16]) for k in range(count)]
    expected = [
        k if barred[k] else next(x for x in range(k + 1) if not barred[x] and at[x] == at[k]) for k in range(count)
    ]
    assert Windows.of(seq, 16).first_occurrences(barred).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.lists(st.integers(0, len(_SENTENCES) - 1), min_size=1, max_size=3).map(
                lambda pick: " ".join(_SENTENCES[i] for i in pick)
            ),
            st.text(alphabet="ab 1.", min_size=1, max_size=120),
            # Periodic data (period 2 to 18) inside prose, which a copy of the prose must leave out.
            st.tuples(
                st.sampled_from(_SENTENCES),
                st.sampled_from(["ab", "12.5 ", "Layoff ", "Layoff Permanent "]),
                st.integers(2, 12),
            ).map(lambda t: f"{t[0]} {t[1] * t[2]} {t[0]}"),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_the_searches_skipped_where_no_window_repeats_find_nothing(paragraphs: list[str | None]) -> None:
    # find_passages skips the copy search where no window repeats and the periodic rule where none repeats
    # within _PERIODIC positions; told that one always does, it searches everything, and finds the same.
    found = find_passages(entries(*paragraphs), min_weight=120, piece_weight=40)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Windows, "repeat_within", lambda self, distance=None: True)
        full = find_passages(entries(*paragraphs), min_weight=120, piece_weight=40)
    assert found == full
