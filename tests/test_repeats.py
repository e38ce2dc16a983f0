"""The repeats stage: exact tandem repeats collapse, legitimate text survives, nothing else changes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.config import ExtractConfig
from docsan.extract import load
from docsan.model import BBox, Block, BlockKind, Document, Page, Table
from docsan.stages import build_stage
from docsan.stages.repeats import Repeats
from docsan.text import rolling_hash
from docsan.text.chardata import is_cjk, is_separator
from docsan.text.rolling_hash import _BASE, _MOD, PROBE, doubled_hashes, lce, prefix_hashes, short_lces, window_hashes
from docsan.text.runs import find_runs

STAGE = Repeats()


def _doc(*texts: str, kind: BlockKind = BlockKind.TEXT) -> Document:
    return Document(pages=(Page(1, tuple(Block(t, kind=kind) for t in texts)),))


def clean(text: str, stage: Repeats = STAGE) -> str:
    return stage(_doc(text)).document.pages[0].blocks[0].text


def _codes(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


# --- the run finder against a brute-force oracle -------------------------------------------------


def _brute_runs(s: str, max_period: int) -> set[tuple[int, int, int]]:
    runs = set()
    for p in range(1, max_period + 1):
        i = 0
        while i < len(s) - p:
            j = i
            while j < len(s) - p and s[j] == s[j + p]:
                j += 1
            if j - i >= p:
                runs.add((i, j + p, p))
            i = max(j, i + 1)
    return {r for r in runs if not any(q < r[2] and a <= r[0] and r[1] <= b for a, b, q in runs)}


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="abc", max_size=60),
    st.text(alphabet="abcd", min_size=16, max_size=40),
    st.integers(2, 4),
    st.integers(0, 60),
)
def test_find_runs_matches_brute_force(noise: str, unit: str, copies: int, at: int) -> None:
    at = min(at, len(noise))
    s = noise[:at] + unit * copies + noise[at:]
    got = {(r.start, r.end, r.period) for r in find_runs(_codes(s), max_period=64)}
    expected = _brute_runs(s, 64)
    assert got <= expected  # never a run that is not there
    assert {r for r in expected if r[2] < 16} <= got  # small periods: exact
    # the planted long unit is found (as itself or as its primitive root)
    assert any(a <= at and at + len(unit) * copies <= b for a, b, _ in got)


def test_long_unit_made_of_short_runs_is_found() -> None:
    # every anchor window of the period-16 unit lies in a short run ("aaaaaa", "baabbaab")
    s = "aa" + "aaaaaabaabbaabaa" * 2
    assert (0, 34, 16) in {(r.start, r.end, r.period) for r in find_runs(_codes(s), max_period=64)}


def test_find_runs_respects_separators() -> None:
    codes = _codes("abcabc|abcabc")
    codes[6] = -1
    assert {(r.start, r.end, r.period) for r in find_runs(codes, max_period=8)} == {(0, 6, 3), (7, 13, 3)}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(alphabet="ab", max_size=12), st.text(alphabet="abc", min_size=16, max_size=70)),
        min_size=1,
        max_size=4,
    )
)
def test_long_runs_beside_separators_are_found(stretches: list[tuple[str, str]]) -> None:
    # Anchors whose stretch ends before their comparison window are skipped: a run that ends right at a
    # separator (or at the end) is still found, and no run crosses one.
    texts = [noise + unit * 2 for noise, unit in stretches]
    codes = _codes("|".join(texts))
    codes[codes == ord("|")] = -1 - np.arange(len(texts) - 1)
    got = {(r.start, r.end, r.period) for r in find_runs(codes, max_period=256)}
    base = 0
    for text, (noise, _) in zip(texts, stretches, strict=True):
        expected = {(a + base, b + base, p) for a, b, p in _brute_runs(text, 256)}
        inside = {r for r in got if base <= r[0] < base + len(text)}
        assert inside <= expected  # within its stretch, never across a separator
        assert any(a <= base + len(noise) and base + len(text) <= b for a, b, _ in inside)
        base += len(text) + 1


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(alphabet="abc", max_size=40), st.text(alphabet="abcd", min_size=1, max_size=20)),
        min_size=1,
        max_size=5,
    ),
    st.integers(2, 6),
    st.integers(1, 80),
    st.sampled_from([32, 64]),
)
def test_find_runs_with_min_length_finds_the_long_runs(
    stretches: list[tuple[str, str]], copies: int, min_length: int, max_period: int
) -> None:
    # With min_length the small periods are compared at a few positions only (and every run shorter than
    # the octaves' tests ask for is skipped): the runs reported are still exactly the long ones of a full
    # search, separators included.
    texts = [noise + unit * copies for noise, unit in stretches]
    codes = _codes("|".join(texts))
    codes[codes == ord("|")] = -1 - np.arange(len(texts) - 1)
    full = [r for r in find_runs(codes, max_period=max_period) if r.length >= min_length]
    assert find_runs(codes, max_period=max_period, min_length=min_length) == full


def test_doubled_hashes_are_the_window_hashes() -> None:
    # find_runs derives each octave's window hashes from the last one's: they must be the same residues
    rng = np.random.default_rng(7)
    codes = rng.integers(-50, 0x10FFFF, 5_000).astype(np.int64)  # negatives: separators
    prefix, inv = prefix_hashes(codes)
    hashes, width = window_hashes(prefix, inv, 3, slice(0, codes.size - 2)), 3
    while 2 * width <= codes.size:
        hashes, width = doubled_hashes(hashes, width), 2 * width
        assert np.array_equal(hashes, window_hashes(prefix, inv, width, slice(0, codes.size - width + 1)))


def test_prefix_hashes_from_the_shared_powers_are_the_computed_ones() -> None:
    # Every document reads its powers from one table, grown as longer ones come; past its limit they are computed
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 1_000, 5, 4_097, 70_000, rolling_hash._TABLE_MAX + 3):
        codes = rng.integers(-50, 0x10FFFF, n).astype(np.int64)
        prefix, inv = prefix_hashes(codes)
        expected = np.concatenate(([0], np.cumsum(codes % _MOD * rolling_hash._doubled_powers(_BASE, n) % _MOD)))
        assert np.array_equal(prefix, expected % _MOD)
        assert np.array_equal(inv, rolling_hash._doubled_powers(rolling_hash._INV_BASE, n))
        assert inv.flags.writeable == (n > rolling_hash._TABLE_MAX)  # a view of the shared table is read only


def test_find_runs_with_the_callers_hashes_finds_the_same_runs() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 1_000, 20_000).astype(np.int64)
    codes[5_000:5_400] = np.tile(rng.integers(0, 1_000, 20), 20)  # periods the hash octaves find
    codes[9_000:9_300] = np.tile(rng.integers(0, 1_000, 37), 9)[:300]
    runs = find_runs(codes, max_period=64)
    assert {(5_000, 5_400, 20), (9_000, 9_300, 37)} <= {(r.start, r.end, r.period) for r in runs}
    assert find_runs(codes, max_period=64, hashes=prefix_hashes(codes)) == runs


def test_short_lces_are_the_short_lces() -> None:
    # find_runs extends its hash hits by the whole-array probe and finishes only the long ones with lce
    rng = np.random.default_rng(11)
    codes = rng.integers(0, 3, 4_000).astype(np.int64)
    codes[1_000:1_300] = codes[1_500:1_800]  # extensions longer than the probe
    i = rng.integers(0, codes.size, 3_000)
    i[:50] = np.arange(1_000, 1_050)
    j = np.minimum(i + rng.integers(1, 600, i.size), codes.size)
    j[:50] = i[:50] + 500
    limit = np.minimum(codes.size - j, rng.integers(0, 400, i.size))
    got = short_lces(codes, i, j, limit)
    expected = np.array([lce(codes, a, b, m) for a, b, m in zip(i.tolist(), j.tolist(), limit.tolist(), strict=True)])
    assert np.array_equal(got, np.where(expected < PROBE, expected, -1))
    assert (got[:50] == -1).any() and (got >= 0).any()


# --- what collapses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("项目经验项目经验项目经验", "项目经验"),
        ("哈哈哈哈哈哈", "哈哈"),  # reduplication is kept as the unit
        ("嘻嘻嘻嘻嘻嘻是一无所有", "嘻嘻是一无所有"),
        ("谢谢你谢谢你谢谢你", "谢谢你"),
        ("click here click here click here", "click here"),
        ("foo bar bar bar baz", "foo bar baz"),
        ("Hello world. Hello world. Hello world. Bye", "Hello world. Bye"),
        ("😀😀😀😀😀😀 ok", "😀😀 ok"),
        ("价格 price价格 price价格 price价格 price", "价格 price"),
        ("aaaaaaaaaa", "a"),
        ("ANHUI LTD.ANHUI LTD.ANHUI LTD.ANHUI LTD.", "ANHUI LTD."),
    ],
)
def test_collapses(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "谢谢 看看 天天 哈哈哈 嘻嘻嘻",  # reduplication and three-character laughter
        "aa 100000 1.1.1.1 121212 ........ . . . . . —— ==== ****",  # digits, leaders, rules
        "0xFFFFFFFF #FAFAFA hahaha AAA Brrrrrrrrr",  # inside a word, or too narrow
        "very very good, bye bye",  # two copies
        "2020 2020 2020",  # no letter: data
        "目录。。。。。。．．．．．．12",  # full-width leaders
    ],
)
def test_legitimate_text_survives(text: str) -> None:
    assert clean(text) == text


def test_lone_surrogates_do_not_break_the_stage() -> None:
    # json.loads('"\\ud83d"') yields one; the stage may run before normalize
    assert clean("\ud83d abc abc abc abc") == "\ud83d abc"


def test_wrapped_cjk_run_is_one_run() -> None:
    # the resume's line: the run continues across the soft wrap
    text = "项目经验" * 7 + "项目经\n验" + "项目经验" * 4 + "项目"
    assert clean(text) == "项目经验项目"


def test_lines_without_geometry_need_three_copies() -> None:
    assert clean("Total due\nTotal due\nTotal due\nend") == "Total due\nend"
    assert clean("Total due\nTotal due\nend") == "Total due\nTotal due\nend"


def test_table_column_in_pdf_block_is_not_overprint() -> None:
    # a column of equal values: as tall as its three lines, so not fake bold
    tall = Block("Domestic\nDomestic\nDomestic", bbox=BBox(20, 100, 60, 136), font_size=9.0)
    flat = Block("Domestic\nDomestic\nDomestic", bbox=BBox(20, 200, 60, 209), font_size=9.0)
    row = Block("Domestic\nDomestic\nDomestic", bbox=BBox(20, 300, 300, 309), font_size=9.0)
    out = STAGE(Document(pages=(Page(1, (tall, flat, row)),))).document.pages[0].blocks
    assert [b.text for b in out] == ["Domestic\nDomestic\nDomestic", "Domestic", "Domestic\nDomestic\nDomestic"]


def test_fake_bold_seams_without_blank_lines() -> None:
    """The cover's 股票代码 block after normalize dropped its blank lines: the box is still tall."""
    box = BBox(225, 400, 379, 544)
    seamed = Block("股票代码\n股票代码\n股票代码\n股票代码：300218\n300218\n300218\n300218", bbox=box, font_size=18.0)
    column = Block("1.00\n1.00\n1.00\n1.00\n2.50\n2.50\n2.50\n2.50", bbox=box, font_size=18.0)
    labels = Block("Retired\nRetired\nRetired\nHomemaker\nHomemaker\nHomemaker", bbox=box, font_size=18.0)
    out = STAGE(Document(pages=(Page(1, (seamed, column, labels)),))).document.pages[0].blocks
    assert out[0].text == "股票代码：300218"
    assert out[1].text == column.text
    assert out[2].text == labels.text


