"""The ``docsan`` command: one Typer app, one module per command."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, ClassVar

import typer

from .common import error_line
from .exit_codes import ExitCode
from .lazy_commands import LazyGroup, typer_command

if TYPE_CHECKING:
    from .lazy_commands import Builder

# -h as well as --help, on every command.
CONTEXT = {"help_option_names": ["-h", "--help"]}


class _Commands(LazyGroup):
    # In the order help lists them (Typer lists a group after the commands); each module is imported when its
    # command runs or a help lists it.
    builders: ClassVar[dict[str, Builder]] = {
        "clean": typer_command("clean", ".clean", "clean", no_args_is_help=True),
        "chunk": typer_command("chunk", ".chunk", "chunk", no_args_is_help=True),
        "ask": typer_command("ask", ".ask", "ask", no_args_is_help=True),
        "plan": typer_command("plan", ".plan", "plan_cmd", no_args_is_help=True),
        "config": typer_command("config", ".config_cmd", "config"),
        "schema": typer_command("schema", ".schema", "schema"),
        "serve": typer_command("serve", ".serve", "serve"),
        "queue": typer_command("queue", ".queue", "queue_app"),
    }


app = typer.Typer(
    name="docsan",
    help="Sanitize documents before they become LLM prompts, and run them on a tiered vLLM deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_Commands,
    context_settings=CONTEXT,
)


def _print_version(value: bool) -> None:
    if value:
        from docsan import __version__

        typer.echo(f"docsan {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print docsan's version and exit."),
    ] = False,
) -> None:
    """docsan: clean documents into prompts; ask questions of them on vLLM."""


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        error_line("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
