"""The library entry points: clean a file, a string, or an already extracted document."""

from __future__ import annotations

from pathlib import Path

from docsan.config import Config
from docsan.extract import load
from docsan.extract.text import text_document
from docsan.model import Document
from docsan.pipeline import CleanResult, Pipeline


def clean_document(doc: Document, config: Config | None = None) -> CleanResult:
    """Run the configured stages over ``doc``; ``doc`` itself is left untouched."""
    return Pipeline.from_config(config or Config()).run(doc)


def clean_file(path: str | Path, config: Config | None = None) -> CleanResult:
    """Extract ``path`` (PDF, text, Markdown, chat JSON; ``"-"`` for stdin) and clean it.

    Raises :class:`docsan.errors.InputError` when the file cannot be read.
    """
    config = config or Config()
    return clean_document(load(path, config.extract), config)


def clean_text(text: str, config: Config | None = None, *, name: str = "<text>") -> CleanResult:
    """Clean a string as a plain-text document (form feeds are page breaks)."""
    # A str can hold lone surrogates (from JSON escapes, say) that UTF-8
    # cannot encode: they arrive as U+FFFD, which normalize removes and reports.
    data = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return clean_document(text_document(data, name, (config or Config()).extract), config)
