"""The ``docsan`` command: one Typer app, one module per command."""

from __future__ import annotations

import sys

import typer

from cli.ask import ask
from cli.clean import clean
from cli.common import error_line
from cli.config_cmd import config
from cli.exit_codes import ExitCode
from cli.plan import plan_cmd
from cli.queue import queue_app

app = typer.Typer(
    name="docsan",
    help="Sanitize documents before they become LLM prompts, and run them on a tiered vLLM deployment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command(no_args_is_help=True)(clean)
app.command(no_args_is_help=True)(ask)
app.command("plan", no_args_is_help=True)(plan_cmd)
app.add_typer(queue_app, name="queue")
app.command("config")(config)


@app.callback()
def _root() -> None:
    """docsan: clean documents into prompts; ask questions of them on vLLM."""


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        error_line("interrupted")
        sys.exit(ExitCode.INTERRUPTED)
