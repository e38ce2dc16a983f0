"""A package's public names imported on first use (PEP 562), for the packages whose parts few processes all need.

A name's module is imported by the first ``from package import Name`` or
``package.Name``, then the name is kept in the package, so the next access
is a plain lookup. A process that uses one part (``docsan clean`` never
trims a chat nor chunks) does not pay for importing the others. Type
checkers read the names from the package's ``if TYPE_CHECKING`` imports.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def home_of(homes: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """``{module: (name, ...)}`` turned round: each public name's module."""
    return {name: module for module, names in homes.items() for name in names}


def lazy_exports(
    namespace: dict[str, Any], homes: dict[str, tuple[str, ...]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``homes`` maps each module to the public names it defines. An unknown name
    raises AttributeError, which is also what lets ``from package import
    submodule`` fall back to importing the submodule.
    """
    homes_of = home_of(homes)
    package = namespace["__name__"]

    def __getattr__(name: str) -> object:
        module = homes_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes_of))

    return __getattr__, __dir__
