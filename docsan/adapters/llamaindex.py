"""LlamaIndex: a reader and a node parser on docsan's cleaning and chunks.

``pip install 'docsan[llamaindex]'`` (needs ``llama-index-core``)::

    from docsan.adapters.llamaindex import DocsanNodeParser, DocsanReader

    nodes = DocsanReader(chunk_tokens=512).load_data("report.pdf")        # one Document per chunk
    nodes = DocsanNodeParser(chunk_tokens=512).get_nodes_from_documents(docs)  # sanitize + chunk yours
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.node_parser import NodeParser
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeRelationship, TextNode

from docsan.adapters.metadata import chunk_metadata, removal_summary
from docsan.api import clean_file, clean_text
from docsan.budget.tokenizer import Tokenizer
from docsan.chunking import DEFAULT_CHUNK_TOKENS, chunk_size, iter_chunks
from docsan.config import Config


class DocsanReader(BaseReader):
    """Read files through docsan: cleaned and chunked, one LlamaIndex ``Document`` per chunk.

    ``doc_id`` is the chunk's stable id; the metadata is the same as the
    LangChain loader's (source, page numbers, headings, exact token count,
    removal summary). With ``chunked=False``, one ``Document`` per file.
    """

    def __init__(
        self,
        *,
        chunk_tokens: int | None = None,
        overlap: int = 0,
        tokenizer: str | Path | None = None,
        config: Config | None = None,
        chunked: bool = True,
        max_tokens: int | None = None,
    ) -> None:
        # max_tokens: chunk_tokens' older name (deprecated; docsan.chunking.chunk_size). None: 512.
        self.chunk_tokens = chunk_size(chunk_tokens, max_tokens, "DocsanReader", DEFAULT_CHUNK_TOKENS)
        self.overlap, self.chunked = overlap, chunked
        self.tokenizer = Tokenizer.load(tokenizer)
        self.config = config

    def lazy_load_data(self, file: str | Path | Sequence[str | Path], **_: Any) -> Iterator[Document]:
        for path in [file] if isinstance(file, str | Path) else file:
            result = clean_file(path, self.config)
            summary = removal_summary(result)
            if not self.chunked:
                yield Document(text=result.text, metadata={"source": result.document.name, **summary})
                continue
            for c in iter_chunks(result, self.chunk_tokens, overlap=self.overlap, tokenizer=self.tokenizer):
                yield Document(text=c.text, id_=c.id, metadata={**chunk_metadata(c), **summary})

    def load_data(self, file: str | Path | Sequence[str | Path], **kwargs: Any) -> list[Document]:
        return list(self.lazy_load_data(file, **kwargs))


class DocsanNodeParser(NodeParser):
    """Sanitize each node's text with docsan and cut it into token-exact chunks, one ``TextNode`` each.

    Each node keeps its parent's metadata plus the chunk's (page numbers
    are the parent's form-feed sections), and points to the parent as its source.
    """

    chunk_tokens: int = Field(default=DEFAULT_CHUNK_TOKENS, description="Largest chunk, in tokens (exact count).")
    overlap: int = Field(default=0, description="Tokens of whole sentences repeated from the chunk before.")
    tokenizer: str | None = Field(default=None, description="Local tokenizer folder or tokenizer.json.")
    _config: Config | None = PrivateAttr(default=None)

    def __init__(self, config: Config | None = None, **data: Any) -> None:
        if "max_tokens" in data:  # chunk_tokens' older name (deprecated; docsan.chunking.chunk_size)
            data["chunk_tokens"] = chunk_size(data.get("chunk_tokens"), data.pop("max_tokens"), "DocsanNodeParser")
        super().__init__(**data)
        self._config = config

    @classmethod
    def class_name(cls) -> str:
        return "DocsanNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        tok = Tokenizer.load(self.tokenizer)
        out: list[BaseNode] = []
        for node in nodes:
            result = clean_text(node.get_content(metadata_mode=MetadataMode.NONE), self._config, name=node.node_id)
            source = node.as_related_node_info()
            summary = removal_summary(result)
            for c in iter_chunks(result, self.chunk_tokens, overlap=self.overlap, tokenizer=tok):
                meta = {
                    **node.metadata,
                    **chunk_metadata(c),
                    **summary,
                    "source": node.metadata.get("source", c.source),
                }
                out.append(
                    TextNode(text=c.text, id_=c.id, metadata=meta, relationships={NodeRelationship.SOURCE: source})
                )
        return out
