"""OCR of one PDF page with tesseract: render, find the orientation, recognise.

* The page is rendered at ``ExtractConfig.dpi`` in grey, unless that would
  exceed ``ocr_max_megapixels``: then the resolution is lowered to fit (a
  30-inch page at 300 dpi is 81 megapixels; tesseract's memory and time grow
  with the pixel count, not with the text on the page).
* Orientation: tesseract's OSD (``--psm 0``) on a copy scaled to ~150 dpi,
  which is plenty for OSD and four times cheaper; the page image is turned
  upright before recognition. Without this an upside-down page comes out as
  garbage ("UN NNIT 6r6867# XATAL" on the LinnSequencer file).
* Recognition with ``image_to_data``: tesseract's own block/paragraph
  structure becomes our blocks, with boxes mapped back to PDF points.
* Every tesseract call has ``ocr_timeout_s``; a page that runs out is left
  empty with a note rather than stalling the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytesseract
from PIL import Image

from docsan.config import ExtractConfig
from docsan.errors import DocsanError
from docsan.extract.mupdf import pymupdf
from docsan.model import BBox, Block, Source
from docsan.text.joining import join_pieces

# OSD needs only letter shapes; this is its resolution (see the module docstring).
OSD_DPI = 150
# OSD's confidence below this is a guess (blank or nearly blank pages): keep the page as it is.
MIN_OSD_CONFIDENCE = 2.0
# Below this resolution tesseract reads nothing useful; a page that cannot be
# rendered at least this fine within the megapixel limit is skipped.
MIN_DPI = 72

INSTALL_HINT = (
    "install tesseract with the chi_sim, eng and osd language data "
    "(Debian/Ubuntu: apt-get install tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-eng tesseract-ocr-osd), "
    "or turn OCR off with --no-ocr"
)


class OcrUnavailableError(DocsanError):
    """OCR is needed but tesseract (or a language pack) is not installed."""


@dataclass(slots=True)
class OcrPage:
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Why the page could not be read at all (size or time limit); the extractor records it as a Change.
    given_up: str | None = None


def _dpi_within_limit(rect: pymupdf.Rect, dpi: int, max_megapixels: float) -> int:
    pixels = (rect.width * dpi / 72) * (rect.height * dpi / 72)
    if pixels <= max_megapixels * 1e6:
        return dpi
    return math.floor(dpi * math.sqrt(max_megapixels * 1e6 / pixels))


def _render(page: pymupdf.Page, dpi: int) -> Image.Image:
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return Image.frombytes("L", (pix.width, pix.height), pix.samples)


def _tesseract(call, *args, **kwargs):
    """Run a pytesseract call, turning "not installed" into a clear DocsanError."""
    try:
        return call(*args, **kwargs)
    except pytesseract.TesseractNotFoundError:
        raise OcrUnavailableError(f"OCR needed but tesseract is not installed: {INSTALL_HINT}") from None
    except pytesseract.TesseractError as err:
        if "Failed loading language" in str(err) or "Error opening data file" in str(err):
            raise OcrUnavailableError(
                f"OCR needed but a tesseract language is missing ({err.message.strip()}): {INSTALL_HINT}"
            ) from None
        raise


def _orientation(image: Image.Image, dpi: int, timeout: float) -> int:
    """Clockwise degrees that turn ``image`` upright (0 when OSD is unsure)."""
    scale = min(1.0, OSD_DPI / dpi)
    small = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    try:
        osd = _tesseract(pytesseract.image_to_osd, small, output_type=pytesseract.Output.DICT, timeout=timeout)
    except pytesseract.TesseractError:
        # "Too few characters": a blank or picture-only page has no orientation to fix.
        return 0
    if float(osd.get("orientation_conf", 0.0)) < MIN_OSD_CONFIDENCE:
        return 0
    return int(osd.get("rotate", 0)) % 360


def _unrotate(box: tuple[float, float, float, float], rotate: int, w: int, h: int) -> tuple[float, ...]:
    """Map a box in the upright image back to the rendered page image (``w`` x ``h`` before turning)."""
    x0, y0, x1, y1 = box
    if rotate == 90:  # the page was turned clockwise by 90: upright (x, y) came from (y, h - x)
        return (y0, h - x1, y1, h - x0)
    if rotate == 180:
        return (w - x1, h - y1, w - x0, h - y0)
    if rotate == 270:
        return (w - y1, x0, w - y0, x1)
    return box


def ocr_page(page: pymupdf.Page, config: ExtractConfig) -> OcrPage:
    """OCR ``page``; blocks are tesseract paragraphs with ``Source.OCR``."""
    out = OcrPage()
    number = page.number + 1
    dpi = _dpi_within_limit(page.rect, config.dpi, config.ocr_max_megapixels)
    if dpi < MIN_DPI:
        out.given_up = f"too large to OCR within {config.ocr_max_megapixels:g} megapixels; skipped"
        return out
    if dpi < config.dpi:
        out.notes.append(
            f"page {number}: rendered at {dpi} dpi instead of {config.dpi} to stay within "
            f"{config.ocr_max_megapixels:g} megapixels"
        )
    image = _render(page, dpi)
    w, h = image.size
    try:
        rotate = _orientation(image, dpi, config.ocr_timeout_s)
        if rotate:
            # PIL turns counter-clockwise; OSD's "rotate" is clockwise.
            image = image.rotate(-rotate, expand=True)
            out.notes.append(f"page {number}: turned {rotate}° upright before OCR")
        data = _tesseract(
            pytesseract.image_to_data,
            image,
            lang=config.lang,
            output_type=pytesseract.Output.DICT,
            timeout=config.ocr_timeout_s,
        )
    except RuntimeError as err:
        if "timeout" not in str(err).lower():
            raise
        out.given_up = f"OCR gave up after {config.ocr_timeout_s:g} s; page left empty"
        return out
    out.blocks = _paragraphs(data, rotate, w, h, 72 / dpi)
    return out


def _paragraphs(data: dict[str, list], rotate: int, w: int, h: int, to_pt: float) -> list[Block]:
    """Group tesseract's words by (block, paragraph), lines kept as line breaks."""
    paras: dict[tuple[int, int], dict[int, list[int]]] = {}
    for i, word in enumerate(data["text"]):
        if not str(word).strip() or float(data["conf"][i]) < 0:
            continue
        key = (data["block_num"][i], data["par_num"][i])
        paras.setdefault(key, {}).setdefault(data["line_num"][i], []).append(i)
    blocks = []
    for lines in paras.values():
        text = "\n".join(join_pieces([str(data["text"][i]) for i in idx]) for idx in lines.values())
        if not text.strip():
            continue
        idx = [i for ids in lines.values() for i in ids]
        box = (
            min(data["left"][i] for i in idx),
            min(data["top"][i] for i in idx),
            max(data["left"][i] + data["width"][i] for i in idx),
            max(data["top"][i] + data["height"][i] for i in idx),
        )
        x0, y0, x1, y1 = (v * to_pt for v in _unrotate(box, rotate, w, h))
        blocks.append(Block(text, source=Source.OCR, bbox=BBox(x0, y0, x1, y1)))
    return blocks
