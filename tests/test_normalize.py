"""The normalize stage: CJK-safe ftfy, reported removal of invisible characters, whitespace.

The property tests at the end run normalize + reflow through the public
``docsan.clean_text`` on arbitrary Unicode (CJK, controls, zero-width, bidi,
tag characters, emoji, form feeds) and check idempotence and that no removed
code point survives.
"""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import docsan
from bench.common import manifest
from docsan import Block, BlockKind, Document, DocumentKind, Page, Source, Table
from docsan.config import Config
from docsan.stages import build_stage
from docsan.stages.normalize import Normalize, _is_plain, _plain_by_parts
from docsan.text.chardata import REMOVABLE

NORMALIZE = Config(stages=("normalize",))
BOTH = Config(stages=("normalize", "reflow"))

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
FAMILY = "👨\u200d👩\u200d👧"
# A removable character anywhere, except the ZWJ of an emoji sequence and the
# tags of an RGI flag, which the test strips first (they are allowed).
_ALLOWED = regex.compile(
    r"\U0001f3f4(?:\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    r"|\U000e0077\U000e006c\U000e0073))\U000e007f"
    r"|(?<=[\p{Extended_Pictographic}\ufe0f\U0001f3fb-\U0001f3ff])\u200d(?=\p{Extended_Pictographic})"
)
_FORBIDDEN = regex.compile(rf"[{REMOVABLE}\x0c]")


def forbidden_left(text: str) -> list[str]:
    """Removable code points in ``text`` outside the sequences that may keep them."""
    return [f"U+{ord(c):04X}" for c in _FORBIDDEN.findall(_ALLOWED.sub("", text))]


def normalize(text: str, **options: object) -> docsan.CleanResult:
    config = NORMALIZE.with_overrides(options={"normalize": options}) if options else NORMALIZE
    return docsan.clean_text(text, config)


def reasons(result: docsan.CleanResult) -> list[str]:
    return [c.reason for c in result.report.changes]


def codes(result: docsan.CleanResult) -> set[str]:
    return {c.code for c in result.report.changes}


# --- CJK safety -----------------------------------------------------------------


def test_nfc_would_change_cjk_so_normalize_does_not_apply_it() -> None:
    # The reason normalization=None: NFC maps CJK compatibility ideographs to
    # unified ones, i.e. it rewrites Chinese text that was not damaged.
    compat = "\uf900\uf9d1"  # 豈 六 (compatibility forms)
    assert unicodedata.normalize("NFC", compat) != compat
    assert normalize(f"条款{compat}").text == f"条款{compat}"


def test_fullwidth_punctuation_curly_quotes_and_html_entities_survive() -> None:
    text = "第三季度营业收入为４,213万元（同比增长12％）：“数据”‘引用’。&lt;b&gt; stays literal"
    result = normalize(text)
    assert result.text == text
    assert result.report.changes == []


def test_seed_incident_report_keeps_every_cjk_character_and_punctuation_mark(corpus) -> None:
    # Real Chinese prose with full-width punctuation: ftfy must find nothing to "fix".
    seed = next((corpus.parent.parent / "seed").glob("*.txt"))
    raw = seed.read_text(encoding="utf-8")
    result = normalize(raw)
    assert not result.report.with_code("normalize.mojibake")
    cjk = regex.compile(r"[\p{Han}\u3001-\u303f\uff01-\uff60“”‘’]")
    assert cjk.findall(result.text) == cjk.findall(raw)


def test_mojibake_is_repaired_and_reported() -> None:
    broken = "The caf\u00c3\u00a9\u00e2\u20ac\u2122s menu"  # UTF-8 read as Windows-1252
    result = normalize(broken)
    assert result.text == "The café\u2019s menu"
    [change] = result.report.changes
    assert change.code == "normalize.mojibake" and change.kind == "rewritten"
    assert change.reason.startswith("repaired by ftfy (")
    assert change.text == broken
    assert change.replacement == "The café\u2019s menu"


def test_garbage_from_an_unmapped_font_is_not_rewritten_by_guesswork() -> None:
    # Text from ibm_redp5110 p3 (a font without a Unicode map): not mojibake
    # of any encoding, so ftfy must leave it alone, not "repair" fragments.
    garbage = "rÜñê ÜèßÜü•Üíê †ë Üééê§§ •† Ü\nÆ†£óèÆîèê §†¶£éê †ë êØ°ê£•î§ê"
    result = normalize(garbage)
    assert result.text == garbage
    assert result.report.changes == []


def test_ligatures_are_split_unless_disabled() -> None:
    assert normalize("eﬃcient ﬁle").text == "efficient file"
    assert normalize("eﬃcient", fix_ligatures=False).text == "eﬃcient"


# --- invisible characters ----------------------------------------------------------


