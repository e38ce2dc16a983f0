"""``docsan schema``: print the JSON Schema of an output, generated from the document model."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Annotated

import typer

from docsan.schema import json_schema


class SchemaName(StrEnum):
    clean = "clean"
    document = "document"
    chunk = "chunk"


def schema(
    name: Annotated[
        SchemaName,
        typer.Argument(help="clean (`clean --format json`), document (Document.to_dict), or chunk (a `chunk` line)."),
    ] = SchemaName.clean,
) -> None:
    """Print the JSON Schema (draft 2020-12) of docsan's JSON outputs; docs/schema/ holds copies."""
    sys.stdout.write(json.dumps(json_schema(name.value), ensure_ascii=False, indent=2) + "\n")
