"""The document model every extractor produces and every stage transforms, and the record of an edit.

A :class:`Document` is a tuple of :class:`Page` objects, a page a tuple of
:class:`Block` objects. Everything is frozen: a stage never edits its input,
it builds a new document (``dataclasses.replace`` keeps that cheap because
untouched pages and blocks are shared, not copied).

A :class:`Change` records one removal, rewrite or finding. It is defined
here, below the report, because a document carries the changes its
extraction made (hidden text it left out); :mod:`docsan.report` holds the
vocabulary of change codes and assembles the audit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import cache
from operator import attrgetter
from typing import Any, TypeVar

from docsan.errors import InputError

_T = TypeVar("_T")


def _pickled_by_fields(cls: type[_T]) -> type[_T]:
    """Pickle a frozen, slotted dataclass as the tuple of its field values, as dataclasses do, but quicker.

    Why: for such a class, dataclasses (CPython 3.11) pickle through a
    ``__getstate__``/``__setstate__`` pair that calls ``dataclasses.fields``
    on every object. A ``--jobs`` run sends each result (the original and the
    cleaned document, the report) from its worker to the parent: on the
    corpus's 19 text-layer files, some 32,000 cells, blocks, boxes and changes:
    the round trip took 0.19-0.21 CPU s with those calls, 0.115 s without
    (docs/benchmarks.md, "Worker processes (``--jobs``), branch ``jobs8``").
    """
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    # attrgetter of a single name returns the value itself, not a 1-tuple: __setstate__ would misread it.
    if len(names) < 2:
        raise TypeError(f"{cls.__name__}: _pickled_by_fields needs at least two fields")
    values = attrgetter(*names)

    def __getstate__(self: _T) -> tuple[Any, ...]:
        return values(self)

    # Each field's slot descriptor, called directly: object.__setattr__ (the frozen class's way round its own
    # __setattr__) finds the same descriptor, but by a lookup per field: 22 % of the unpickling, measured.
    setters = tuple(getattr(cls, name).__set__ for name in names)

    def __setstate__(self: _T, state: tuple[Any, ...]) -> None:
        for set_field, value in zip(setters, state, strict=True):
            set_field(self, value)

    cls.__getstate__ = __getstate__  # type: ignore[attr-defined]
    cls.__setstate__ = __setstate__  # type: ignore[attr-defined]
    return cls


class BlockKind(StrEnum):
    """What a block is, as far as the extractor or a stage could tell."""

    TEXT = "text"
    HEADING = "heading"
    TABLE = "table"


class Source(StrEnum):
    """Where a block's text came from; OCR text is less trustworthy than a text layer."""

    TEXT_LAYER = "text_layer"
    OCR = "ocr"
    TABLE_EXTRACTOR = "table_extractor"
    PLAIN_TEXT = "plain_text"
    CHAT = "chat"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class BBox:
    """A rectangle in PDF points, origin top-left (PyMuPDF's convention)."""

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Cell:
    """One grid position of a table.

    A spanned cell is stored once, at its top-left position, with ``rowspan``
    or ``colspan`` above one; the positions it covers hold cells with
    ``covered=True`` and empty text, so every row keeps the same length.
    """

    text: str
    rowspan: int = 1
    colspan: int = 1
    covered: bool = False


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Table:
    """A rectangular grid of cells; row 0 is the header when ``header_rows`` > 0."""

    rows: tuple[tuple[Cell, ...], ...]
    header_rows: int = 1

    @property
    def n_rows(self) -> int:
        return len(self.rows)

    @property
    def n_cols(self) -> int:
        return max((len(r) for r in self.rows), default=0)

    @classmethod
    def from_strings(cls, rows: list[list[str | None]], header_rows: int = 1) -> Table:
        """Build a table from plain strings, padding short rows; ``None`` is an empty cell."""
        width = max((len(r) for r in rows), default=0)
        grid = tuple(tuple(Cell((c or "").strip()) for c in list(r) + [None] * (width - len(r))) for r in rows)
        return cls(grid, header_rows=min(header_rows, len(grid)))

    def text_rows(self) -> list[list[str]]:
        return [[c.text for c in r] for r in self.rows]


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Block:
    """A run of text the extractor saw as one unit: a paragraph, a heading, a table.

    ``text`` keeps the extractor's line breaks; the reflow stage joins them.
    For a table, ``text`` is a plain rendering of ``table`` (used for counting
    and searching); renderers use ``table`` itself.
    """

    text: str
    kind: BlockKind = BlockKind.TEXT
    source: Source = Source.TEXT_LAYER
    bbox: BBox | None = None
    table: Table | None = None
    # Largest font size in the block, when the extractor knows it; the
    # heading heuristics and furniture detection read it.
    font_size: float | None = None
    # In a chat message whose content is a list of parts: the index of the
    # text part this block came from, so the cleaned text goes back into
    # that part. None for a plain string content and for every other input.
    part: int | None = None

    def with_text(self, text: str) -> Block:
        return replace(self, text=text)


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Page:
    """One page of a PDF, one form-feed section of a text file, or one chat message.

    ``number`` is 1-based. ``role`` is set only for chat messages
    (``system``, ``user``, ``assistant``, ``tool``).
    """

    number: int
    blocks: tuple[Block, ...] = ()
    width: float | None = None
    height: float | None = None
    role: str | None = None
    # True when this page's text came from OCR (no usable text layer).
    ocr: bool = False

    def with_blocks(self, blocks: list[Block] | tuple[Block, ...]) -> Page:
        return replace(self, blocks=tuple(blocks))

    @property
    def text(self) -> str:
        return "\n\n".join(b.text for b in self.blocks if b.text)


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Gap:
    """Text the output lacks and the reader must be told about: the result is partial.

    ``page`` is the 1-based page the text is missing from (None: the whole
    document, e.g. pages cut by a limit); ``reason`` is one line, such as
    ``OCR gave up after 120 s``. A gap is not a removal by a stage (those are
    Changes): it is text docsan never got.
    """

    page: int | None
    reason: str

    def __str__(self) -> str:
        return f"page {self.page}: {self.reason}" if self.page is not None else self.reason


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class ChatRequest:
    """An OpenAI chat request as it was given, kept beside its chat document so the output has the same shape.

    ``messages`` are the message objects as parsed (every key: ``name``,
    ``tool_calls``, ``tool_call_id``, content parts...); page ``n`` of the
    document is ``messages[n - 1]``. ``fields`` is the request object around
    them (``model``, ``max_tokens``, ``temperature``... in their order,
    ``messages`` included), or None when the input was a bare messages list.
    Read-only by convention: nothing in docsan mutates these dicts.
    """

    messages: tuple[dict[str, Any], ...]
    fields: dict[str, Any] | None = None


