"""Plain text and Markdown: a form feed is a page break, a blank line a paragraph break."""

from __future__ import annotations

from docsan.errors import InputError
from docsan.model import Document, DocumentKind, Page, Source
from docsan.text.paragraphs import paragraphs_to_blocks


def decode(data: bytes, name: str) -> str:
    """UTF-8 (with or without BOM), then UTF-16 by BOM, then GB18030 for legacy Chinese files."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    # Not valid in either: keep what is readable; U+FFFD marks the rest and
    # the normalize stage reports its removal.
    return data.decode("utf-8", errors="replace")


def text_document(data: bytes, name: str, *, markdown: bool = False) -> Document:
    text = decode(data, name)
    if not text.strip():
        raise InputError(name, "empty input")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    pages = [
        Page(number=i, blocks=tuple(paragraphs_to_blocks(chunk, Source.PLAIN_TEXT, markdown=markdown)))
        for i, chunk in enumerate(text.split("\x0c"), start=1)
    ]
    kind = DocumentKind.MARKDOWN if markdown else DocumentKind.TEXT
    return Document(pages=tuple(pages), kind=kind, name=name)
