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

One more setting is switched only around docsan's own calls and left on,
MuPDF's default, after them: :func:`colour_management`. docsan's text passes
run without MuPDF's colour management (ICC), its renders with it.
docs/extraction.md ("Colours without colour management") says why and what
it means for CMYK text.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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


# MuPDF's colour management is one flag of its one context (PyMuPDF runs MuPDF single-threaded):
# switching it affects every thread. Text passes and renders switch it under this lock, so that a
# server extracting in threads judges text colours and draws pages the same as one extraction alone.
_COLOUR_LOCK = threading.Lock()


@contextmanager
def colour_management(enabled: bool) -> Iterator[None]:
    """MuPDF's colour management on or off for the MuPDF calls inside; on (MuPDF's default) again after.

    Off, MuPDF converts a text or vector colour to RGB by formula (``r = 1 - min(1, c + k)`` for
    CMYK) instead of through the ICC profiles: the first conversion from each colour space costs
    ~125 M instructions (an lcms link sampling the CMYK profile), 6 links and 4 % of a whole
    ``clean`` on the corpus, for colours that are only tested against white. Renders for OCR keep
    it on: the grey render of an RGB scan differs without it (up to 70 of 255 levels on the corpus).

    PyMuPDF has no getter for the flag: a caller that had switched it off finds it on after this.
    Keep one MuPDF call inside (the lock does not nest).
    """
    # MuPDF's own switches: PyMuPDF's ``TOOLS.set_icc(True)`` raises where MuPDF is built without ICC
    # (there fz_enable_icc only warns, and MuPDF's warnings are off).
    with _COLOUR_LOCK:
        if enabled:
            pymupdf.mupdf.fz_enable_icc()
        else:
            pymupdf.mupdf.fz_disable_icc()
        try:
            yield
        finally:
            pymupdf.mupdf.fz_enable_icc()
