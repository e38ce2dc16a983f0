"""What every command shares: one-line errors, config loading, the --config option, choice enums."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, get_args

import typer

from docsan.budget.template_markers import TEMPLATE_MARKERS, check_families
from docsan.config import Config, load_config
from docsan.config.runner import BackendName
from docsan.config.token_budget import valid_budget
from docsan.errors import DocsanError

from .exit_codes import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

# The environment variables with which rich takes a stream that is no TTY for a terminal (Console.is_terminal).
_RICH_TERMINAL_SWITCHES = ("FORCE_COLOR", "TTY_COMPATIBLE")


@cache
def err_console() -> Console:
    """The console every stderr line and the progress bar go through; rich is imported when the first is drawn."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stderr_is_terminal() -> bool:
    """Whether :func:`err_console` writes to a terminal, as rich answers it (the summary and the bar are for a person).

    rich is asked only where its answer can be yes: stderr is a TTY, or one of its switches is set (Jupyter and
    IDLE only turn its yes into no). Otherwise (a pipe or a file: scripts, CI, every benchmark) the answer is no
    without importing rich, whose import is 76 M instructions (a ``clean`` of the corpus: 54 M, 0.33 %, fewer).
    """
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one: rich says no terminal too
        tty = False
    if not tty and not any(os.environ.get(name) for name in _RICH_TERMINAL_SWITCHES):
        return False
    return err_console().is_terminal


# The one --config option of every command.
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML configuration file.", exists=True, dir_okay=False)
]


# The one --template-markers option of clean, ask and serve: the special_tokens stage's template_markers.
TemplateMarkersOption = Annotated[
    str | None,
    typer.Option(
        "--template-markers",
        help="Chat templates whose control markers are escaped beside the tokenizer's own, comma-separated "
        f"({', '.join(TEMPLATE_MARKERS)}; default: all), or none.",
        show_default=False,
    ),
]


def template_marker_options(value: str | None) -> dict[str, dict[str, Any]]:
    """The stage options --template-markers sets (none when not given: the TOML's or the default stand)."""
    if value is None:
        return {}
    families = () if value == "none" else tuple(f.strip() for f in value.split(","))
    try:
        check_families(families)
    except ValueError as err:
        fail(f"--template-markers: {err}", ExitCode.USAGE)
    return {"special_tokens": {"template_markers": list(families)}}


def budget_option(value: int | None) -> int | None:
    """The callback of every --budget: the one rule of a budget (docsan/config/token_budget.py), in its words.

    Checked here, not by Typer's ``min``: Typer words that as pydantic's "greater than or equal to 1", in a box.
    """
    if value is not None:
        try:
            valid_budget(value)
        except ValueError as err:
            fail(f"--budget: {err}", ExitCode.USAGE)
    return value


def choices(name: str, literal: Any) -> type[StrEnum]:
    """A choice enum for Typer whose values are those of a configuration ``Literal``, so the two cannot drift."""
    return StrEnum(name, {value.replace("-", "_"): value for value in get_args(literal)})  # type: ignore[return-value]


BackendChoice = choices("BackendChoice", BackendName)


def error_line(message: str) -> None:
    """Print ``docsan: error: message`` on stderr; the user sees one line, never a traceback."""
    from rich.markup import escape

    # The message is escaped: a file name like "report[v2].pdf" is not markup.
    err_console().print(f"[bold red]docsan: error:[/] {escape(message)}", markup=True)


def say_skipped(path: Path) -> None:
    """A folder's file of a type docsan does not read: listed, so nothing is left out silently."""
    err_console().print(f"docsan: skipped {path}: unsupported file type", highlight=False, markup=False)


def fail(message: str, code: ExitCode = ExitCode.FAILED) -> NoReturn:
    error_line(message)
    sys.exit(code)


def get_config(path: Path | None) -> Config:
    try:
        return load_config(path)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)


class TextOrJson(StrEnum):
    text = "text"
    json = "json"


# One name for one idea: every command that can print JSON takes --format json, as clean does.
FormatOption = Annotated[TextOrJson, typer.Option("--format", "-f", help="text, or json.")]
# The older spelling, kept working for existing scripts; not shown in help.
JsonAlias = Annotated[bool, typer.Option("--json", hidden=True, help="The same as --format json.")]


def wants_json(fmt: TextOrJson, alias: bool) -> bool:
    return alias or fmt is TextOrJson.json
