"""LangChain: a document loader and a document transformer on docsan's cleaning and chunks.

``pip install 'docsan[langchain]'`` (needs ``langchain-core``)::

    from docsan.adapters.langchain import DocsanLoader, DocsanTransformer

    docs = DocsanLoader(["report.pdf", "notes.md"], chunk_tokens=512).load() # one Document per chunk
    whole = DocsanLoader("report.pdf", mode="document").load()               # one per file
    clean = DocsanTransformer().transform_documents(existing_docs)           # sanitize what you have
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import BaseDocumentTransformer, Document

from docsan.adapters.metadata import chunk_metadata, removal_summary
from docsan.api import clean_file, clean_text
from docsan.budget.tokenizer import Tokenizer
from docsan.chunking import DEFAULT_CHUNK_TOKENS, chunk_size, iter_chunks
from docsan.config import Config
from docsan.pipeline import CleanResult

Mode = Literal["chunks", "document"]


class DocsanLoader(BaseLoader):
    """Load files through docsan: cleaned, then one LangChain ``Document`` per chunk (or per file).

    Chunk metadata: ``source``, ``page_numbers``, ``headings``, ``num_tokens``
    (exact, with ``tokenizer``), ``chunk_id``, ``chunk_index``, and the
    removal summary (``removed_<stage>`` counts, ``chars_removed``). A file
    that cannot be read raises :class:`docsan.InputError` naming it.
    """

    def __init__(
        self,
        file_path: str | Path | Sequence[str | Path],
        *,
        mode: Mode = "chunks",
        chunk_tokens: int | None = None,
        overlap: int = 0,
        tokenizer: str | Path | None = None,
        config: Config | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.paths = [file_path] if isinstance(file_path, str | Path) else list(file_path)
        self.mode = mode
        # max_tokens: chunk_tokens' older name (deprecated; docsan.chunking.chunk_size). None: 512.
        self.chunk_tokens = chunk_size(chunk_tokens, max_tokens, "DocsanLoader", DEFAULT_CHUNK_TOKENS)
        self.overlap = overlap
        self.tokenizer = Tokenizer.load(tokenizer)
        self.config = config

    def lazy_load(self) -> Iterator[Document]:
        for path in self.paths:
            result = clean_file(path, self.config)
            yield from _documents(result, self.mode, self.chunk_tokens, self.overlap, self.tokenizer)


def _documents(result: CleanResult, mode: Mode, chunk_tokens: int, overlap: int, tok: Tokenizer) -> Iterator[Document]:
    summary = removal_summary(result)
    if mode == "document":
        pages = [p.number for p in result.document.pages if p.text.strip()]
        yield Document(
            page_content=result.text, metadata={"source": result.document.name, "page_numbers": pages, **summary}
        )
        return
    for c in iter_chunks(result, chunk_tokens, overlap=overlap, tokenizer=tok):
        yield Document(page_content=c.text, metadata={**chunk_metadata(c), **summary}, id=c.id)


class DocsanTransformer(BaseDocumentTransformer):
    """Sanitize existing LangChain documents: each ``page_content`` cleaned by docsan's stages.

    The metadata is kept and the removal summary added; with ``chunk_tokens``
    each document is also cut into chunks (one ``Document`` per chunk).
    ``max_tokens`` is ``chunk_tokens``' older name (deprecated).
    """

    def __init__(
        self,
        config: Config | None = None,
        *,
        chunk_tokens: int | None = None,
        overlap: int = 0,
        tokenizer: str | Path | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.config = config
        self.chunk_tokens = chunk_size(chunk_tokens, max_tokens, "DocsanTransformer")
        self.overlap = overlap
        self.tokenizer = Tokenizer.load(tokenizer) if self.chunk_tokens is not None else None

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        out: list[Document] = []
        for doc in documents:
            name = str(doc.metadata.get("source") or doc.id or "<langchain>")
            result = clean_text(doc.page_content, self.config, name=name)
            if self.chunk_tokens is None or self.tokenizer is None:
                meta = {**doc.metadata, **removal_summary(result)}
                out.append(Document(page_content=result.text, metadata=meta, id=doc.id))
                continue
            for piece in _documents(result, "chunks", self.chunk_tokens, self.overlap, self.tokenizer):
                piece.metadata = {**doc.metadata, **piece.metadata}
                out.append(piece)
        return out
