"""The document model as JSON data: ``Document.to_dict`` / ``from_dict`` and the JSON Schemas of the outputs.

Serialisation and the schemas are both derived by pydantic from the frozen
dataclasses in :mod:`docsan.model` and :mod:`docsan.report`, so the schema
cannot drift from what is written: a field added to the model appears in both.
The committed copies under ``docs/schema/`` are checked against these by a test.

Fields left at ``None`` are omitted (a plain-text block has no ``bbox``); they
read back as their defaults, so ``Document.from_dict(doc.to_dict()) == doc``.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter, ValidationError

from docsan.errors import InputError
from docsan.model import Document

if TYPE_CHECKING:
    from docsan.pipeline import CleanResult

# Bumped when a field is renamed or removed or changes meaning; adding an
# optional field keeps the version (old readers ignore it, old data lacks it).
SCHEMA_VERSION = 1
SchemaName = Literal["clean", "document", "chunk"]
_DRAFT = "https://json-schema.org/draft/2020-12/schema"


@cache
def _document_adapter() -> TypeAdapter[Document]:
    # Built on first use: pydantic compiles a validator, which costs ~50 ms.
    return TypeAdapter(Document)


def document_to_dict(doc: Document) -> dict[str, Any]:
    """Plain JSON-ready data: ``schema_version``, then pages → blocks (text, kind, source, bbox, table grid)."""
    return {"schema_version": SCHEMA_VERSION, **_document_adapter().dump_python(doc, mode="json", exclude_none=True)}


def document_from_dict(data: dict[str, Any]) -> Document:
    """The inverse of :func:`document_to_dict`; raises :class:`InputError` naming the bad field."""
    if not isinstance(data, dict):
        raise InputError("document data", f"expected an object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError("document data", f"schema_version {version!r} is not {SCHEMA_VERSION} (the one docsan reads)")
    fields = {k: v for k, v in data.items() if k != "schema_version"}
    try:
        return _document_adapter().validate_python(fields)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "document"
        raise InputError("document data", f"{loc}: {first['msg']}") from None


def clean_output(result: CleanResult) -> dict[str, Any]:
    """What ``docsan clean --format json`` writes: the cleaned text, the document structure, the report."""
    from docsan.render import render_messages, render_text

    doc = result.document
    payload: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "source": doc.name, "kind": str(doc.kind)}
    if doc.is_chat:
        payload["messages"] = render_messages(doc)
    else:
        payload["text"] = render_text(doc)
    payload["document"] = document_to_dict(doc)
    payload["report"] = result.report.to_dict()
    return payload


def json_schema(name: SchemaName = "clean") -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one output, generated from the model."""
    from docsan.chunking import Chunk
    from docsan.report import Report

    if name == "chunk":
        schema = TypeAdapter(Chunk).json_schema(mode="serialization")
        return {"$schema": _DRAFT, **schema}
    doc_schema = _versioned(TypeAdapter(Document).json_schema(mode="serialization"))
    if name == "document":
        return {"$schema": _DRAFT, **doc_schema}
    defs = doc_schema.pop("$defs")
    report_schema = TypeAdapter(Report).json_schema(mode="serialization")
    defs |= report_schema.pop("$defs")
    defs["Document"] = doc_schema
    defs["Report"] = report_schema
    return {
        "$schema": _DRAFT,
        "title": "docsan clean --format json",
        "description": "The cleaned text (or chat messages), the cleaned document's structure and the audit report.",
        "type": "object",
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "source": {"type": "string", "description": "The input's path ('-' for standard input)."},
            "kind": {"$ref": "#/$defs/DocumentKind"},
            "text": {"type": "string", "description": "The cleaned text, as `--format text` writes it."},
            "messages": {
                "type": "array",
                "description": "For a chat history instead of text: the sanitized messages.",
                "items": {"type": "object"},
            },
            "document": {"$ref": "#/$defs/Document"},
            "report": {"$ref": "#/$defs/Report"},
        },
        "required": ["schema_version", "source", "kind", "document", "report"],
        "$defs": dict(sorted(defs.items())),
    }


def _versioned(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the ``schema_version`` field that :func:`document_to_dict` writes in front of the model's fields."""
    schema["properties"] = {"schema_version": {"const": SCHEMA_VERSION}, **schema["properties"]}
    schema["required"] = ["schema_version", *schema.get("required", [])]
    return schema