def test_overprinted_blocks_dropped() -> None:
    a = Block("年度报告", bbox=BBox(10, 10, 90, 30), font_size=20.0)
    b = Block("年度报告", bbox=BBox(10.3, 10.2, 90.3, 30.2), font_size=20.0)
    elsewhere = Block("年度报告", bbox=BBox(10, 400, 90, 420), font_size=20.0)
    result = STAGE(Document(pages=(Page(1, (a, b, elsewhere)),)))
    assert [x.text for x in result.document.pages[0].blocks] == ["年度报告", "年度报告"]
    assert result.changes[0].code == "repeats.overprinted_block"
    assert result.changes[0].reason == "overprinted block (drawn 2x)"


def test_tables_are_exempt() -> None:
    grid = Table.from_strings([["a", "b"], ["x", "y"]])
    text = "项目经验项目经验项目经验"
    doc = Document(pages=(Page(1, (Block(text, kind=BlockKind.TABLE, table=grid),)),))
    assert STAGE(doc).document.pages[0].blocks[0].text == text


def test_change_reports_span_and_replacement() -> None:
    result = STAGE(_doc("前言 项目经验项目经验项目经验 结束"))
    (change,) = result.changes
    assert change.stage == "repeats" and change.code == "repeats.phrase" and change.kind == "removed"
    assert change.reason == "repeated 3x: phrase"
    assert change.text == "项目经验项目经验项目经验"
    assert change.replacement == "项目经验"
    assert result.stats["chars_removed"] == 8


