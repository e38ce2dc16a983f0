"""The ``docsan`` command: one Typer app, one module per command."""

from __future__ import annotations

from typing import Annotated

import typer

from .ask import ask
from .chunk import chunk
from .clean import clean
from .config_cmd import config
from .help import Command, Group
from .plan import plan_cmd
from .queue import queue_app
from .schema import schema
from .serve import serve

# -h as well as --help, on every command.
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="docsan",
    help="Sanitize documents before they become LLM prompts, and run them on a tiered vLLM deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=Group,
    context_settings=CONTEXT,
)
app.command(no_args_is_help=True, cls=Command)(clean)
app.command(no_args_is_help=True, cls=Command)(chunk)
app.command(no_args_is_help=True, cls=Command)(ask)
app.command("plan", no_args_is_help=True, cls=Command)(plan_cmd)
app.add_typer(queue_app, name="queue")
app.command("config", cls=Command)(config)
app.command("schema", cls=Command)(schema)
app.command("serve", cls=Command)(serve)


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
    app()
