"""How much a PDF page asks MuPDF to interpret, measured without decoding a bomb.

MuPDF reads a page in one call that cannot be interrupted, and its time and
memory grow with the decoded size of the page's content: a 130 KB file whose
one content stream inflates to 64 MiB of path operators ran 150 s and took
2.8 GB before it was stopped, most of it in the drawings collected for ruled
tables. The largest page of the shared corpus and hostile files decodes to
1.4 MiB. So before a page is read, its content streams and the form XObjects
it draws are measured, each counted once:

* a Flate stream (the filter PDF writers use, and the bomb's) is inflated in
  chunks and counting stops past the limit, so a bomb is never held in memory;
* an unfiltered stream is its length;
* any other filter chain (LZW, ASCII85, RunLength...) is decoded by MuPDF,
  which bounds it by the stream's own expansion ratio.

:func:`docsan.extract.pdf.load_pdf` reads a page over
``ExtractConfig.page_drawings_mib`` without its drawings (no ruled tables)
and does not read one over ``ExtractConfig.max_page_content_mib`` (a gap of
a partial result).
"""

from __future__ import annotations

import zlib

from docsan.extract.mupdf import pymupdf

MIB = 1 << 20
# Inflate at most this much per step: the counting never holds more than one chunk.
_CHUNK = 1 << 20
_FLATE = ("/FlateDecode", "/Fl")


def decoded_size(doc: pymupdf.Document, page: pymupdf.Page, limit: int) -> int:
    """Decoded bytes of ``page``'s content streams and form XObjects; any value above ``limit`` means "too much"."""
    xrefs = list(dict.fromkeys([*page.get_contents(), *(x[0] for x in page.get_xobjects())]))
    total = 0
    for xref in xrefs:
        total += _stream_size(doc, xref, limit - total)
        if total > limit:
            break
    return total


def _stream_size(doc: pymupdf.Document, xref: int, budget: int) -> int:
    """The decoded size of one stream, counted up to ``budget + 1``."""
    kind, value = doc.xref_get_key(xref, "Filter")
    filters = value.strip("[]").split() if kind in ("name", "array") else []
    try:
        if not filters:
            return len(doc.xref_stream_raw(xref) or b"")
        if len(filters) == 1 and filters[0] in _FLATE:
            return _inflated_size(doc.xref_stream_raw(xref) or b"", budget)
        return len(doc.xref_stream(xref) or b"")
    except (RuntimeError, ValueError):
        return 0  # MuPDF cannot decode it either: it interprets nothing of it


def _inflated_size(raw: bytes, budget: int) -> int:
    inflater = zlib.decompressobj()
    size = 0
    data = raw
    try:
        while data and size <= budget:
            size += len(inflater.decompress(data, _CHUNK))
            data = inflater.unconsumed_tail
        if size <= budget:
            size += len(inflater.flush())
    except zlib.error:
        pass  # a damaged stream: MuPDF interprets what inflates before the damage, which is what was counted
    return size
