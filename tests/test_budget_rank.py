"""BM25 terms: English words meet across inflections, CJK text as bigrams, the issue's own example."""

from __future__ import annotations

from pathlib import Path

from docsan.api import clean_file
from docsan.budget.rank import bm25_scores, terms
from docsan.budget.tokenizer import Tokenizer
from docsan.budget.truncate import fit_document
from docsan.config import Config
from docsan.render import render_text


def test_inflections_share_a_term_and_cjk_is_bigrams() -> None:
    assert terms("Comments") == terms("comment") and terms("delayed") == terms("delay")
    assert terms("shipments") == terms("Shipment")
    assert terms("营业收入") == ["营业", "业收", "收入"] and terms("税") == ["税"]
    scores = bm25_scores("comment deadline", ["Comments are due by September 21.", "The engine was inspected."])
    assert scores[0] > 0 == scores[1]


def test_comment_deadline_keeps_the_september_21_paragraph(corpus: Path) -> None:
    """Issue 15: `--query "comment deadline"` missed "comments ... by September 21" (no stemming)."""
    doc = clean_file(corpus / "fedreg_2020-17221_15p.pdf", Config().with_overrides(extract={"ocr": "never"})).document
    fitted = fit_document(doc, 400, Tokenizer.load(), strategy="query", query="comment deadline")
    assert "must receive comments on this AD action by September 21" in render_text(fitted.document)
