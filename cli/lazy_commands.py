"""The ``docsan`` group's commands, each built from its module when it is first asked for.

Typer builds every command of a group when the program starts, so each
command's module (and what it imports: the runner for ``plan``, the chunker,
the schema, the queue...) would load for every command run. Here the group's
``commands`` mapping holds each command's name from the start, in the order
help lists them, and builds a command on its first lookup, exactly as Typer
would have (a one-command Typer app of the same settings): a ``docsan clean``
imports only ``cli.clean``, and ``docsan --help``, which lists them all, builds
them all. Names are known without importing anything, so a mistyped command
still gets its "Did you mean" suggestion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar

import typer
import typer.core
import typer.main

from docsan.collector import resume_after_imports

from .help import Command, Group

if TYPE_CHECKING:
    # Annotations only. Typer 0.29 vendors Click as typer._click (its groups take and give that Click's
    # classes), so importing the click distribution at run time loaded a second Click, 12 modules that no
    # command used, into every process.
    from typer import _click as click

# What a group holds: commands, and groups of commands (``docsan queue``).
ClickCommand = typer.core.TyperCommand | typer.core.TyperGroup
# Builds one of them when it is first looked up.
Builder = Callable[[], ClickCommand]


def typer_command(name: str, module: str, attr: str, **settings: Any) -> Builder:
    """A builder of command ``name`` from ``module.attr`` (``module`` relative to this package, which is installed
    as ``docsan_cli``): a command function, or a Typer app (a group under it).

    ``settings`` are those of ``Typer.command`` (``cls`` is always :class:`cli.help.Command`).
    """

    def build() -> ClickCommand:
        target = getattr(import_module(module, __package__), attr)
        holder = typer.Typer(add_completion=False)
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=name)
        else:
            holder.command(name, cls=Command, **settings)(target)
        return typer.main.get_group(holder).commands[name]

    return build


class LazyCommands(MutableMapping[str, ClickCommand]):
    """Command name → command, each built by its builder on the first lookup and kept."""

    def __init__(self, builders: dict[str, Builder]) -> None:
        self._builders = builders
        self._built: dict[str, ClickCommand] = {}

    def __getitem__(self, name: str) -> ClickCommand:
        command = self._built.get(name)
        if command is None:
            command = self._built[name] = self._builders[name]()
        return command

    def __setitem__(self, name: str, command: ClickCommand) -> None:
        self._builders.setdefault(name, lambda: command)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._builders[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)


class LazyGroup(Group):
    """A :class:`cli.help.Group` whose commands are those of its class's ``builders``, built on first use."""

    builders: ClassVar[dict[str, Builder]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        commands = LazyCommands(dict(self.builders))
        for name, command in self.commands.items():
            commands[name] = command
        self.commands = commands

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's lookup of the command to run; once it is built (its modules imported), the collector runs again."""
        found = super().resolve_command(ctx, args)
        resume_after_imports()
        return found
