"""docsan: sanitize documents before they become LLM prompts.

Typical use::

    import docsan

    result = docsan.clean_file("report.pdf")
    print(result.text)                 # the cleaned text
    for change in result.report.changes:
        print(change.code, change.kind, change.reason, change.text[:40])
    for piece in docsan.chunk(result, chunk_tokens=512):
        print(piece.num_tokens, piece.page_numbers, piece.headings)

    for outcome in docsan.clean_files(paths, jobs=4):   # worker processes, as they finish
        print(outcome.source, outcome.error or len(outcome.result.text))

The library never imports the command-line front end (``cli``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docsan.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from docsan.api import ChatCleaner, ChatResult, clean_chat, clean_document, clean_file, clean_text
    from docsan.chunking import Chunk, chunk
    from docsan.config import Config, ExtractConfig, load_config
    from docsan.corpus import clean_files
    from docsan.errors import ConfigError, DocsanError, InputError
    from docsan.model import BBox, Block, BlockKind, Cell, ChangeKind, Document, DocumentKind, Page, Source, Table
    from docsan.pipeline import CleanResult, Pipeline
    from docsan.report import Change, Report, StageResult

# Each public name's module, imported on first use (PEP 562): a process that needs one part of docsan (the CLI's
# `clean` never chunks or cleans a chat) does not pay for importing the others.
_HOMES = {
    "docsan.api": ("ChatCleaner", "ChatResult", "clean_chat", "clean_document", "clean_file", "clean_text"),
    "docsan.chunking": ("Chunk", "chunk"),
    "docsan.config": ("Config", "ExtractConfig", "load_config"),
    "docsan.corpus": ("clean_files",),
    "docsan.errors": ("ConfigError", "DocsanError", "InputError"),
    "docsan.model": (
        "BBox",
        "Block",
        "BlockKind",
        "Cell",
        "ChangeKind",
        "Document",
        "DocumentKind",
        "Page",
        "Source",
        "Table",
    ),
    "docsan.pipeline": ("CleanResult", "Pipeline"),
    "docsan.report": ("Change", "Report", "StageResult"),
}

__version__ = "0.1.0"

__all__ = [
    "BBox",
    "Block",
    "BlockKind",
    "Cell",
    "Change",
    "ChangeKind",
    "ChatCleaner",
    "ChatResult",
    "Chunk",
    "CleanResult",
    "Config",
    "ConfigError",
    "DocsanError",
    "Document",
    "DocumentKind",
    "ExtractConfig",
    "InputError",
    "Page",
    "Pipeline",
    "Report",
    "Source",
    "StageResult",
    "Table",
    "chunk",
    "clean_chat",
    "clean_document",
    "clean_file",
    "clean_files",
    "clean_text",
    "load_config",
]


__getattr__, __dir__ = lazy_exports(globals(), _HOMES)
