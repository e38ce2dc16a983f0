"""OCR of one PDF page with tesseract: render, find orientation and script, recognise.

* The page is rendered at ``ExtractConfig.dpi`` in grey, unless that would
  exceed ``ocr_max_megapixels``: then the resolution is lowered to fit (a
  30-inch page at 300 dpi is 81 megapixels; tesseract's memory and time grow
  with the pixel count, not with the text on the page).
* Memory: drawing a scan page decodes its images (a 9000 x 9000 RGB scan is
  232 MiB), whole or at a power-of-two subsample, and MuPDF's store keeps
  them after the draw. Before drawing, ``image_decode`` estimates what they
  decode to at the chosen dpi; over ``ocr_max_image_mib`` the page is
  rendered at the highest lower dpi where MuPDF's subsampling brings them
  within (huckfinn's page 2: 74 dpi, 14.5 MiB), or else it is a gap of a
  partial result.
  ``_render`` empties the store right after the draw and copies the pixels
  only into the PIL image, so what OSD and tesseract run beside is the grey
  page image.
* Orientation and script: tesseract's OSD (``--psm 0``) on a copy scaled to
  ~150 dpi, which is plenty for OSD and four times cheaper; the page image is
  turned upright before recognition. Without this an upside-down page comes
  out as garbage ("UN NNIT 6r6867# XATAL" on the LinnSequencer file). The
  script OSD reports chooses the language (:data:`SCRIPT_LANGS`: Cyrillic
  reads with ``rus``, Arabic with ``ara``...) unless ``--lang`` names one;
  a script whose language pack is not installed, or a page too sparse for
  OSD, reads with ``ocr_fallback_lang``.
* Recognition with TSV output: tesseract's own block/paragraph structure
  becomes our blocks, with boxes mapped back to PDF points.
* Every tesseract call is bounded by CPU time (``ocr_cpu_s``, see
  ``tesseract.py``), so load does not make a page fail. A call that runs out
  is retried once at two thirds of the resolution; if that runs out too, the
  page is a gap of a partial result ("OCR gave up after S s"), which the
  CLI prints on stderr and reports with exit status 4.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from PIL import Image

from docsan.config import ExtractConfig
from docsan.extract import tesseract
from docsan.extract.content_size import MIB
from docsan.extract.image_decode import PageImage, decoded_mib, page_images
from docsan.extract.mupdf import colour_management, pymupdf
from docsan.extract.tesseract import OcrFailedError, OcrTimeout, OcrUnavailableError
from docsan.model import BBox, Block, Gap, Source
from docsan.text.joining import join_pieces

# OSD needs only letter shapes; this is its resolution (see the module docstring).
OSD_DPI = 150
# OSD's confidence below this is a guess (blank or nearly blank pages): keep the page as it is.
MIN_OSD_CONFIDENCE = 2.0
# Below this resolution tesseract reads nothing useful; a page that cannot be
# rendered at least this fine within the megapixel limit is skipped.
MIN_DPI = 72

# OSD's script name -> tesseract language packs; "+eng" for the Latin words and digits every page has.
SCRIPT_LANGS: dict[str, str] = {
    "Latin": "eng",
    "Han": "chi_sim+eng",
    "HanS": "chi_sim+eng",
    "HanT": "chi_tra+eng",
    "Japanese": "jpn+eng",
    "Katakana": "jpn+eng",
    "Hiragana": "jpn+eng",
    "Hangul": "kor+eng",
    "Korean": "kor+eng",
    "Cyrillic": "rus+eng",
    "Arabic": "ara+eng",
    "Hebrew": "heb+eng",
    "Thai": "tha+eng",
    "Greek": "ell+eng",
    "Devanagari": "hin+eng",
}
# OSD's script confidence below this is a guess: read with the fallback languages.
MIN_SCRIPT_CONFIDENCE = 1.0
# The wall-clock backstop, as a multiple of the CPU budget and at least MIN_WALL_S (see tesseract.py).
WALL_FACTOR = 10
MIN_WALL_S = 60.0
# The retry after a timeout renders at this share of the resolution (and so of the pixels, squared).
RETRY_DPI_SHARE = 2 / 3

__all__ = ["OcrPage", "OcrUnavailableError", "ocr_page"]


@dataclass(slots=True)
class OcrPage:
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    # The languages the page was read with (the flag's, or chosen from OSD's script).
    lang: str = ""


def _dpi_within_limit(rect: pymupdf.Rect, dpi: int, max_megapixels: float) -> int:
    pixels = (rect.width * dpi / 72) * (rect.height * dpi / 72)
    if pixels <= max_megapixels * 1e6:
        return dpi
    return math.floor(dpi * math.sqrt(max_megapixels * 1e6 / pixels))


def _dpi_within_decode_limit(images: list[PageImage], dpi: int, max_mib: float) -> int | None:
    """The highest dpi from ``dpi`` down to MIN_DPI at which ``images`` decode within ``max_mib``; None if none.

    What they decode to falls with the dpi (MuPDF subsamples more), so a bisection finds it. Where it
    does not (an image drawn under a pixel is decoded whole), the dpi found still fits: bisection only
    moves past a dpi it has seen fit.
    """
    dpis = range(MIN_DPI, dpi + 1)
    fitting = bisect.bisect_right(dpis, max_mib, key=lambda d: decoded_mib(images, d))
    return dpis[fitting - 1] if fitting else None


def _within_decode_limit(page: pymupdf.Page, dpi: int, limit: float, out: OcrPage) -> int | None:
    """The dpi to draw ``page`` at so that its images decode within ``limit`` MiB (a note when below
    ``dpi``); None, and a gap in ``out``, when no dpi down to MIN_DPI does."""
    number = page.number + 1
    images = page_images(page)
    fitted = _dpi_within_decode_limit(images, dpi, limit)
    if fitted is None:
        largest = max(images, key=lambda image: image.decoded_bytes(MIN_DPI))
        reason = (
            f"its images decode to {decoded_mib(images, MIN_DPI):.1f} MiB even at {MIN_DPI} dpi, over the "
            f"ocr_max_image_mib limit of {limit:g} (the largest: {largest.width} x {largest.height} px, "
            f"{largest.whole_bytes / MIB:.1f} MiB whole): not OCR'd (raise ocr_max_image_mib to read it)"
        )
        out.notes.append(f"page {number}: {reason}")
        out.gaps.append(Gap(number, reason))
    elif fitted < dpi:
        out.notes.append(
            f"page {number}: rendered at {fitted} dpi instead of {dpi}, where its images decode to "
            f"{decoded_mib(images, fitted):.1f} MiB instead of {decoded_mib(images, dpi):.1f}, to stay within "
            f"ocr_max_image_mib ({limit:g})"
        )
    return fitted


def _render(page: pymupdf.Page, dpi: int) -> Image.Image:
    """The page in grey at ``dpi``, and nothing of it left in MuPDF's memory (see the module docstring)."""
    # With colour management, and not while another thread's text pass has it off.
    with colour_management(True):
        pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    # MuPDF's store keeps the scan's decoded full-resolution image (up to 256 MB) for a reuse that does not
    # come: a scan page is drawn once. Emptying it now, not at the end of the document, is what keeps it out
    # of the memory held through OSD and recognition.
    pymupdf.TOOLS.store_shrink(100)
    # From the pixmap's own buffer: ``pix.samples`` would be one more copy of the page.
    return Image.frombytes("L", (pix.width, pix.height), pix.samples_mv)