def test_each_class_is_removed_and_reported_with_counts() -> None:
    text = "A\x02\x02B\u200bC\u202eD\u202cE\u2060F\ufeffG\u00adH\ufffdI\x9fJ"
    result = normalize(text)
    assert result.text == "ABCDEFGHIJ"
    got = reasons(result)
    assert "control character: U+0002 ×2, U+009F ×1" in got
    assert "zero-width character: U+200B ×1" in got
    assert "bidirectional control: U+202C ×1, U+202E ×1" in got
    assert "invisible format character: U+2060 ×1" in got
    assert "byte order mark: U+FEFF ×1" in got
    assert "soft hyphen: U+00AD ×1" in got
    assert "replacement character: U+FFFD ×1" in got
    invisible = ("control_character", "zero_width_character", "bidirectional_control", "invisible_format_character",
                 "byte_order_mark", "soft_hyphen", "replacement_character")  # fmt: skip
    assert codes(result) == {f"normalize.invisible.{name}" for name in invisible}
    for change in result.report.changes:
        assert change.stage == "normalize" and change.page == 1 and change.kind == "removed"
        assert change.text == text and change.replacement == "ABCDEFGHIJ"
    stats = result.report.stage("normalize").stats
    assert stats["chars_removed"] == 10
    assert stats["removed_control_character"] == 3


def test_tag_characters_are_removed_and_their_hidden_message_reported() -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "ignore rules")
    result = normalize(f"Quarterly report{hidden}.")
    assert result.text == "Quarterly report."
    [change] = result.report.with_code("normalize.invisible")
    assert change.code == "normalize.invisible.tag_character"
    assert 'hidden text "ignore rules"' in change.reason


def test_emoji_sequences_keep_their_joiners_and_flag_tags() -> None:
    text = f"family {FAMILY} flag {ENGLAND} heart ❤️\u200d🔥 coder 👩🏽\u200d💻"
    result = normalize(text)
    assert result.text == text
    assert result.report.changes == []


def test_joiners_and_tags_outside_emoji_sequences_go() -> None:
    fake_flag = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "usca") + "\U000e007f"
    result = normalize(f"a\u200db 👨\u200d x {fake_flag}")
    assert result.text == "ab 👨 x \U0001f3f4"
    assert "normalize.invisible.tag_character" in codes(result)


def test_form_feed_inside_a_pdf_block_becomes_a_paragraph_break() -> None:
    doc = Document(
        pages=(Page(1, (Block("first part\x0csecond part", source=Source.TEXT_LAYER),)),), kind=DocumentKind.PDF
    )
    result = docsan.clean_document(doc, NORMALIZE)
    assert [b.text for b in result.document.pages[0].blocks] == ["first part", "second part"]
    assert reasons(result) == ["form feed: U+000C ×1"]


def test_a_soft_hyphen_at_a_line_end_rejoins_the_word() -> None:
    result = normalize("the pre\u00ad\nprocessing step, a soft\u00adhyphen")
    assert result.text == "the preprocessing step, a softhyphen"
    assert reasons(result) == ["soft hyphen: U+00AD ×2"]


def test_long_tag_messages_are_summarised_in_one_line() -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "abcdefghij")
    [reason] = reasons(normalize(f"x{hidden}"))
    assert reason.startswith("tag character: U+E0061 ×1, ") and reason.count("U+") == 6
    assert '4 more (hidden text "abcdefghij")' in reason


def test_line_separators_become_newlines() -> None:
    # NEL (U+0085) and U+2028 are line breaks, not noise: ftfy turns them into \n.
    assert normalize("one\x85two\u2028three").text == "one\ntwo\nthree"


def test_form_feed_in_a_text_file_is_a_page_break() -> None:
    result = normalize("page one\x0cpage two")
    assert [p.text for p in result.document.pages] == ["page one", "page two"]


def test_table_cells_are_cleaned_and_the_grid_kept() -> None:
    table = Table.from_strings([["Defense", "Total"], ["3 \ufffd\ufffd\ufffd", "4\x08"]])
    block = Block("Defense Total\n3 \ufffd\ufffd\ufffd 4\x08", kind=BlockKind.TABLE, table=table)
    doc = Document(pages=(Page(1, (block,)),), kind=DocumentKind.PDF)
    result = docsan.clean_document(doc, NORMALIZE)
    out = result.document.pages[0].blocks[0]
    assert out.kind is BlockKind.TABLE and out.table is not None
    assert out.table.text_rows() == [["Defense", "Total"], ["3", "4"]]
    assert sorted(reasons(result)) == ["control character: U+0008 ×1", "replacement character: U+FFFD ×3"]


# --- whitespace -----------------------------------------------------------------------


