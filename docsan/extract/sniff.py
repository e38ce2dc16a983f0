"""What a file is, by its first bytes rather than its name.

PyMuPDF opens images, EPUB, XPS and more besides PDF, so a DOCX, a JPEG or an
HTML page renamed to ``.pdf`` used to be "cleaned" into whatever MuPDF made
of it. The loader asks :func:`sniff` first and refuses a file that is
something docsan does not read, naming what it is; a PDF on standard input is
recognised the same way instead of being echoed back as ``%PDF...`` text.
"""

from __future__ import annotations

import io
import zipfile

# PDF readers accept up to 1 KB of junk before the header (Acrobat does; qpdf's leading-junk test).
PDF_HEADER_WINDOW = 1024

# Magic numbers of formats users upload that docsan does not read, with the name the error gives.
# (prefix, offset, name)
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "a PNG image"),
    (b"\xff\xd8\xff", 0, "a JPEG image"),
    (b"GIF87a", 0, "a GIF image"),
    (b"GIF89a", 0, "a GIF image"),
    (b"II*\x00", 0, "a TIFF image"),
    (b"MM\x00*", 0, "a TIFF image"),
    (b"BM", 0, "a BMP image"),
    (b"WEBP", 8, "a WebP image"),
    (b"\x00\x00\x00\x0cjP  ", 0, "a JPEG 2000 image"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "a legacy Office document (DOC, XLS or PPT)"),
    (b"{\\rtf", 0, "an RTF document"),
    (b"\x1f\x8b", 0, "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive"),
    (b"Rar!\x1a\x07", 0, "a RAR archive"),
    (b"AT&TFORM", 0, "a DjVu document"),
)

# What a ZIP container holds, by a member name or the EPUB/ODF "mimetype" member.
_ZIP_MEMBERS: tuple[tuple[str, str], ...] = (
    ("word/", "a Word document (DOCX)"),
    ("xl/", "an Excel workbook (XLSX)"),
    ("ppt/", "a PowerPoint presentation (PPTX)"),
    ("Documents/", "an XPS document"),
    ("FixedDocSeq.fdseq", "an XPS document"),
)
_ZIP_MIMETYPES = {
    "application/epub+zip": "an EPUB e-book",
    "application/vnd.oasis.opendocument.text": "an OpenDocument text (ODT)",
    "application/vnd.oasis.opendocument.spreadsheet": "an OpenDocument spreadsheet (ODS)",
    "application/vnd.oasis.opendocument.presentation": "an OpenDocument presentation (ODP)",
}
# Markup that starts an HTML or XML page (after a BOM and whitespace, any case).
_HTML_STARTS = ("<!doctype html", "<html", "<head", "<body")
_XML_START = "<?xml"


def is_pdf(head: bytes) -> bool:
    return b"%PDF-" in head[:PDF_HEADER_WINDOW]


def sniff(data: bytes) -> str | None:
    """A description ("a JPEG image") of a format docsan does not read, or None.

    None means "PDF or text, as far as the first bytes tell": the loader goes on
    by extension and content. ``data`` is the file's start; a ZIP is looked
    into only when the whole file is given.
    """
    if is_pdf(data):
        return None
    for magic, offset, name in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            return name
    if data.startswith(b"PK\x03\x04"):
        return _zip_kind(data)
    return _markup_kind(data)


def _zip_kind(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            if "mimetype" in names:
                mime = zf.read("mimetype")[:100].decode("ascii", "replace").strip()
                if mime in _ZIP_MIMETYPES:
                    return _ZIP_MIMETYPES[mime]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return "a ZIP archive"
    for prefix, name in _ZIP_MEMBERS:
        if any(n.startswith(prefix) for n in names):
            return name
    return "a ZIP archive"


def _markup_kind(data: bytes) -> str | None:
    head = data[:512]
    codec = "latin-1"
    for bom, name in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"), (b"\xef\xbb\xbf", "utf-8")):
        if head.startswith(bom):
            head, codec = head[len(bom) :], name
            break
    text = head.decode(codec, "ignore").lstrip().lower()
    if text.startswith(_HTML_STARTS):
        return "an HTML page"
    if text.startswith(_XML_START) and "<html" in text:
        return "an XHTML page"
    return None
