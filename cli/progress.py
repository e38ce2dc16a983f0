"""``docsan clean``'s bar on stderr: documents done of all, pages so far, time elapsed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .common import err_console

# Called once per finished document: its name, and the pages done so far in all.
Advance = Callable[[str, int], None]


@contextmanager
def document_progress(total: int, *, shown: bool) -> Iterator[Advance]:
    """A bar of ``total`` documents on :func:`~cli.common.err_console` while the block runs; gone when it ends.

    When it is not ``shown`` (one input, or stderr is not a terminal) nothing is
    drawn and rich's progress module is not even imported: most runs (scripts,
    pipes, one file) never show a bar.
    """
    if not shown:
        yield _nothing
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[pages]} pages"),
        TimeElapsedColumn(),
        console=err_console(),
        transient=True,
        # No refresh thread: worker processes are forked while the bar is up, and a fork must not
        # copy a thread holding the console's lock. The bar redraws at each finished document.
        auto_refresh=False,
    )
    with progress:
        task = progress.add_task("cleaning", total=total, pages=0)

        def advance(name: str, pages: int) -> None:
            progress.update(task, description=f"cleaned {name}", advance=1, pages=pages)
            progress.refresh()

        yield advance


def _nothing(name: str, pages: int) -> None:
    """No bar: nothing to advance."""
