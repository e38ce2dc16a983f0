"""The ``docsan`` command: one Typer app, one module per command."""

from __future__ import annotations

import typer

from cli.ask import ask
from cli.chunk import chunk
from cli.clean import clean
from cli.config_cmd import config
from cli.plan import plan_cmd
from cli.queue import queue_app
from cli.schema import schema

app = typer.Typer(
    name="docsan",
    help="Sanitize documents before they become LLM prompts, and run them on a tiered vLLM deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command(no_args_is_help=True)(clean)
app.command(no_args_is_help=True)(chunk)
app.command(no_args_is_help=True)(ask)
app.command("plan", no_args_is_help=True)(plan_cmd)
app.add_typer(queue_app, name="queue")
app.command("config")(config)
app.command("schema")(schema)


@app.callback()
def _root() -> None:
    """docsan: clean documents into prompts; ask questions of them on vLLM."""


def main() -> None:
    app()