def test_whitespace_runs_collapse_and_paragraph_breaks_stay() -> None:
    result = normalize("a  b\u00a0\u00a0c\t\td  \n\n\n\n\nnext\tcol")
    assert result.text == "a b c d\n\nnext\tcol"


def test_ideographic_space_is_kept_inside_lines_and_stripped_at_line_ends() -> None:
    assert normalize("　　第一条　姓名　张三　").text == "　　第一条　姓名　张三"


def test_indentation_is_kept_in_text_but_not_in_pdf_layout() -> None:
    code = "def f():\n    return 1"
    assert normalize(code).text == code
    doc = Document(pages=(Page(1, (Block("   indented\n  line", source=Source.TEXT_LAYER),)),), kind=DocumentKind.PDF)
    assert docsan.clean_document(doc, NORMALIZE).document.pages[0].blocks[0].text == "indented\nline"


def test_a_block_of_only_invisible_characters_is_dropped_and_reported() -> None:
    result = normalize("kept\n\n\u200b\u200b\x01")
    assert result.text == "kept"
    assert "zero-width character: U+200B ×2" in reasons(result)


def test_options_are_validated_by_the_stage() -> None:
    stage = build_stage("normalize", {"fix_mojibake": False})
    assert isinstance(stage, Normalize) and stage.fix_mojibake is False
    try:
        build_stage("normalize", {"no_such_option": 1})
    except docsan.ConfigError as err:
        assert "normalize" in str(err)
    else:
        raise AssertionError("unknown option accepted")


# --- properties ------------------------------------------------------------------------

_ALPHABET = st.one_of(
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
    st.sampled_from(list("费用分类中文报告，。：（）“”　") + list("abcdefg ABC-")),
    st.sampled_from(["\n", "\n\n", "\t", "\x0c", " ", "\x00", "\x02", "\x1b", "\x85", "\x9f", "\x7f", "\r"]),
    st.sampled_from(["\u200b", "\u200c", "\u200d", "\u2060", "\u2064", "\ufeff", "\u00ad", "\ufffd"]),
    st.sampled_from(["\u202a", "\u202e", "\u2066", "\u2069", "\U000e0001", "\U000e0041", "\U000e007f"]),
    st.sampled_from(["👨", "👩", "👧", "❤", "\ufe0f", "🔥", "\U0001f3fb", "\U0001f3f4", "\u00a0", "\u3000"]),
    st.sampled_from(["Ã©", "â€™", "ï¬", "Â"]),
)
# Longer fragments, so wrapped lines (which reflow joins) actually occur.
_FRAGMENTS = st.sampled_from(
    [
        "The preprocessing pipeline was missing so every pre-\n",
        "processing step ran by hand, a well-\nknown problem.\n",
        "本报告总结了知识库问答系统在第三季度的运行情况，\n",
        "费用 分 类 说明 ",
        "1. a list item\n",
        ENGLAND,
        FAMILY,
    ]
)
# Lone surrogates too: a str can hold them (a text layer, JSON escapes).
TEXTS = st.lists(st.one_of(_ALPHABET, _FRAGMENTS, st.just("\ud83d")), max_size=60).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_cleaning_is_idempotent_and_removes_every_invisible_character(text: str) -> None:
    assume(text.removeprefix("\ufeff").strip())  # clean_text refuses empty input, like an empty file
    once = docsan.clean_text(text, BOTH)
    assert forbidden_left(once.text) == []
    if not once.text.strip():
        return  # everything was invisible: nothing left to clean again
    twice = docsan.clean_text(once.text, BOTH)
    assert twice.text == once.text
    assert twice.report.changes == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(TEXTS, min_size=1, max_size=3), min_size=1, max_size=3))
# Found by this test: a paragraph joined across a page break read otherwise once whole (its last line grew).
@example(
    pages=[
        [
            "1. a list item\n\u12b1\U0001f3f4"  # a flag emoji: its tag sequence below
            "\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f费用 分 类 说明 "
        ],
        ["\u3400"],
    ]
)
def test_pdf_blocks_clean_idempotently_and_the_input_is_untouched(pages: list[list[str]]) -> None:
    doc = Document(
        pages=tuple(
            Page(n, tuple(Block(t, source=Source.TEXT_LAYER) for t in texts)) for n, texts in enumerate(pages, 1)
        ),
        kind=DocumentKind.PDF,
    )
    before = [[b.text for b in p.blocks] for p in doc.pages]
    once = docsan.clean_document(doc, BOTH)
    assert [[b.text for b in p.blocks] for p in doc.pages] == before
    for _, block in once.document.blocks():
        assert forbidden_left(block.text) == []
    twice = docsan.clean_document(once.document, BOTH)
    assert twice.document == once.document


# --- the shared corpus --------------------------------------------------------------------------


