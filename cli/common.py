"""What every command shares: one-line errors, config loading, the --config option, choice enums."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, get_args

import typer
from rich.console import Console
from rich.markup import escape

from docsan.config import Config, load_config
from docsan.config.runner import BackendName
from docsan.errors import DocsanError

err_console = Console(stderr=True, highlight=False, soft_wrap=True)

# The one --config option of every command.
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML configuration file.", exists=True, dir_okay=False)
]


def choices(name: str, literal: Any) -> type[StrEnum]:
    """A choice enum for Typer whose values are those of a configuration ``Literal``, so the two cannot drift."""
    return StrEnum(name, {value.replace("-", "_"): value for value in get_args(literal)})  # type: ignore[return-value]


BackendChoice = choices("BackendChoice", BackendName)


def error_line(message: str) -> None:
    """Print ``docsan: error: message`` on stderr; the user sees one line, never a traceback."""
    # The message is escaped: a file name like "report[v2].pdf" is not markup.
    err_console.print(f"[bold red]docsan: error:[/] {escape(message)}", markup=True)


def fail(message: str, code: int = 1) -> NoReturn:
    error_line(message)
    sys.exit(code)


def get_config(path: Path | None) -> Config:
    try:
        return load_config(path)
    except DocsanError as err:
        fail(str(err), 2)


class TextOrJson(StrEnum):
    text = "text"
    json = "json"


# One name for one idea: every command that can print JSON takes --format json, as clean does.
FormatOption = Annotated[TextOrJson, typer.Option("--format", "-f", help="text, or json.")]
# The older spelling, kept working for existing scripts; not shown in help.
JsonAlias = Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")]


def wants_json(fmt: TextOrJson, alias: bool) -> bool:
    return alias or fmt is TextOrJson.json
