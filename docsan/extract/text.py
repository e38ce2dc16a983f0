"""Plain text and Markdown: a form feed is a page break, a blank line a paragraph break."""

from __future__ import annotations

import regex

from docsan.errors import InputError
from docsan.model import Block, BlockKind, Document, DocumentKind, Page, Source

# A paragraph ends at a blank line (spaces allowed on it). Linear: a single
# character class with a bounded alternation.
_PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n")
_MD_HEADING = regex.compile(r"#{1,6} ")


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


def paragraphs_to_blocks(text: str, source: Source, *, markdown: bool = False) -> list[Block]:
    blocks = []
    for para in _PARAGRAPH_BREAK.split(text):
        if not para.strip():
            continue
        kind = BlockKind.HEADING if markdown and _MD_HEADING.match(para.lstrip()) else BlockKind.TEXT
        blocks.append(Block(para.strip("\n"), kind=kind, source=source))
    return blocks


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