def _osd(image: Image.Image, dpi: int, config: ExtractConfig) -> tuple[int, str | None]:
    """(clockwise degrees that turn ``image`` upright, OSD's script or None); (0, None) when OSD is unsure."""
    scale = min(1.0, OSD_DPI / dpi)
    small = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))
    osd = tesseract.image_to_osd(small, cpu_s=config.ocr_cpu_s, wall_s=_wall(config))
    rotate = 0
    if float(osd.get("orientation_conf", 0.0)) >= MIN_OSD_CONFIDENCE:  # type: ignore[arg-type]
        rotate = int(osd.get("rotate", 0)) % 360  # type: ignore[call-overload]
    script = osd.get("script") if float(osd.get("script_conf", 0.0)) >= MIN_SCRIPT_CONFIDENCE else None  # type: ignore[arg-type]
    return rotate, str(script) if script else None


def _wall(config: ExtractConfig) -> float:
    return max(MIN_WALL_S, WALL_FACTOR * config.ocr_cpu_s)


def choose_lang(config: ExtractConfig, script: str | None) -> str:
    """``--lang`` if given; else the language of OSD's script when its packs are installed; else the fallback."""
    if config.lang != "auto":
        return config.lang
    lang = SCRIPT_LANGS.get(script or "")
    if lang and set(lang.split("+")) <= tesseract.installed_languages():
        return lang
    return config.ocr_fallback_lang


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
    """OCR ``page``; blocks are tesseract paragraphs with ``Source.OCR``; a page OCR gave up on is a gap."""
    out = OcrPage(lang=config.lang if config.lang != "auto" else config.ocr_fallback_lang)
    number = page.number + 1
    dpi = _dpi_within_limit(page.rect, config.dpi, config.ocr_max_megapixels)
    if dpi < MIN_DPI:
        out.notes.append(f"page {number}: too large to OCR within {config.ocr_max_megapixels:g} megapixels; skipped")
        out.gaps.append(Gap(number, f"too large to OCR within {config.ocr_max_megapixels:g} megapixels"))
        return out
    if dpi < config.dpi:
        out.notes.append(
            f"page {number}: rendered at {dpi} dpi instead of {config.dpi} to stay within "
            f"{config.ocr_max_megapixels:g} megapixels"
        )
    fitted = _within_decode_limit(page, dpi, config.ocr_max_image_mib, out)
    if fitted is None:
        return out
    dpi = fitted
    spent = 0.0
    for attempt in range(2):
        try:
            out.blocks = _recognise(page, dpi, config, out)
            return out
        except OcrTimeout as err:
            spent += err.seconds
            if attempt == 0:
                retry_dpi = max(MIN_DPI, round(dpi * RETRY_DPI_SHARE))
                out.notes.append(
                    f"page {number}: OCR ran out of {err.what} ({err.seconds:g} s); retrying at {retry_dpi} dpi"
                )
                dpi = retry_dpi
        except OcrFailedError as err:
            out.gaps.append(Gap(number, f"OCR failed ({err})"))
            out.notes.append(f"page {number}: OCR failed ({err}); page left empty")
            return out
    out.notes.append(f"page {number}: OCR gave up after {spent:g} s; page left empty")
    out.gaps.append(Gap(number, f"OCR gave up after {spent:g} s"))
    return out


def _recognise(page: pymupdf.Page, dpi: int, config: ExtractConfig, out: OcrPage) -> list[Block]:
    number = page.number + 1
    image = _render(page, dpi)
    w, h = image.size
    rotate, script = _osd(image, dpi, config)
    if rotate:
        # PIL turns counter-clockwise; OSD's "rotate" is clockwise.
        image = image.rotate(-rotate, expand=True)
        out.notes.append(f"page {number}: turned {rotate}° upright before OCR")
    out.lang = choose_lang(config, script)
    if config.lang == "auto" and script:
        out.notes.append(f"page {number}: OSD script {script}; OCR languages {out.lang}")
    data = tesseract.image_to_data(image, out.lang, cpu_s=config.ocr_cpu_s, wall_s=_wall(config))
    return _paragraphs(data, rotate, w, h, 72 / dpi)


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