def test_input_not_mutated_and_deterministic() -> None:
    doc = _doc("abc abc abc abc", "no repeats here")
    first = STAGE(doc)
    second = STAGE(doc)
    assert doc.pages[0].blocks[0].text == "abc abc abc abc"
    assert first.document == second.document
    assert first.document.pages[0].blocks[1] is doc.pages[0].blocks[1]  # untouched blocks shared


def test_options_from_config() -> None:
    stage = build_stage("repeats", {"min_copies": 2})
    assert clean("very very good", stage) == "very good"


# --- properties -------------------------------------------------------------------------------------

_ALPHABET = st.sampled_from(list("ab c项目。\n1😀"))


def _is_subsequence(small: str, big: str) -> bool:
    it = iter(big)
    return all(ch in it for ch in small)


def _has_collapsible(text: str) -> bool:
    """Brute force: some unit of >= 2 characters three times in a row (the last may lack its
    separator), or one character three times (the least any rule collapses). A line break
    between two CJK characters is a soft wrap and does not count."""
    s = "".join(
        ch
        for i, ch in enumerate(text)
        if not (ch == "\n" and 0 < i < len(text) - 1 and is_cjk(text[i - 1]) and is_cjk(text[i + 1]))
    )
    n = len(s)
    for p in range(1, n // 2 + 1):
        for i in range(n - 2 * p + 1):
            unit = s[i : i + p]
            if s[i + p : i + 2 * p] != unit:
                continue
            if s[i + 2 * p : i + 3 * p] == unit:
                return True
            if p > 1 and is_separator(unit[-1]) and s[i + 2 * p : i + 3 * p - 1] == unit[:-1]:
                return True
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join), st.integers(0, 4))
def test_properties(text: str, repeat: int) -> None:
    text = text + text[-5:] * repeat  # plant repeats often
    out = clean(text) if len(text) >= 2 else text
    assert _is_subsequence(out, text)  # only deletions
    assert clean(out) == out if len(out) >= 2 else True  # idempotent
    if not _has_collapsible(text):
        assert out == text


