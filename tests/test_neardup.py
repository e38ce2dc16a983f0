"""The neardup stage: later near-copies of paragraphs and chat messages go, with the span they duplicated."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docsan.api import clean_file
from docsan.config import Config, ExtractConfig
from docsan.extract import load
from docsan.extract.chat import chat_document
from docsan.model import Block, BlockKind, Document, Page, Table
from docsan.pipeline import Pipeline
from docsan.stages import build_stage, neardup
from docsan.stages.neardup import NearDuplicates
from docsan.text.shingles import shingle
from tests.test_passages import forgetful_memo

STAGE = NearDuplicates()
PARAGRAPHS = NearDuplicates(spans=False)

PARA_EN = (
    "The committee reviewed the quarterly budget and found that the spending on outside consultants "
    "exceeded the approved amount by twelve percent, mostly because of the delayed database migration. "
    "It asked the project office to report monthly on the remaining work and on every new contract."
)
PARA_EN_EDITED = PARA_EN.replace("twelve", "fourteen")
PARA_EN_OTHER = (
    "The committee also discussed the hiring plan for the next year and agreed to postpone two positions "
    "until the migration is finished and the new reporting system has been tested by the finance team."
)
PARA_ZH = (
    "负责四川省甘孜州丹巴磨子电站引水隧洞爆破方案优化设计及爆破震动监测工作，"
    "开展现场爆破试验7场次，成功解决了工程难题。"
)


def _doc(*blocks: Block | str) -> Document:
    return Document(pages=(Page(1, tuple(b if isinstance(b, Block) else Block(b) for b in blocks)),))


def _texts(doc: Document) -> list[str]:
    return [b.text for _, b in doc.blocks()]


def test_later_near_duplicate_removed_first_kept() -> None:
    result = STAGE(_doc(PARA_EN, PARA_EN_OTHER, PARA_EN_EDITED))
    assert _texts(result.document) == [PARA_EN, PARA_EN_OTHER]
    (change,) = result.changes
    assert change.text == PARA_EN_EDITED
    assert change.duplicate_of == PARA_EN[:199] + "…"
    assert change.code == "neardup.paragraph" and change.kind == "removed"
    assert change.reason.startswith("paragraph near-duplicate (Jaccard 0.")
    assert "of page 1" in change.reason


def test_exact_duplicate_named_as_such() -> None:
    result = STAGE(_doc(PARA_ZH, "中间的一段不同的文字，讲的是别的事情，长度也够长了。", PARA_ZH + "  "))
    assert len(_texts(result.document)) == 2
    assert result.changes[0].code == "neardup.paragraph"
    assert result.changes[0].reason == "paragraph exact duplicate of page 1"


def test_threshold_is_configurable() -> None:
    sim = len(shingle(PARA_EN).shingles & shingle(PARA_EN_EDITED).shingles) / len(
        shingle(PARA_EN).shingles | shingle(PARA_EN_EDITED).shingles
    )
    strict = build_stage("neardup", {"threshold": min(1.0, sim + 0.01)})
    assert len(_texts(strict(_doc(PARA_EN, PARA_EN_EDITED)).document)) == 2
    loose = build_stage("neardup", {"threshold": max(0.01, sim - 0.01)})
    assert len(_texts(loose(_doc(PARA_EN, PARA_EN_EDITED)).document)) == 1


def test_mixed_script_paragraphs() -> None:
    tail = "报表每周一早上发给 sales team，由区域经理核对后再提交给财务部门，月底汇总成 quarterly report。"
    a = "我们使用 Python 和 PostgreSQL 进行数据分析，每天处理大约两百万条订单记录，并生成销售报表。" + tail
    b = "我们使用 Python 和 PostgreSQL 进行数据分析，每天处理大约三百万条订单记录，并生成销售报表。" + tail
    c = "我们使用 Rust 编写网络服务，部署在三个机房，每个机房有独立的监控和告警系统，值班工程师轮流响应。"
    assert _texts(STAGE(_doc(a, c, b)).document) == [a, c]


def test_lone_surrogates_do_not_break_the_stage() -> None:
    broken = "\ud83d " + PARA_EN
    assert _texts(STAGE(_doc(broken, PARA_EN_OTHER, broken)).document) == [broken, PARA_EN_OTHER]


def test_short_spans_are_not_merged() -> None:
    """Below n-gram size, spans are compared by exact normalised text, never by a shared empty signature."""
    loose = NearDuplicates(min_chars=1)
    doc = _doc("目录", "1", "2", "Yes", "……", "——", "目 录", "No", "1")
    assert _texts(loose(doc).document) == ["目录", "1", "2", "Yes", "……", "——", "No"]
    # defaults: short repeated paragraphs are structure and stay
    assert _texts(STAGE(doc).document) == _texts(doc)


def test_headings_and_tables_exempt() -> None:
    grid = Table.from_strings([["a", "b"], ["c", "d"]])
    doc = _doc(
        Block(PARA_EN, kind=BlockKind.HEADING),
        Block(PARA_EN, kind=BlockKind.HEADING),
        Block(PARA_EN, kind=BlockKind.TABLE, table=grid),
        Block(PARA_EN, kind=BlockKind.TABLE, table=grid),
    )
    assert _texts(STAGE(doc).document) == _texts(doc)
    assert len(_texts(NearDuplicates(exempt_headings=False, exempt_tables=False)(doc).document)) == 1


def test_deterministic_and_input_untouched() -> None:
    doc = _doc(PARA_EN, PARA_ZH, PARA_EN_EDITED, PARA_EN_OTHER, PARA_ZH)
    first = STAGE(doc)
    second = NearDuplicates()(doc)
    assert first.document == second.document
    assert [c.to_dict() for c in first.changes] == [c.to_dict() for c in second.changes]
    assert len(_texts(doc)) == 5


def _chat(messages: list[dict[str, str]]) -> Document:
    return chat_document(json.dumps({"messages": messages}, ensure_ascii=False).encode(), "chat.json")


def test_chat_repeated_paste_removed_after_first() -> None:
    paste = f"{PARA_EN}\n\n{PARA_EN_OTHER}\n\n{PARA_ZH}"
    doc = _chat(
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": f"{paste}\n\nSummarise this report."},
            {"role": "assistant", "content": "The report says the budget was exceeded."},
            {"role": "user", "content": f"{paste}\n\nNow list the decisions only."},
        ]
    )
    result = STAGE(doc)
    pages = result.document.pages
    assert pages[1].text == doc.pages[1].text  # first occurrence intact
    assert pages[3].text == "Now list the decisions only."  # only the new question remains
    assert len(result.changes) == 3
    assert all(c.code == "neardup.paragraph" and "of message 2" in c.reason for c in result.changes)


def test_chat_resent_message_removed_whole() -> None:
    question = "请根据上面的材料，帮我整理一份项目经验的简历段落，突出爆破方案优化和监测工作。"
    doc = _chat(
        [
            {"role": "user", "content": f"{PARA_ZH}\n\n{question}"},
            {"role": "assistant", "content": "好的。"},
            {"role": "user", "content": f"{PARA_ZH}\n\n{question}谢谢"},
        ]
    )
    result = STAGE(doc)
    assert result.document.pages[2].blocks == ()
    (change,) = result.changes
    assert change.code == "neardup.message"
    assert "of message 1" in change.reason


# --- the corpus -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resume(corpus):
    return clean_file(
        corpus / "zh_resume_near_duplicate_paragraphs_2p.pdf",
        Config(stages=("repeats", "neardup"), extract=ExtractConfig(ocr="never")),
    )


def test_resume_near_duplicates_reduced_to_one(resume) -> None:
    assert resume.original.text.count("丹巴磨子电站") == 3
    assert resume.text.count("丹巴磨子电站") == 1
    changes = resume.report.stage("neardup").changes
    assert len(changes) == 2
    for c in changes:
        assert "丹巴磨子电站" in c.text
        assert c.duplicate_of is not None and c.duplicate_of.startswith("项目描述：负责四川省甘孜州丹巴磨子电站")
        assert "Jaccard" in c.reason
    # the other projects and the repeated short labels stay
    assert "国家重点研发计划" in resume.text
    assert resume.text.count("读写能力") == 2
    assert "项目经验项目经验" not in resume.text


def test_resume_without_line_grouping_still_drops_exact_lines(corpus) -> None:
    cfg = Config(
        stages=("neardup",),
        extract=ExtractConfig(ocr="never"),
        options={"neardup": {"group_lines": False, "min_chars": 20}},
    )
    result = clean_file(corpus / "zh_resume_near_duplicate_paragraphs_2p.pdf", cfg)
    # line by line (lines are ~40 characters, so a lower min_chars), each repeated line is
    # judged on its own; the first copy of each survives
    assert result.text.count("沟通协调业主、监理和施工三方人员") == 1
    assert result.text.count("国家重点研发计划") == 1


def test_records_differing_in_numbers_are_kept() -> None:
    """Rows of a table extracted as text: the numbers are the content."""
    a = "Layoff Permanent 05/20/2016 03/21/2016 Scripps Health San Diego 1 Employees affected 112"
    b = "Layoff Permanent 05/20/2016 03/22/2016 Scripps Health San Diego 1 Employees affected 112"
    assert _texts(STAGE(_doc(a, b)).document) == [a, b]
    # prose where a number changed is still a near-duplicate
    assert _texts(STAGE(_doc(PARA_EN, PARA_EN.replace("twelve percent", "12 percent"))).document) == [PARA_EN]


def test_every_removed_unit_has_its_copy_in_the_output(resume) -> None:
    # a grouped unit joins its line blocks with one newline, the document with two: compare without spaces
    def squash(text: str) -> str:
        return "".join(text.split())

    kept = squash(resume.document.text)
    for change in resume.report.stage("neardup").changes:
        assert change.duplicate_of is not None
        assert squash(change.duplicate_of.rstrip("…")) in kept


_SENTENCES = [
    "the committee reviewed the quarterly budget in detail",
    "spending on outside consultants exceeded the plan",
    "项目组完成了现场爆破试验并提交了成果报告",
    "the database migration was delayed by two months",
    "负责引水隧洞爆破方案优化设计及爆破震动监测工作",
    "the finance team will test the new reporting system",
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, len(_SENTENCES) - 1), min_size=1, max_size=4), min_size=1, max_size=12))
def test_properties(picks: list[list[int]]) -> None:
    texts = [" ".join(_SENTENCES[i] for i in pick) for pick in picks]
    doc = _doc(*texts)
    # Whole paragraphs only: the passage pass (spans) cuts inside them (tests/test_passages.py).
    result = PARAGRAPHS(doc)
    out = _texts(result.document)
    it = iter(texts)
    assert all(t in it for t in out)  # an order-preserving selection of whole paragraphs
    assert len(out) + len(result.changes) == len(texts)
    for change in result.changes:  # every removal names a surviving copy
        assert change.duplicate_of is not None and change.duplicate_of.rstrip("…") in " ".join(out)
    assert _texts(PARAGRAPHS(result.document).document) == out  # twice = once


def test_rounds_on_a_real_document_give_the_full_recomputation(corpus, monkeypatch) -> None:
    # fedreg_2020-17221 takes two rounds (a passage was cut, so the stage looks again): the second reuses
    # the first one's units, scores and passages (neardup._Memo), and must find what a stage that
    # recomputes everything finds, on a real PDF's blocks (boxes, fonts, kinds) as the pipeline hands them on.
    cfg = Config(extract=ExtractConfig(ocr="never"))
    doc = load(corpus / "fedreg_2020-17221_15p.pdf", cfg.extract)
    for stage in Pipeline.from_config(cfg).stages:
        if stage.name == "neardup":
            break
        doc = stage(doc).document
    shared = stage(doc)
    monkeypatch.setattr(neardup, "_Memo", forgetful_memo)
    full = stage(doc)
    assert shared.stats["passages_cut"] and shared.changes
    assert shared.document == full.document
    assert shared.changes == full.changes
    assert shared.stats == full.stats
