"""Extraction: any supported input to a :class:`~docsan.model.Document`.

The input type is decided by content, not only by extension (``sniff``): a
file with a PDF header is a PDF whatever its name; a ``.pdf`` that is a JPEG,
a DOCX or an HTML page is refused as what it is; a JSON file is a chat
history only if it holds a ``messages`` list.
"""

from __future__ import annotations

from pathlib import Path

from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract import sniff
from docsan.extract.content_size import MIB
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

        return load_bytes(sys.stdin.buffer.read(), "-", config)
    p = Path(path)
    name = str(p)
    if not p.exists():
        raise InputError(name, "no such file")
    if p.is_dir():
        raise InputError(name, "is a directory")
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            head = fh.read(sniff.PDF_HEADER_WINDOW)
    except OSError as err:
        raise InputError(name, f"cannot read: {err.strerror}") from None
    if not head:
        raise InputError(name, "empty file")
    suffix = p.suffix.lower()
    if sniff.is_pdf(head):
        from docsan.extract.pdf import load_pdf

        return load_pdf(p, config)
    if suffix == ".pdf" or suffix not in TEXT_SUFFIXES | CHAT_SUFFIXES:
        # Whatever it is named, a file that is an image, an Office file or a web page is refused as what it is.
        # A ZIP is looked into for what it holds; one too large to read is named a ZIP archive.
        whole = head.startswith(b"PK") and size <= config.max_text_mib * MIB
        what = sniff.sniff(_read(p, name, config) if whole else head)
        if what is not None:
            raise InputError(name, f"unsupported input: {what}; docsan reads {_WANTED}")
    if suffix == ".pdf":
        raise InputError(name, "not a PDF (no %PDF- header in its first kilobyte)")
    if suffix in CHAT_SUFFIXES:
        from docsan.extract.chat import chat_document

        return chat_document(_read(p, name, config), name, config)
    if suffix in TEXT_SUFFIXES or (suffix not in _KNOWN_BINARY and _looks_like_text(head)):
        from docsan.extract.text import text_document

        return text_document(_read(p, name, config), name, config, markdown=suffix in {".md", ".markdown"})
    raise InputError(name, f"unsupported input ({suffix or 'unknown type'}); docsan reads {_WANTED}")


def load_bytes(data: bytes, name: str, config: ExtractConfig | None = None) -> Document:
    """Read an input given as bytes (standard input, an upload): PDF, chat JSON or text, by content."""
    config = config or ExtractConfig()
    if not data.strip():
        raise InputError(name, "empty input")
    if sniff.is_pdf(data):
        from docsan.extract.pdf import load_pdf

        return load_pdf(data, config, name=name)
    what = sniff.sniff(data)
    if what is not None and what not in ("an HTML page", "an XHTML page"):
        raise InputError(name, f"unsupported input: {what}; docsan reads {_WANTED}")
    if len(data) > config.max_text_mib * MIB:
        raise InputError(name, _too_large(len(data), config))
    from docsan.extract.chat import chat_document, looks_like_chat
    from docsan.extract.text import text_document

    if looks_like_chat(data):
        return chat_document(data, name, config)
    return text_document(data, name, config)


_WANTED = "PDF, text, Markdown and chat JSON"


def _read(p: Path, name: str, config: ExtractConfig) -> bytes:
    """The whole file, for the readers that decode it in memory (text, chat JSON, a ZIP to sniff)."""
    try:
        size = p.stat().st_size
        if size > config.max_text_mib * MIB:
            raise InputError(name, _too_large(size, config))
        return p.read_bytes()
    except OSError as err:
        raise InputError(name, f"cannot read: {err.strerror}") from None


def _too_large(size: int, config: ExtractConfig) -> str:
    return f"{size / MIB:.1f} MiB of text, over the max_text_mib limit of {config.max_text_mib:g} MiB"


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


__all__ = ["load", "load_bytes"]
