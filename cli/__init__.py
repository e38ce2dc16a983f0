"""The ``docsan`` command-line front end (Typer). The library never imports this package."""

from docsan.collector import pause_for_imports


def run() -> None:
    """The ``docsan`` console script and ``python -m cli``: :func:`cli.main.main` in a process that is docsan's own.

    The collector is paused before the front end is imported (Typer, Click, then the command's modules: only
    long-lived objects) and resumed, with the batch settings, once the command is built (docs/performance.md).
    """
    pause_for_imports()
    from .main import main

    main()
