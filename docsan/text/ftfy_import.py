"""ftfy, imported without loading wcwidth.

ftfy's ``__init__`` imports ``ftfy.formatting`` (``display_ljust`` and
``monospaced_width``, which lay out ``explain_unicode``'s terminal output),
and that module imports wcwidth: about thirty modules of width tables, 0.035 CPU s
of every process on this machine, for functions docsan never calls. While ftfy
imports, ``wcwidth`` is a stand-in whose functions import the real module when
first called; it leaves ``sys.modules`` right after, so ``import wcwidth``
anywhere later is the real one, and ftfy's formatting still works (it is
only slower to start).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _CallOnUse:
    """Stands in for a module while ftfy imports: each function taken from it imports the module when called."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Callable[..., object]:
        if attr.startswith("__"):  # the import system's probes (__path__, __spec__): not a package
            raise AttributeError(attr)

        def call(*args: object, **kwargs: object) -> object:
            return getattr(importlib.import_module(self._name), attr)(*args, **kwargs)

        call.__name__ = call.__qualname__ = attr
        return call


@contextmanager
def _deferred(name: str) -> Iterator[None]:
    """``name`` is a :class:`_CallOnUse` in ``sys.modules`` for the ``with`` body (unless already imported)."""
    stand_in = _CallOnUse(name) if name not in sys.modules else None
    if stand_in is not None:
        sys.modules[name] = stand_in  # type: ignore[assignment]
    try:
        yield
    finally:
        if stand_in is not None and sys.modules.get(name) is stand_in:
            del sys.modules[name]


with _deferred("wcwidth"):
    import ftfy

__all__ = ["ftfy"]
