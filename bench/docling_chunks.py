"""Run inside .venv-docling/ (bench/setup_docling.sh): Docling's HybridChunker on documents docsan cleaned.

    python bench/docling_chunks.py DOCS.json TOKENIZER.json LIMIT OUT.json

DOCS.json holds ``Document.to_dict()`` of each cleaned document, with a
``level`` on each heading block (the level docsan's chunker gives it). Each
becomes a DoclingDocument (headings, text, tables with their cells), chunked
with the same tokenizer file and limit, tables serialised as Markdown with
their header repeated (HybridChunker's ``repeat_table_header``). OUT.json
gets, per document, the text Docling says to embed (``contextualize``:
headings, then the chunk). This file imports no docsan code.
"""

from __future__ import annotations

import json
import sys

from docling_core.transforms.chunker.hierarchical_chunker import ChunkingDocSerializer, ChunkingSerializerProvider
from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
from docling_core.transforms.serializer.markdown import MarkdownTableSerializer
from docling_core.types.doc import DocItemLabel, DoclingDocument, TableCell, TableData
from transformers import PreTrainedTokenizerFast


class MarkdownTables(ChunkingSerializerProvider):
    def get_serializer(self, doc: DoclingDocument) -> ChunkingDocSerializer:
        return ChunkingDocSerializer(doc=doc, table_serializer=MarkdownTableSerializer())


def to_docling(data: dict) -> DoclingDocument:
    doc = DoclingDocument(name=data.get("name", "doc"))
    for page in data["pages"]:
        for block in page["blocks"]:
            kind, text = block.get("kind", "text"), block["text"]
            if kind == "furniture" or not text.strip():
                continue
            if kind == "heading":
                doc.add_heading(text=" ".join(text.lstrip("#").split()), level=min(block.get("level", 1), 6))
            elif kind == "table" and block.get("table"):
                rows = block["table"]["rows"]
                header = block["table"].get("header_rows", 1)
                cells = [
                    TableCell(
                        text=cell["text"],
                        row_span=cell.get("rowspan", 1),
                        col_span=cell.get("colspan", 1),
                        start_row_offset_idx=r,
                        end_row_offset_idx=r + cell.get("rowspan", 1),
                        start_col_offset_idx=c,
                        end_col_offset_idx=c + cell.get("colspan", 1),
                        column_header=r < header,
                    )
                    for r, row in enumerate(rows)
                    for c, cell in enumerate(row)
                    if not cell.get("covered")
                ]
                width = max((len(r) for r in rows), default=0)
                doc.add_table(data=TableData(num_rows=len(rows), num_cols=width, table_cells=cells))
            else:
                doc.add_text(label=DocItemLabel.TEXT, text=text)
    return doc


def main() -> None:
    docs_file, tokenizer_file, limit, out_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    tokenizer = HuggingFaceTokenizer(tokenizer=PreTrainedTokenizerFast(tokenizer_file=tokenizer_file), max_tokens=limit)
    chunker = HybridChunker(tokenizer=tokenizer, serializer_provider=MarkdownTables())
    out = []
    with open(docs_file, encoding="utf-8") as fh:
        documents = json.load(fh)
    for data in documents:
        doc = to_docling(data)
        out.append([chunker.contextualize(chunk=c) for c in chunker.chunk(dl_doc=doc)])
    with open(out_file, "w", encoding="utf-8") as fh:
        json.dump(out, fh, ensure_ascii=False)


if __name__ == "__main__":
    main()
