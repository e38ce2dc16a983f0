"""Help texts in the usual style: ``-o, --output PATH``, ``--budget N``, flags without a type.

Typer labels every parameter with its Python type (``<bool>``,
``<list[Path]>``, ``<str>``), which says more about the code than about
the command. These command and group classes show instead the parameter's
``metavar`` when it has one, nothing for flags and arguments (their name
says what they are), the choices for a choice, and a word for the rest;
and a bad value's message without the words of the pydantic check under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer.core

# The placeholder shown for each of Typer's type labels.
_WORDS = {
    "str": "TEXT",
    "int": "N",
    "int range": "N",
    "float": "NUMBER",
    "float range": "NUMBER",
    "path": "PATH",
    "file": "FILE",
    "directory": "DIR",
}


def value_label(param: Any, typer_label: str | None) -> str | None:
    """What stands after an option's name in help: its metavar, its choices, or a word for its type."""
    if param.metavar is not None:
        return param.metavar or None
    if param.param_type_name == "argument" or getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    label = (typer_label or "").strip("<>")
    return _WORDS.get(label, label.upper() if label.isidentifier() else label) or None


# Typer 0.29 checks a choice with pydantic, whose message starts with this: the user wrote no Python.
_PYDANTIC_PREFIX = "Value error, "


def _plain_error(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except typer.BadParameter as err:
        err.message = err.message.removeprefix(_PYDANTIC_PREFIX)
        raise


class _Option(typer.core.TyperOption):
    def display_type_rich(self, ctx: Any) -> str | None:
        return value_label(self, super().display_type_rich(ctx))

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _plain_error(lambda: super(_Option, self).process_value(ctx, value))


class _Argument(typer.core.TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return value_label(self, super().display_type_rich(ctx))

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _plain_error(lambda: super(_Argument, self).process_value(ctx, value))


_PLAIN = {typer.core.TyperOption: _Option, typer.core.TyperArgument: _Argument}


def _relabel(params: list[Any]) -> list[Any]:
    for p in params:
        plain = _PLAIN.get(type(p))
        if plain is not None:
            p.__class__ = plain  # same layout, two methods differ
    return params


class Command(typer.core.TyperCommand):
    def get_params(self, ctx: Any) -> list[Any]:
        return _relabel(super().get_params(ctx))


class Group(typer.core.TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return _relabel(super().get_params(ctx))
