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
_IMAGE_CODECS = frozenset({"JBIG2Decode", "DCTDecode", "DCT", "JPXDecode", "CCITTFaxDecode", "CCF"})
# A damaged object (a mutated dictionary: "invalid key in dict") raises MuPDF's own error class.
_DAMAGED = (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase)

_mupdf = pymupdf.mupdf
_CONTENTS, _RESOURCES, _XOBJECT, _SUBTYPE, _FORM, _FILTER = (
    _mupdf.pdf_new_name(n) for n in ("Contents", "Resources", "XObject", "Subtype", "Form", "Filter")
)


def decoded_size(doc: pymupdf.Document, page: pymupdf.Page, limit: int) -> int:
    """Decoded bytes of ``page``'s content streams and form XObjects; any value above ``limit`` means "too much"."""
    try:
        streams = _streams(page)
    except _DAMAGED:
        return 0  # the page's resources are unreadable: MuPDF draws nothing from them
    total = 0
    for xref, obj in streams.items():
        total += _stream_size(doc, xref, obj, limit - total)
        if total > limit:
            break
    return total


def _streams(page: pymupdf.Page) -> dict[int, pymupdf.mupdf.PdfObj]:
    """The page's content streams, then the forms in its resources and theirs (what ``Page.get_contents()`` and
    ``Page.get_xobjects()`` list), by xref, each once.

    Read with MuPDF's calls directly, not with those PyMuPDF methods and
    ``Document.xref_get_key``: every call through the bindings costs thousands of
    instructions, and theirs make many that this needs not (page lookups, form
    boxes and names, the filter printed as text). On the corpus's 241 pages the
    measurement took 282 M instructions that way, 196 M this way (137 M of it inflating).
    """
    m = _mupdf
    page_obj = m.pdf_page_from_fz_page(page.this).obj()
    out: dict[int, pymupdf.mupdf.PdfObj] = {}
    contents = m.pdf_dict_get(page_obj, _CONTENTS)
    if m.pdf_is_array(contents):
        for i in range(m.pdf_array_len(contents)):
            obj = m.pdf_array_get(contents, i)
            out.setdefault(m.pdf_to_num(obj), obj)
    elif contents.m_internal:
        out[m.pdf_to_num(contents)] = contents
    resources = m.pdf_dict_get_inheritable(page_obj, _RESOURCES)
    if resources.m_internal:
        _add_forms(resources, out, [])
    return out


def _add_forms(resources: pymupdf.mupdf.PdfObj, out: dict[int, pymupdf.mupdf.PdfObj], seen: list[int]) -> None:
    """PyMuPDF's ``JM_scan_resources`` for forms: this dictionary's forms, then those of each XObject's resources.

    A resource dictionary met again (a cycle) is left, and so is the rest of a
    dictionary once one of its XObjects is met a second time, as PyMuPDF does.
    """
    m = _mupdf
    if m.pdf_mark_obj(resources):
        return
    try:
        xobjects = m.pdf_dict_get(resources, _XOBJECT)
        values = [m.pdf_dict_get_val(xobjects, i) for i in range(m.pdf_dict_len(xobjects))]
        for obj in values:
            if m.pdf_is_dict(obj) and m.pdf_name_eq(m.pdf_dict_get(obj, _SUBTYPE), _FORM):
                out.setdefault(m.pdf_to_num(obj), obj)
        for obj in values:
            inner = m.pdf_dict_get(obj, _RESOURCES)
            if inner.m_internal:
                xref = m.pdf_to_num(obj) if m.pdf_is_stream(obj) else 0
                if xref in seen:
                    return
                seen.append(xref)
                _add_forms(inner, out, seen)
    finally:
        m.pdf_unmark_obj(resources)


def _filters(stream: pymupdf.mupdf.PdfObj) -> list[str]:
    """The stream's filter names; MuPDF resolves a /Filter (or an entry) given by reference, as its decoders will."""
    m = _mupdf
    value = m.pdf_dict_get(stream, _FILTER)
    if m.pdf_is_name(value):
        return [m.pdf_to_name(value)]
    return [m.pdf_to_name(m.pdf_array_get(value, i)) for i in range(m.pdf_array_len(value))]


def _stream_size(doc: pymupdf.Document, xref: int, stream: pymupdf.mupdf.PdfObj, budget: int) -> int:
    """The decoded size of one stream, counted up to ``budget + 1``."""
    try:
        if _IMAGE_CODECS.intersection(_filters(stream)):
            return len(doc.xref_stream_raw(xref) or b"")
        return _mupdf.fz_skip(_mupdf.pdf_open_stream(stream), budget + 1)
    except _DAMAGED:
        return 0  # MuPDF cannot load or decode it either: it interprets nothing of it
