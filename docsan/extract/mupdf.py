"""PyMuPDF, imported without the add-ons that its ``__init__`` pulls in.

PyMuPDF 2.0 depends on ``pymupdf-layout`` and ``pymupdf4llm`` and imports
both from its own ``__init__`` when installed: they load onnxruntime and an
ONNX layout model (about 0.6 s per process on this machine) for
``Page.get_layout()`` and ``Document.to_markdown()``, which docsan never
calls. There is no switch for it, so their names are blocked while PyMuPDF
imports and unblocked right after. Nothing is lost for other code in the
same process: ``import pymupdf.layout`` still works later (and activates the
plugin then), and ``Document.to_markdown()`` & co. import pymupdf4llm on first use.

pymupdf4llm's import also changes three process-wide MuPDF settings, and
docsan's extractor (line boxes, column gutters, heading sizes) was tuned
with them in force, so :func:`_settings` sets them explicitly instead.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

_ADDONS = ("pymupdf.layout", "pymupdf4llm")


class _ImportOnUse:
    """Stands in for a module until an attribute is read (PyMuPDF only tests it for truth, then calls it)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> object:
        return getattr(importlib.import_module(self._name), attr)


def _settings(pymupdf: ModuleType) -> None:
    """What importing pymupdf4llm sets: glyph-tight boxes, no MuPDF messages on stderr."""
    # Without ascender/descender corrections, a line's box is as tall as its
    # glyphs, not the font's full line height: lines of tight leading do not
    # overlap, which reading order and the column split rely on.
    pymupdf.TOOLS.unset_quad_corrections(True)
    # Damaged files are reported by docsan in one line (or repaired, with a note).
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)


def _import_without_addons() -> ModuleType:
    if "pymupdf" in sys.modules:
        # Imported before docsan (with its add-ons, or by this function).
        return sys.modules["pymupdf"]
    # A None entry makes `import NAME` raise ImportError, which PyMuPDF catches.
    blocked = [name for name in _ADDONS if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import pymupdf
    finally:
        for name in blocked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
    if pymupdf.pymupdf4llm is None and importlib.util.find_spec("pymupdf4llm") is not None:
        pymupdf.pymupdf4llm = _ImportOnUse("pymupdf4llm")
    return pymupdf


pymupdf = _import_without_addons()
# Also when PyMuPDF was imported first: the settings must not depend on which add-ons are installed.
_settings(pymupdf)