class ChangeKind(StrEnum):
    """What a change did to the text; the code (``Change.code``) says which rule did it."""

    # Text was taken out; ``replacement``, when set, is what remains of it.
    REMOVED = "removed"
    # Text was changed into other text (mojibake repaired, lines joined, a token escaped).
    REWRITTEN = "rewritten"
    # Nothing was changed: something a reader should know (a table the extractor flattened).
    FINDING = "finding"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Change:
    """One removal, rewrite or finding, by a stage or by the extraction.

    ``code`` is machine-readable, from the vocabulary in docs/report.md
    (``furniture.running_header``); ``kind`` says what happened to the text;
    ``reason`` says it for a human, with the details (counts, similarity).
    ``text`` is what was there; ``replacement`` is the new text of a rewrite,
    or ``None`` for a removal; ``duplicate_of`` names what a removed repeat
    duplicated, so a reader can check it was really a repeat. Build one with
    its code's :meth:`docsan.report.ChangeCode.change`, which fills ``stage``,
    ``code`` and ``kind`` consistently.
    """

    stage: str
    reason: str
    page: int
    text: str
    replacement: str | None = None
    duplicate_of: str | None = None
    code: str = field(kw_only=True)
    kind: ChangeKind = field(kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "code": self.code, "kind": self.kind.value}
        out |= {"reason": self.reason, "page": self.page, "text": self.text}
        if self.replacement is not None:
            out["replacement"] = self.replacement
        if self.duplicate_of is not None:
            out["duplicate_of"] = self.duplicate_of
        return out


class DocumentKind(StrEnum):
    PDF = "pdf"
    TEXT = "text"
    MARKDOWN = "markdown"
    CHAT = "chat"


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Document:
    """An extracted document: what every stage takes and returns."""

    pages: tuple[Page, ...]
    kind: DocumentKind = DocumentKind.TEXT
    # Where it came from, for messages and reports ("-" for standard input).
    name: str = "<text>"
    # Extraction notes that are not removals (repaired xref, OCR'd pages...).
    notes: tuple[str, ...] = field(default=())
    # What the output lacks (see Gap); non-empty means a partial result.
    gaps: tuple[Gap, ...] = field(default=())
    # What the extraction left out of the text, with the text (hidden and
    # white text, a text layer replaced by OCR): the first part of the audit.
    extraction: tuple[Change, ...] = field(default=())
    # For a chat history: the request it came from (see ChatRequest). Left
    # out of the hash: its message dicts are not hashable.
    chat: ChatRequest | None = field(default=None, hash=False)

    def with_pages(self, pages: list[Page] | tuple[Page, ...]) -> Document:
        return replace(self, pages=tuple(pages))

    def blocks(self) -> Iterator[tuple[Page, Block]]:
        for page in self.pages:
            for block in page.blocks:
                yield page, block

    @property
    def text(self) -> str:
        """Plain text of the whole document; pages separated by a blank line."""
        # Each page's text is a join of its blocks: asked once, not once to test and again to join.
        return "\n\n".join(text for p in self.pages if (text := p.text))

    @property
    def is_chat(self) -> bool:
        return self.kind is DocumentKind.CHAT

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: ``schema_version``, then pages → blocks (text, kind, source, bbox, table grid).

        Fields left at ``None`` (a plain-text block has no ``bbox``) are
        omitted and read back as their defaults, so
        ``Document.from_dict(doc.to_dict()) == doc``. ``docsan schema document``
        describes it.
        """
        data = _document_adapter().dump_python(self, mode="json", exclude_none=True)
        return {"schema_version": SCHEMA_VERSION, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        """Read back what :meth:`to_dict` wrote; raises :class:`docsan.errors.InputError` naming the bad field."""
        from pydantic import ValidationError

        if not isinstance(data, dict):
            raise InputError("document data", f"expected an object, got {type(data).__name__}")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            problem = f"schema_version {version!r} is not {SCHEMA_VERSION} (the one docsan reads)"
            raise InputError("document data", problem)
        try:
            return _document_adapter().validate_python({k: v for k, v in data.items() if k != "schema_version"})
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(x) for x in first["loc"]) or "document"
            raise InputError("document data", f"{loc}: {first['msg']}") from None


# Bumped when a field of the JSON form is renamed or removed or changes meaning; an added optional
# field keeps it (old readers ignore it, old data lacks it).
SCHEMA_VERSION = 1


@cache
def _document_adapter() -> Any:
    """pydantic's serialiser and validator for :class:`Document`, built on first use (~50 ms).

    Derived from the dataclasses themselves, like the JSON Schema (docsan/schema.py): a field added
    to the model is in both.
    """
    from pydantic import TypeAdapter

    return TypeAdapter(Document)
