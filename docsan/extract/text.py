"""Plain text and Markdown: a form feed is a page break, a blank line a paragraph break."""

from __future__ import annotations

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract.encoding import decode
from docsan.model import Document, DocumentKind, Page, Source
from docsan.text.paragraphs import paragraphs_to_blocks


def text_document(data: bytes, name: str, config: ExtractConfig | None = None, *, markdown: bool = False) -> Document:
    decoded = decode(data, name, (config or ExtractConfig()).encoding)
    text = decoded.text
    if not text.strip():
        raise InputError(name, "empty input")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pages = [
        Page(number=i, blocks=tuple(paragraphs_to_blocks(chunk, Source.PLAIN_TEXT, markdown=markdown)))
        for i, chunk in enumerate(text.split("\x0c"), start=1)
    ]
    kind = DocumentKind.MARKDOWN if markdown else DocumentKind.TEXT
    return Document(pages=tuple(pages), kind=kind, name=name, notes=(decoded.note,))
