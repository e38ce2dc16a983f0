"""Extraction: any supported input to a :class:`~docsan.model.Document`.

The input type is decided by content, not only by extension: a ``.pdf`` that
does not start with ``%PDF`` is reported as "not a PDF", and a JSON file is a
chat history only if it holds a ``messages`` list.
"""

from __future__ import annotations

from pathlib import Path

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.model import Document

TEXT_SUFFIXES = {".txt", ".text", ".md", ".markdown", ".log", ""}
CHAT_SUFFIXES = {".json"}


def load(path: str | Path, config: ExtractConfig | None = None) -> Document:
    """Read ``path`` (``"-"`` for standard input) into a document.

    Raises :class:`~docsan.errors.InputError` with a one-line reason for
    anything that cannot be read.
    """
    config = config or ExtractConfig()
    if str(path) == "-":
        import sys

        from docsan.extract.text import text_document

        data = sys.stdin.buffer.read()
        return _load_bytes_as_text_or_chat(data, "-")
    p = Path(path)
    name = str(p)
    if not p.exists():
        raise InputError(name, "no such file")
    if p.is_dir():
        raise InputError(name, "is a directory")
    try:
        with p.open("rb") as fh:
            head = fh.read(1024)
    except OSError as err:
        raise InputError(name, f"cannot read: {err.strerror}") from None
    if not head:
        raise InputError(name, "empty file")
    suffix = p.suffix.lower()
    if head.lstrip().startswith(b"%PDF") or suffix == ".pdf":
        from docsan.extract.pdf import load_pdf

        return load_pdf(p, config)
    if suffix in CHAT_SUFFIXES:
        from docsan.extract.chat import chat_document

        return chat_document(p.read_bytes(), name)
    if suffix in TEXT_SUFFIXES or (suffix not in _KNOWN_BINARY and _looks_like_text(head)):
        from docsan.extract.text import text_document

        return text_document(p.read_bytes(), name, markdown=suffix in {".md", ".markdown"})
    raise InputError(
        name, f"unsupported input ({suffix or 'unknown type'}); docsan reads PDF, text, Markdown and chat JSON"
    )


# Formats users upload that docsan does not read; named so the error says so
# instead of decoding a ZIP container as text.
_KNOWN_BINARY = {
    ".docx",
    ".doc",
    ".xlsx",
    ".xls",
    ".pptx",
    ".ppt",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".tif",
    ".tiff",
    ".bmp",
    ".webp",
    ".zip",
    ".gz",
    ".epub",
    ".odt",
}


def _looks_like_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut at the 1024-byte boundary is still text.
        return err.start >= len(head) - 3
    return True


def _load_bytes_as_text_or_chat(data: bytes, name: str) -> Document:
    from docsan.extract.chat import chat_document, looks_like_chat
    from docsan.extract.text import text_document

    if not data.strip():
        raise InputError(name, "empty input")
    if looks_like_chat(data):
        return chat_document(data, name)
    return text_document(data, name)


__all__ = ["load"]