# --- the corpus ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fakebold(corpus):
    return load(corpus / "zh_anli_2011_annual_report_cover_fakebold.pdf", ExtractConfig(ocr="never"))


def test_fakebold_cover_collapsed(fakebold) -> None:
    before = fakebold.text
    result = STAGE(fakebold)
    after = result.document.text
    for s in [
        "安徽安利合成革股份有限公司",
        "ANHUI ANLI ARTIFICIAL LEATHER CO.,LTD.",
        "300218",
        "年年度报告",
        "股票简称",
    ]:
        assert before.count(s) == 4
        assert after.count(s) == 1, s
    assert "股票代码：300218" in after
    assert "披露日期：2012 年3 月27 日" in after
    assert all(c.code == "repeats.fake_bold" and c.reason.startswith("repeated 4x") for c in result.changes)


def test_resume_token_run(corpus) -> None:
    doc = load(corpus / "zh_resume_near_duplicate_paragraphs_2p.pdf", ExtractConfig(ocr="never"))
    after = STAGE(doc).document.text
    assert "项目经验项目经验" in doc.text
    assert "项目经验项目经验" not in after
    assert "项目经验" in after
    assert "嘻嘻是一无所有" in after
    # the three project descriptions are not tandem repeats: they stay for neardup
    assert after.count("丹巴磨子电站") == 3


@pytest.mark.parametrize(
    "name",
    [
        "ca_warn_report_16p.pdf",  # dates repeated down a column
        "ibm_redp5110_sampled_18p.pdf",  # "X" marks across a table row
        "jal_traffic_data_tables_5p.pdf",  # equal counts in adjacent cells
        "us_budget_fy2013_table_s4_rotated_fffd.pdf",  # "*" and "10" down columns
    ],
)
def test_table_data_in_corpus_not_taken_for_fake_bold(corpus, name: str) -> None:
    """Repeated values in tables extracted as text are data: no line collapse there."""
    doc = load(corpus / name, ExtractConfig(ocr="never", tables=False))
    result = STAGE(doc)
    assert not [c for c in result.changes if c.code in {"repeats.fake_bold", "repeats.line"}]