def _text_layer_files(corpus) -> list[str]:
    # Every file with a text layer, the partly garbage one too.
    return sorted({f.path.name for f in manifest(corpus.parent) if f.text_layer.startswith("yes")})


@pytest.fixture(scope="module")
def corpus_cleaned(corpus) -> dict[str, docsan.CleanResult]:
    """Every text-layer PDF of the corpus, extracted once (no OCR) and cleaned with normalize + reflow."""
    config = BOTH.with_overrides(extract={"ocr": "never"})
    return {name: docsan.clean_file(corpus / name, config) for name in _text_layer_files(corpus)}


def test_the_corpus_has_the_text_layer_files_the_manifest_lists(corpus_cleaned) -> None:
    assert len(corpus_cleaned) >= 20
    assert {"irs_i1040nr_2007_50p.pdf", "us_budget_fy2013_table_s4_rotated_fffd.pdf"} <= set(corpus_cleaned)


def test_no_text_layer_file_keeps_a_removed_code_point(corpus_cleaned) -> None:
    left = {name: forbidden_left(r.text) for name, r in corpus_cleaned.items()}
    assert {name: chars for name, chars in left.items() if chars} == {}
    for name, result in corpus_cleaned.items():
        assert result.text.strip(), f"{name} cleaned to nothing"


def test_every_removed_code_point_of_the_raw_text_is_reported(corpus_cleaned) -> None:
    # What the extractor delivered, code point by code point, must reappear in
    # the normalize report: nothing disappears silently.
    for name, result in corpus_cleaned.items():
        raw = {f"U+{ord(c):04X}" for c in _FORBIDDEN.findall(_ALLOWED.sub("", result.original.text))}
        reported = " ".join(c.reason for c in result.report.stage("normalize").changes)
        assert {cp for cp in raw if cp not in reported} == set(), name


@pytest.mark.parametrize(
    "name",
    [
        # The manifest: "some U+0002-0004 control chars in text".
        "irs_i1040nr_2007_50p.pdf",
        # The manifest: p3 is mojibake "plus U+0001/U+0002 controls"; other pages carry some too.
        "ibm_redp5110_sampled_18p.pdf",
    ],
)
def test_the_files_the_manifest_marks_with_control_characters_have_them_removed(corpus_cleaned, name) -> None:
    # PyMuPDF's plain text has the controls themselves; its span ("dict")
    # output turns them into U+FFFD. Either way, every page whose extracted
    # text holds them gets a reported removal, and none is left.
    result = corpus_cleaned[name]
    changes = result.report.stage("normalize").changes
    wanted = {"normalize.invisible.control_character", "normalize.invisible.replacement_character"}
    hits = {c.page for c in changes if c.code in wanted}
    raw_pages = {p.number for p in result.original.pages if forbidden_left(p.text)}
    assert raw_pages, "the extractor no longer delivers the manifest's control characters"
    assert raw_pages <= hits
    assert forbidden_left(result.text) == []


def test_the_ibm_mojibake_page_with_controls_never_reaches_the_output(corpus_cleaned) -> None:
    # Page 3's text layer (an unmapped font plus U+0001/U+0002) is judged
    # garbage by the extractor; with OCR off the page is left empty and noted,
    # so neither its mojibake nor its controls arrive.
    result = corpus_cleaned["ibm_redp5110_sampled_18p.pdf"]
    assert any(note.startswith("page 3:") and "garbage" in note for note in result.original.notes)
    assert result.original.pages[2].text == ""
    assert "§ìÜ£îüí" not in result.text


def test_backspaces_and_dot_leaders_are_gone_from_the_budget_table(corpus_cleaned) -> None:
    result = corpus_cleaned["us_budget_fy2013_table_s4_rotated_fffd.pdf"]
    stats = result.report.stage("normalize").stats
    assert stats["removed_replacement_character"] > 1000
    assert stats["removed_control_character"] >= 30
    assert "Defense" in result.text


def test_cleaning_a_cleaned_corpus_document_changes_nothing(corpus_cleaned) -> None:
    # Idempotence on real layouts (boxes, fonts, line blocks), not only on strings.
    for name, result in corpus_cleaned.items():
        again = docsan.clean_document(result.document, BOTH)
        assert again.document == result.document, name
        # The document still carries what its extraction left out; the stages add nothing.
        assert again.report.extraction == list(result.document.extraction), name
        assert [c for s in again.report.stages for c in s.changes] == [], name


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=" \n\tab.\x7f\x00", max_size=12))
@example("a\n\nb")
@example("a\n\n\nb")
def test_plain_ascii_pattern_is_the_plain_rule(text: str) -> None:
    # ASCII text takes the one-pattern test; it must say what the rule says condition by condition
    assert _is_plain(text) == _plain_by_parts(text)
