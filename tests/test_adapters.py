"""The LangChain and LlamaIndex adapters, with the real langchain-core and llama-index-core (no network, no model)."""

from __future__ import annotations

from pathlib import Path

import pytest

import docsan
from docsan.budget.tokenizer import Tokenizer

lc_documents = pytest.importorskip("langchain_core.documents")
li_schema = pytest.importorskip("llama_index.core.schema")

from langchain_core.document_loaders import BaseLoader  # noqa: E402

from docsan.adapters.langchain import DocsanLoader, DocsanTransformer  # noqa: E402
from docsan.adapters.llamaindex import DocsanNodeParser, DocsanReader  # noqa: E402

HIDDEN = "Quarterly revenue rose 12%.\u202e Costs were flat.\u200b\n\nSupport is open on weekdays."


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.load()


def test_loader_is_a_lazy_base_loader_with_chunk_metadata(fixtures_dir: Path, tok: Tokenizer) -> None:
    loader = DocsanLoader([fixtures_dir / "bilingual_report.pdf", fixtures_dir / "noisy_upload.txt"], chunk_tokens=64)
    assert isinstance(loader, BaseLoader)
    lazy = loader.lazy_load()
    first = next(lazy)
    assert isinstance(first, lc_documents.Document)
    docs = [first, *lazy]
    expected = docsan.chunk(docsan.clean_file(fixtures_dir / "bilingual_report.pdf"), 64)
    from_pdf = [d for d in docs if d.metadata["source"].endswith(".pdf")]
    assert [d.page_content for d in from_pdf] == [c.text for c in expected]
    assert [d.id for d in from_pdf] == [c.id for c in expected]
    for d in docs:
        assert d.metadata["num_tokens"] == tok.count(d.page_content) <= 64
        assert d.metadata["page_numbers"] and isinstance(d.metadata["headings"], list)
    assert from_pdf[0].metadata["headings"] == ["一、概述 Overview"]
    txt = [d for d in docs if d.metadata["source"].endswith(".txt")]
    assert txt[0].metadata["removed_normalize"] > 0 and txt[0].metadata["chars_removed"] > 0


def test_loader_document_mode_gives_one_document_per_file(fixtures_dir: Path) -> None:
    (doc,) = DocsanLoader(fixtures_dir / "bilingual_report.pdf", mode="document").load()
    assert doc.page_content == docsan.clean_file(fixtures_dir / "bilingual_report.pdf").text
    assert doc.metadata["page_numbers"] == [1, 2, 3]


def test_loader_names_an_unreadable_file(corpus: Path) -> None:
    with pytest.raises(docsan.InputError, match=r"broken_not_a_pdf\.pdf"):
        DocsanLoader(corpus / "broken_not_a_pdf.pdf").load()


def test_transformer_sanitizes_existing_documents_and_keeps_metadata() -> None:
    docs = [lc_documents.Document(page_content=HIDDEN, metadata={"source": "kb/42", "lang": "en"}, id="42")]
    (out,) = DocsanTransformer().transform_documents(docs)
    assert "\u202e" not in out.page_content and "\u200b" not in out.page_content
    assert "Quarterly revenue rose 12%." in out.page_content
    assert out.metadata["lang"] == "en" and out.id == "42"
    assert out.metadata["removed_normalize"] == 2  # one change per character class (bidi, zero-width)
    assert docs[0].page_content == HIDDEN  # the input is left as it was


def test_transformer_can_also_chunk(tok: Tokenizer) -> None:
    long = " ".join(f"Sentence {i} is about the budget." for i in range(80))
    out = DocsanTransformer(chunk_tokens=40).transform_documents([lc_documents.Document(page_content=long)])
    assert len(out) > 5
    assert all(d.metadata["num_tokens"] == tok.count(d.page_content) <= 40 for d in out)


def test_llamaindex_reader_gives_documents_per_chunk(fixtures_dir: Path, tok: Tokenizer) -> None:
    docs = DocsanReader(chunk_tokens=64).load_data(fixtures_dir / "bilingual_report.pdf")
    expected = docsan.chunk(docsan.clean_file(fixtures_dir / "bilingual_report.pdf"), 64)
    assert all(isinstance(d, li_schema.Document) for d in docs)
    assert [d.text for d in docs] == [c.text for c in expected]
    assert [d.doc_id for d in docs] == [c.id for c in expected]
    assert docs[0].metadata["page_numbers"] == [1]
    (whole,) = DocsanReader(chunked=False).load_data(fixtures_dir / "bilingual_report.pdf")
    assert whole.text == docsan.clean_file(fixtures_dir / "bilingual_report.pdf").text


def test_llamaindex_node_parser_sanitizes_and_chunks(tok: Tokenizer) -> None:
    long = HIDDEN + "\n\n" + " ".join(f"Item {i} was shipped on time." for i in range(60))
    parent = li_schema.Document(text=long, metadata={"source": "kb/7"})
    nodes = DocsanNodeParser(chunk_tokens=48).get_nodes_from_documents([parent])
    assert len(nodes) > 3
    for node in nodes:
        assert isinstance(node, li_schema.TextNode)
        assert "\u202e" not in node.text and node.metadata["num_tokens"] == tok.count(node.text) <= 48
        assert node.metadata["source"] == "kb/7"
        assert node.ref_doc_id == parent.doc_id
    assert len({n.node_id for n in nodes}) == len(nodes)


def test_max_tokens_is_the_deprecated_older_name_of_chunk_tokens(fixtures_dir: Path, tok: Tokenizer) -> None:
    """``max_tokens`` is the answer's length in the runner and the gateway; chunking says ``chunk_tokens``."""
    pdf = fixtures_dir / "bilingual_report.pdf"
    result = docsan.clean_file(pdf)
    new = [c.text for c in docsan.chunk(result, chunk_tokens=48, tokenizer=tok)]
    assert len(new) > 1
    with pytest.warns(DeprecationWarning, match=r"^chunk: max_tokens is deprecated, use chunk_tokens"):
        assert [c.text for c in docsan.chunk(result, max_tokens=48, tokenizer=tok)] == new
    with pytest.raises(docsan.ConfigError, match="give one of them"):
        docsan.chunk(result, 48, max_tokens=48, tokenizer=tok)
    with pytest.warns(DeprecationWarning, match="^DocsanLoader: max_tokens"):
        assert [d.page_content for d in DocsanLoader(pdf, max_tokens=48).load()] == new
    with pytest.warns(DeprecationWarning, match="^DocsanReader: max_tokens"):
        assert [d.text for d in DocsanReader(max_tokens=48).load_data(pdf)] == new
    text = lc_documents.Document(page_content=result.text)
    with pytest.warns(DeprecationWarning, match="^DocsanTransformer: max_tokens"):
        old = DocsanTransformer(max_tokens=48).transform_documents([text])
    assert [d.page_content for d in old] == [
        d.page_content for d in DocsanTransformer(chunk_tokens=48).transform_documents([text])
    ]
    parent = li_schema.Document(text=result.text)
    with pytest.warns(DeprecationWarning, match="^DocsanNodeParser: max_tokens"):
        parser = DocsanNodeParser(max_tokens=48)
    assert parser.chunk_tokens == 48
    assert [n.text for n in parser.get_nodes_from_documents([parent])] == [
        n.text for n in DocsanNodeParser(chunk_tokens=48).get_nodes_from_documents([parent])
    ]
