"""docsan: sanitize documents before they become LLM prompts.

Typical use::

    import docsan

    result = docsan.clean_file("report.pdf")
    print(result.text)                 # the cleaned text
    for change in result.report.changes:
        print(change.code, change.kind, change.reason, change.text[:40])
    for piece in docsan.chunk(result, max_tokens=512):
        print(piece.num_tokens, piece.page_numbers, piece.headings)

    for outcome in docsan.clean_files(paths, jobs=4):   # worker processes, as they finish
        print(outcome.source, outcome.error or len(outcome.result.text))

The library never imports the command-line front end (``cli``).
"""

from docsan.api import ChatCleaner, ChatResult, clean_chat, clean_document, clean_file, clean_text
from docsan.chunking import Chunk, chunk
from docsan.config import Config, ExtractConfig, load_config
from docsan.corpus import clean_files
from docsan.errors import ConfigError, DocsanError, InputError
from docsan.model import BBox, Block, BlockKind, Cell, ChangeKind, Document, DocumentKind, Page, Source, Table
from docsan.pipeline import CleanResult, Pipeline
from docsan.report import Change, Report, StageResult

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
