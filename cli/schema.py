"""``docsan schema``: print the JSON Schema of an output, generated from the document model."""

from __future__ import annotations

import json
import sys
from typing import Annotated, get_args

import typer

from docsan.schema import SchemaName, json_schema

from .common import fail
from .exit_codes import ExitCode

NAMES: tuple[str, ...] = get_args(SchemaName)


def schema(
    name: Annotated[
        str,
        typer.Argument(help="clean (`clean --format json`), document (Document.to_dict), or chunk (a `chunk` line)."),
    ] = "clean",
) -> None:
    """Print the JSON Schema (draft 2020-12) of docsan's JSON outputs; docs/schema/ holds copies."""
    # Checked here, not by a Typer choice: Typer 0.29 words a bad choice as pydantic's "Value error, ..." in a box.
    if name not in NAMES:
        fail(f"no schema named {name!r}: the schemas are {', '.join(NAMES)}", ExitCode.USAGE)
    sys.stdout.write(json.dumps(json_schema(name), ensure_ascii=False, indent=2) + "\n")  # type: ignore[arg-type]
