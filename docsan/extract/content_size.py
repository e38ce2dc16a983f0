"""How much a PDF page asks MuPDF to interpret, measured without decoding a bomb.

MuPDF reads a page in one call that cannot be interrupted, and its time and
memory grow with the decoded size of the page's content: a 130 KB file whose
one content stream inflates to 64 MiB of path operators ran 150 s and took
2.8 GB before it was stopped, most of it in the drawings collected for ruled
tables. The largest page of the shared corpus and hostile files decodes to
1.4 MiB. So before a page is read, its content streams and the form XObjects
it draws are measured, each counted once, with MuPDF's own decoders: the
stream is opened and *skipped* (``fz_skip``: decoded in small steps, nothing
kept) up to one byte past the limit, so a bomb is never held in memory and
every filter chain (Flate, LZW, ASCII85, RunLength...) is decoded as MuPDF
will decode it.

Image codecs (JBIG2, DCT, JPX, CCITT) are the exception: their decoders
produce a whole image at once (pdf.js's ``bomb_giant`` puts 1.16 GB JBIG2
pages in content streams), so such a stream counts as its raw length; MuPDF's
interpreter stops that kind of bomb itself ("compression bomb detected").

:func:`docsan.extract.pdf.load_pdf` reads a page over
``ExtractConfig.page_drawings_mib`` without its drawings (no ruled tables)
and does not read one over ``ExtractConfig.max_page_content_mib`` (a gap of
a partial result).
"""

from __future__ import annotations

from docsan.extract.mupdf import pymupdf

MIB = 1 << 20
_IMAGE_CODECS = frozenset({"/JBIG2Decode", "/DCTDecode", "/DCT", "/JPXDecode", "/CCITTFaxDecode", "/CCF"})
# A damaged object (a mutated dictionary: "invalid key in dict") raises MuPDF's own error class.
_DAMAGED = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)


def decoded_size(doc: pymupdf.Document, page: pymupdf.Page, limit: int) -> int:
    """Decoded bytes of ``page``'s content streams and form XObjects; any value above ``limit`` means "too much"."""
    try:
        xrefs = list(dict.fromkeys([*page.get_contents(), *(x[0] for x in page.get_xobjects())]))
        pdf = pymupdf.mupdf.pdf_document_from_fz_document(doc.this)
    except _DAMAGED:
        return 0  # the page's resources are unreadable: MuPDF draws nothing from them
    total = 0
    for xref in xrefs:
        total += _stream_size(doc, pdf, xref, limit - total)
        if total > limit:
            break
    return total


def _stream_size(doc: pymupdf.Document, pdf: pymupdf.mupdf.PdfDocument, xref: int, budget: int) -> int:
    """The decoded size of one stream, counted up to ``budget + 1``."""
    try:
        kind, value = doc.xref_get_key(xref, "Filter")
        # PyMuPDF prints an array of names without spaces ("[/FlateDecode/DCTDecode]"): each name
        # starts at its slash, so split there, not only at whitespace.
        filters = value.strip("[]").replace("/", " /").split() if kind in ("name", "array") else []
        if _IMAGE_CODECS.intersection(filters):
            return len(doc.xref_stream_raw(xref) or b"")
        return pymupdf.mupdf.fz_skip(pymupdf.mupdf.pdf_open_stream_number(pdf, xref), budget + 1)
    except _DAMAGED:
        return 0  # MuPDF cannot load or decode it either: it interprets nothing of it
