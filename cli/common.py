"""What every command shares: one-line errors, config loading."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

from rich.console import Console
from rich.markup import escape

from cli.exit_codes import ExitCode
from docsan.config import Config, load_config
from docsan.errors import DocsanError

err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def error_line(message: str) -> None:
    """Print ``docsan: error: message`` on stderr; the user sees one line, never a traceback."""
    # The message is escaped: a file name like "report[v2].pdf" is not markup.
    err_console.print(f"[bold red]docsan: error:[/] {escape(message)}", markup=True)


def fail(message: str, code: ExitCode = ExitCode.FAILED) -> NoReturn:
    error_line(message)
    sys.exit(code)


def get_config(path: Path | None) -> Config:
    try:
        return load_config(path)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)
