"""Plain text and Markdown: a form feed is a page break, a blank line a paragraph break."""

from __future__ import annotations

import regex

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract.encoding import decode
from docsan.model import Block, BlockKind, Document, DocumentKind, Page, Source

# A paragraph ends at a blank line (spaces allowed on it). Linear: a single
# character class with a bounded alternation.
_PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n")
_MD_HEADING = regex.compile(r"#{1,6} ")


def paragraphs_to_blocks(text: str, source: Source, *, markdown: bool = False) -> list[Block]:
    blocks = []
    for para in _PARAGRAPH_BREAK.split(text):
        if not para.strip():
            continue
        para = para.strip("\n")
        if markdown and _MD_HEADING.match(para.lstrip()):
            # A Markdown heading is its own line: the lines under it (no blank line between) are text.
            head, _, rest = para.partition("\n")
            blocks.append(Block(head, kind=BlockKind.HEADING, source=source))
            if rest.strip():
                blocks.append(Block(rest, source=source))
            continue
        blocks.append(Block(para, source=source))
    return blocks


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
