"""The reflow stage: wrapped lines joined, structure kept, hyphens and CJK spacing handled.

Most cases build PDF-like blocks (source text_layer) by hand, because the
point is what reflow does with an extractor's line breaks; the corpus test
checks the same on a real three-column PDF.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import docsan
from docsan import BBox, Block, BlockKind, Document, DocumentKind, Page, Source, Table
from docsan.config import Config
from docsan.extract import load
from docsan.stages.reflow import _HYPHENATED, _WORD, Reflow, _Vocabulary

REFLOW = Config(stages=("reflow",))
BOTH = Config(stages=("normalize", "reflow"))


def pdf(*texts: str, kind: BlockKind = BlockKind.TEXT, source: Source = Source.TEXT_LAYER) -> Document:
    return Document(pages=(Page(1, tuple(Block(t, kind=kind, source=source) for t in texts)),), kind=DocumentKind.PDF)


def reflowed(*texts: str, **kw: object) -> list[str]:
    return [b.text for _, b in docsan.clean_document(pdf(*texts, **kw), REFLOW).document.blocks()]


WRAPPED = (
    "Uploaded PDFs went into the model without any\n"
    "pre-processing, and the average context grew\n"
    "from 1.5k to more than 8k tokens in a month."
)


def test_wrapped_lines_become_one_paragraph() -> None:
    assert reflowed(WRAPPED) == [WRAPPED.replace("\n", " ")]


def test_a_line_the_next_word_would_have_fitted_on_ends_a_paragraph() -> None:
    text = (
        "Summary of the quarterly incident review\nResults\n"
        "The service crashed many times during peak hours, and it restarted itself every fifteen minutes."
    )
    # "Results" would have fitted after "review": the break is deliberate.
    # Idempotence needs it kept as a paragraph break, not a single newline.
    out = reflowed("Short title line.\n" + WRAPPED)
    assert out == ["Short title line.\n\n" + WRAPPED.replace("\n", " ")]
    assert reflowed(text)[0].startswith("Summary of the quarterly incident review\n\nResults")


def test_list_items_and_indented_lines_start_their_own_line() -> None:
    text = (
        "The pipeline removes the following kinds of noise\n"
        "1. control characters that the text layer carries\n"
        "2. running headers, footers and page numbers that\n"
        "repeat on every single page of the document\n"
        "• repeated paragraphs\n"
        "（一）重复段落和页眉页脚在每一页上都会出现\n"
        "第三条　清洗管道在模型前运行，去除控制字符"
    )
    lines = reflowed(text)[0].split("\n")
    assert lines == [
        "The pipeline removes the following kinds of noise",
        "1. control characters that the text layer carries",
        "2. running headers, footers and page numbers that repeat on every single page of the document",
        "• repeated paragraphs",
        "（一）重复段落和页眉页脚在每一页上都会出现",
        "第三条　清洗管道在模型前运行，去除控制字符",
    ]


def test_a_colon_or_a_contents_entry_ends_its_line() -> None:
    intro = "The following commands can be used to work with function usage IDs:\nWork Function Usage (WRKFCNUSG)"
    assert reflowed(intro) == [intro]
    contents = "Chemotherapy " + "." * 40 + " 39\nRadiotherapy " + "." * 40 + " 41"
    assert reflowed(contents) == [contents]


def test_lines_of_a_narrow_block_are_kept() -> None:
    address = "Jane Doe\n12 Main Street\nSpringfield"
    assert reflowed(address) == [address]


def test_tables_are_never_touched() -> None:
    table = Table.from_strings([["费用 分 类", "金额"], ["a long cell that\nwraps", "1"]])
    block = Block("费用 分 类 金额\na long cell that\nwraps 1", kind=BlockKind.TABLE, table=table)
    doc = Document(pages=(Page(1, (block,)),), kind=DocumentKind.PDF)
    result = docsan.clean_document(doc, REFLOW)
    assert result.document == doc
    assert result.report.changes == []


def test_headings_become_one_line() -> None:
    assert reflowed("一、概述\nOverview", kind=BlockKind.HEADING) == ["一、概述 Overview"]


def test_fenced_code_keeps_its_lines() -> None:
    code = "```python\nresult = docsan.clean_file('report.pdf', config)  # clean\nprint(result.text)\n```"
    assert reflowed(code, source=Source.CHAT) == [code]


# --- hyphenation -------------------------------------------------------------------------


def test_a_hyphen_is_dropped_when_the_document_spells_the_word_without_it() -> None:
    first = "The first stage of the pipeline does all of the pre-\nprocessing work before the model runs."
    second = "Without preprocessing the context grew eightfold."
    assert reflowed(first, second)[0] == (
        "The first stage of the pipeline does all of the preprocessing work before the model runs."
    )


def test_a_hyphen_is_kept_without_evidence_or_for_a_real_compound() -> None:
    compound = "Duplicate paragraphs in uploaded documents are a well-\nknown cause of long prompts in this base."
    assert reflowed(compound) == [compound.replace("\n", "")]
    # Even when both halves exist, a hyphenated spelling elsewhere wins.
    both = reflowed(compound, "A well-known fact; wellknown is a typo.")
    assert both[0].startswith("Duplicate paragraphs in uploaded documents are a well-known cause")


def test_hyphen_before_a_capital_or_digit_stays_without_space() -> None:
    text = "The outbreak was reported in the COVID-\n19 period and during the follow-up review."
    assert reflowed(text) == [text.replace("\n", "")]


def test_dehyphenation_is_counted() -> None:
    doc = pdf("The first stage does all the pre-\nprocessing work for the model runs here.", "preprocessing")
    stats = docsan.clean_document(doc, REFLOW).report.stage("reflow").stats
    assert stats["dehyphenated"] == 1 and stats["lines_joined"] == 1


# --- CJK ---------------------------------------------------------------------------------------


def test_no_space_is_inserted_between_cjk_characters() -> None:
    text = (
        "本报告总结了知识库问答系统在第三季度的运行情况，系统在业务\n"
        "高峰时段出现过多次推理中断，原因是上传的文件未经预处理直接\n"
        "进入模型。"
    )
    assert reflowed(text) == [text.replace("\n", "")]


def test_ocr_spaces_between_cjk_characters_are_removed() -> None:
    assert reflowed("费用 分 类", source=Source.OCR) == ["费用分类"]
    result = docsan.clean_text("费用 分 类 ， 说明", BOTH)
    assert result.text == "费用分类，说明"
    [change] = result.report.changes
    assert change.code == "reflow.reflowed" and "cjk spaces removed 4" in change.reason
    assert change.text == "费用 分 类 ， 说明" and change.replacement == "费用分类，说明"


def test_spaces_between_cjk_and_latin_or_digits_stay_as_they_are() -> None:
    for text in ("收入为 4,213 万元", "收入为4,213万元", "上传的 PDF 文件", "上传的PDF文件", "Q3 revenue 增长"):
        assert reflowed(text) == [text]


def test_korean_word_spaces_are_kept() -> None:
    assert reflowed("보고서 요약 문서") == ["보고서 요약 문서"]


def test_joining_cjk_to_a_number_keeps_them_apart() -> None:
    # A table row the extractor saw as lines: "公司2,078,800" would merge two cells.
    row = reflowed("中央汇金资产管理有限责任公司\n2,078,800 人民币普通股")
    assert row == ["中央汇金资产管理有限责任公司 2,078,800 人民币普通股"]


# --- paragraphs stored one line per block ------------------------------------------------------

LINE = 14.0  # line pitch of the blocks below, 10 pt type


def line_block(text: str, y: float, x0: float = 50.0, x1: float = 350.0) -> Block:
    return Block(text, source=Source.TEXT_LAYER, bbox=BBox(x0, y, x1, y + 10), font_size=10.0)


def test_line_blocks_of_one_paragraph_are_merged_and_joined() -> None:
    lines = [
        line_block("项目描述：负责电站引水隧洞爆破方案优化设计及爆破震动监测工", 100),
        line_block("作。沟通协调业主、监理和施工三方人员，开展现场爆破试验七场", 100 + LINE),
        line_block("次，成功解决了工程难题。", 100 + 2 * LINE, x1=170),
        # A paragraph gap, then the next entry.
        line_block("2020.01 - 2020.05", 100 + 4 * LINE, x1=140),
    ]
    doc = Document(pages=(Page(1, tuple(lines)),), kind=DocumentKind.PDF)
    result = docsan.clean_document(doc, REFLOW)
    texts = [b.text for b in result.document.pages[0].blocks]
    assert texts == [
        "项目描述：负责电站引水隧洞爆破方案优化设计及爆破震动监测工作。沟通协调业主、监理和施工三方人员，"
        "开展现场爆破试验七场次，成功解决了工程难题。",
        "2020.01 - 2020.05",
    ]
    [change] = result.report.changes
    assert "blocks merged 2" in change.reason and "lines joined 2" in change.reason
    assert change.text == "\n\n".join(b.text for b in lines[:3])
    assert docsan.clean_document(result.document, REFLOW).report.changes == []


def test_line_blocks_in_other_columns_or_after_a_short_line_stay_apart() -> None:
    blocks = (
        line_block("A short line that ends its paragraph.", 100, x1=200),
        line_block("The next paragraph starts right below it and runs the full", 100 + LINE),
        line_block("width of the column, like the line before it in this column.", 200, x0=400, x1=700),
    )
    doc = Document(pages=(Page(1, blocks),), kind=DocumentKind.PDF)
    assert docsan.clean_document(doc, REFLOW).document == doc


def test_zh_resume_lines_stored_as_blocks_become_paragraphs(corpus) -> None:
    doc = load(corpus / "zh_resume_near_duplicate_paragraphs_2p.pdf", docsan.ExtractConfig(ocr="never"))
    result = docsan.clean_document(doc, BOTH)
    assert result.report.stage("reflow").stats["blocks_merged"] > 5
    # A sentence the PDF split over two line blocks ("…监测工" / "作。…") is whole again.
    phrase = "爆破震动监测工作。"
    assert result.text.count(phrase) > sum(b.text.replace("\n", "").count(phrase) for _, b in doc.blocks())


# --- options and the real corpus ------------------------------------------------------------


def test_sources_outside_join_sources_keep_their_line_breaks() -> None:
    stage = Reflow(join_sources=(Source.TEXT_LAYER,))
    doc = pdf(WRAPPED, source=Source.CHAT)
    assert stage(doc).document == doc


def test_reflow_never_modifies_its_input() -> None:
    doc = pdf(WRAPPED, "费用 分 类")
    snapshot = [b.text for _, b in doc.blocks()]
    result = Reflow()(doc)
    assert [b.text for _, b in doc.blocks()] == snapshot
    assert result.document is not doc


@pytest.fixture(scope="module")
def fedreg(corpus):
    return load(corpus / "fedreg_2020-17221_15p.pdf", docsan.ExtractConfig(ocr="never"))


def test_three_column_federal_register_text_is_joined_into_paragraphs(fedreg) -> None:
    result = docsan.clean_document(fedreg, BOTH)
    stats = result.report.stage("reflow").stats
    assert stats["lines_joined"] > 500
    text = result.text
    # A sentence the three-column layout broke over several lines comes out whole.
    assert "You may examine the AD docket on the internet at https://www.regulations.gov by searching" in text
    # Most of the text now sits on lines far wider than a column (about 45 characters).
    before = [len(line) for line in fedreg.text.split("\n")]
    after = [len(line) for line in text.split("\n")]
    assert sum(n for n in before if n > 90) / sum(before) < 0.1
    assert sum(n for n in after if n > 90) / sum(after) > 0.6


def _pages(*pages: str) -> Document:
    return Document(
        pages=tuple(Page(k, (Block(t, source=Source.TEXT_LAYER),)) for k, t in enumerate(pages, start=1)),
        kind=DocumentKind.PDF,
    )


def test_a_single_line_at_the_foot_of_a_page_joins_the_rest_of_its_paragraph() -> None:
    # The page break cut a clause after its first line: the second half's wrapped lines show the column.
    head = "Figures in this section are unaudited; the company's published periodic"
    tail = "reports prevail over them, and no investment decision should rest on this\nsection alone."
    out = docsan.clean_document(_pages(head, tail), REFLOW).document
    assert [b.text for _, b in out.blocks()] == [f"{head} {tail.replace(chr(10), ' ')}"]
    # A short last line (the next word would have fitted after it) ends its paragraph, and two
    # single lines show no column at all.
    short = docsan.clean_document(_pages("Figures in this section", tail), REFLOW).document
    assert len(list(short.blocks())) == 2
    single = docsan.clean_document(_pages(head, "reports prevail over them."), REFLOW).document
    assert len(list(single.blocks())) == 2


# --- the vocabulary's word lookups -------------------------------------------------------------

# Letters of several scripts (a final sigma, a combining mark, a CJK letter), hyphens and what separates words.
_VOCAB_TEXT = st.text(alphabet="abΣσς\u0301é中-\u2010 \n\t\u3000.1", max_size=30)


@settings(max_examples=500, deadline=None)
@given(_VOCAB_TEXT, st.integers(0, 30), st.integers(1, 4), st.text(alphabet="ab1-", max_size=2), st.integers(0, 3))
def test_a_word_looked_up_in_the_text_is_a_word_of_the_whole_set(
    text: str, start: int, length: int, noise: str, lookups: int
) -> None:
    # The few questions answered by substring searches must get the answer the set of all words gives,
    # however many searches are left before the set is built. The word asked is mostly a piece of the
    # text (inside a longer word, at its edge, or a whole word), sometimes with something added.
    word = text.lower()[start : start + length] + noise
    vocab = _Vocabulary(pdf(text))
    vocab.lookups = lookups
    assert vocab._is_word(word) == (word in set(_WORD.findall(text.lower())))


@settings(max_examples=500, deadline=None)
@given(_VOCAB_TEXT)
def test_the_hyphenated_words_are_the_patterns_matches_over_the_whole_text(text: str) -> None:
    # Searched only in the stretches that hold a hyphen: the same words as a search of all of the text.
    expected = {w.replace("\u2010", "-") for w in _HYPHENATED.findall(text.lower())}
    assert _Vocabulary(pdf(text))._hyphenated() == expected


def test_the_vocabulary_builds_its_set_after_its_lookups() -> None:
    # A document with a hyphen at many line ends pays for a bounded number of searches, then for the set.
    vocab = _Vocabulary(pdf("pre processing preprocessing"))
    assert vocab._is_word("processing") and vocab.words is None
    vocab.lookups = 0
    assert vocab._is_word("preprocessing") and not vocab._is_word("prepro") and vocab.words is not None
