"""Budgets on real corpus text, Chinese and English: exact counts, whole paragraphs, query-aware selection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_budget_fit import check

from docsan.budget.tokenizer import Tokenizer
from docsan.budget.truncate import DROPPED, fit_document
from docsan.config import ExtractConfig
from docsan.extract import load
from docsan.model import Block, Document
from docsan.render import render_block, render_text

FILES = {
    "zh": "zh_dbdq_2018q1_report_22p.pdf",
    "fedreg": "fedreg_2020-17221_15p.pdf",
    "dmca": "dmca_copyright_office_summary_18p.pdf",
}
FACTS = {
    "zh": ("公司在呼和浩特仓库保存了编号为7741的斑马档案。", "斑马档案保存在哪里？"),
    "dmca": (
        "The Copyright Office keeps the zebra registry backup in the Reykjavik vault number 7741.",
        "Where is the zebra registry backup kept?",
    ),
}


@pytest.fixture(scope="module")
def docs(corpus: Path) -> dict[str, Document]:
    return {key: load(corpus / name, ExtractConfig(ocr="never")) for key, name in FILES.items()}


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.load()


@pytest.mark.parametrize("key", sorted(FILES))
@pytest.mark.parametrize("budget", [64, 700, 4096])
@pytest.mark.parametrize("strategy", ["head", "head-tail", "query"])
def test_real_documents_fit_by_exact_count(
    docs: dict[str, Document], tok: Tokenizer, key: str, budget: int, strategy: str
) -> None:
    doc = docs[key]
    assert tok.count(render_text(doc)) > budget
    query = "营业收入 净利润 revenue airworthiness copyright" if strategy == "query" else None
    _, n = check(doc, budget, tok, strategy=strategy, query=query)
    # Uses the budget well: the documents are larger, so the result comes close. Not checked at 64
    # tokens: there one sentence is a large share of the budget, and a paragraph is cut at a sentence
    # end, not at a token boundary, while a sentence end fits (the rule).
    if budget >= 700:
        assert n >= 0.9 * budget


def plant(doc: Document, fact: str, depth: float = 0.8) -> Document:
    """Insert ``fact`` as its own paragraph at ``depth`` of the document's pages."""
    i = int(len(doc.pages) * depth)
    page = doc.pages[i]
    mid = len(page.blocks) // 2
    blocks = (*page.blocks[:mid], Block(fact), *page.blocks[mid:])
    pages = list(doc.pages)
    pages[i] = replace(page, blocks=blocks)
    return replace(doc, pages=tuple(pages))


@pytest.mark.parametrize("key", sorted(FACTS))
def test_query_keeps_a_planted_fact_that_head_loses(docs: dict[str, Document], tok: Tokenizer, key: str) -> None:
    fact, question = FACTS[key]
    doc = plant(docs[key], fact)
    head = render_text(fit_document(doc, 1024, tok, strategy="head").document)
    assert fact not in head
    result = fit_document(doc, 1024, tok, query=question)
    text = render_text(result.document)
    assert fact in text
    assert tok.count(text) <= 1024
    assert result.stats["tokens"] >= 0.95 * 1024
    # The selection is put back in document order.
    originals = iter(b.text for _, b in doc.blocks())
    kept = [b.text for _, b in result.document.blocks() if b.text.strip()]
    assert all(any(k == o or o.startswith(k) for o in originals) for k in kept)


def test_every_dropped_paragraph_is_reported(docs: dict[str, Document], tok: Tokenizer) -> None:
    doc = docs["fedreg"]
    result = fit_document(doc, 500, tok, strategy="head")
    kept = render_text(result.document)
    dropped = {c.text for c in result.changes if c.code == DROPPED.code}
    for _, block in doc.blocks():
        shown = render_block(block)  # a table is reported as it would have been rendered
        if shown.strip() and shown not in kept:
            assert shown in dropped or any(c.text == shown for c in result.changes)
