"""What MuPDF allocates to decode the images of a page it draws, estimated before the draw.

Drawing a scan page for OCR decodes every image the page shows into a pixmap,
and MuPDF's store keeps each one until the draw is done (``ocr._render``
empties it then). That, not the rendered page, is what took a worker past
300 MB on ``huckfinn_mixed_scans_6p.pdf``: one 9000 x 9000 RGB image, 243 MB
decoded, for a page rendered at 40 megapixels. The rules below are read from
MuPDF 1.28's ``source/fitz/image.c`` and ``source/pdf/pdf-image.c``:

* ``fz_get_pixmap_from_image`` never decodes more than the draw needs: it
  picks the largest power-of-two subsample ``l2`` (at most 6) such that the
  image halved once more is still at least 2 pixels larger than its drawn
  size, in width and in height (the 2 pixels allow for grid fitting). A
  9000-pixel image drawn 4,470 pixels wide is decoded at half size; drawn
  4,500 wide, whole. The decoded tile is ``ceil(w / 2**l2) x ceil(h / 2**l2)``
  pixels, one byte per component (other depths are unpacked to 8 bits), plus
  an alpha byte for a stencil mask's only component or a colour-key ``/Mask``.
* Stream-decoded images (Flate, DCT, LZW, RunLength, CCITT, JBIG2, none) are
  subsampled while they decode, DCT by libjpeg itself (up to 1/8), the others
  row by row: the full-size image is never held. Measured on huckfinn's page
  (a bare process, ``get_pixmap`` alone): +116 MiB at 149 dpi (half size),
  +348 MiB at 150 dpi (whole).
* Counted whole at any size, because MuPDF decodes them whole: JPXDecode
  (``pdf_load_jpx`` decodes it with ``fz_load_jpx`` when the page loads it;
  an alpha byte is counted, for ``/SMaskInData``), indexed colour spaces
  (expanded to their base space beside the index tile: 1 + base components
  per pixel, subsampled only afterwards), and an image whose soft mask has a
  ``/Matte`` (un-blending needs both at full size).
* A soft mask (``/SMask``) is one more image of one component, drawn with
  the same matrix.

The draw then scales each tile to the page, a copy no larger than the tile;
so the images of a page cost at most about twice the estimate, beside the
rendered page itself. An image that is drawn twice is counted twice (MuPDF
may decode it at two sizes). Inline images (no xref) can be neither JPX nor
soft-masked, so they are counted as stream images.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from docsan.extract.content_size import MIB
from docsan.extract.mupdf import pymupdf

# fz_get_pixmap_from_image's deepest subsample (1/64) and its grid-fitting margin in pixels.
MAX_L2 = 6
FIT_MARGIN = 2


@dataclass(frozen=True, slots=True)
class PageImage:
    """One image drawn on a page: its pixels, the bytes per decoded pixel, and its drawn size in points."""

    width: int
    height: int
    bytes_per_pixel: int
    # False where MuPDF decodes it whole whatever its drawn size (see the module docstring).
    subsampled: bool
    drawn_width_pt: float
    drawn_height_pt: float

    @property
    def whole_bytes(self) -> int:
        """The image decoded at full size."""
        return self.width * self.height * self.bytes_per_pixel

    def decoded_bytes(self, dpi: int) -> int:
        """What MuPDF allocates to decode this image for a draw at ``dpi``."""
        l2 = self.subsample(dpi)
        return math.ceil(self.width / 2**l2) * math.ceil(self.height / 2**l2) * self.bytes_per_pixel

    def subsample(self, dpi: int) -> int:
        """MuPDF's ``l2factor`` for a draw at ``dpi`` (0: decoded whole)."""
        exact_w, exact_h = self.drawn_width_pt * dpi / 72, self.drawn_height_pt * dpi / 72
        # MuPDF decodes whole an image it would draw less than a pixel wide or high (its size truncates to 0).
        if not self.subsampled or exact_w < 1 or exact_h < 1:
            return 0
        # Rounded up and one more pixel: MuPDF truncates its float size, after a grid fit that may
        # widen it by one; a larger drawn size can only lower l2, so the estimate never undercounts.
        drawn_w = math.ceil(exact_w) + 1
        drawn_h = math.ceil(exact_h) + 1
        l2 = 0
        while (
            l2 < MAX_L2
            and self.width >> (l2 + 1) >= drawn_w + FIT_MARGIN
            and self.height >> (l2 + 1) >= drawn_h + FIT_MARGIN
        ):
            l2 += 1
        return l2


def page_images(page: pymupdf.Page) -> list[PageImage]:
    """Every image ``page`` draws (and each mask), as MuPDF will decode them; decodes nothing.

    The draw's list (sizes, matrices, colour spaces) has no xrefs: PyMuPDF finds them by hashing each
    image, decoded (``get_image_info(xrefs=True)``: 1.3 s and the whole 243 MB on huckfinn's page).
    So each drawn image takes the xref-level facts (filter, masks) of the page's images of its pixel
    size, the worst of them where several share it.
    """
    doc = page.parent
    by_size: dict[tuple[int, int], list[int]] = {}
    for item in page.get_images(full=True):
        by_size.setdefault((int(item[2]), int(item[3])), []).append(int(item[0]))
    images = []
    facts_by_size: dict[tuple[int, int], _Facts] = {}
    for info in page.get_image_info():
        width, height = int(info["width"]), int(info["height"])
        a, b, c, d = info["transform"][:4]
        drawn = (math.hypot(a, b), math.hypot(c, d))
        if (width, height) not in facts_by_size:
            facts_by_size[width, height] = _facts(doc, by_size.get((width, height), []), width, height)
        facts = facts_by_size[width, height]
        indexed = str(info["cs-name"]).startswith("Indexed")
        # A stencil mask has no colour space: its one decoded byte is alpha.
        components = max(1, int(info["colorspace"]))
        if indexed:
            components = 1 + _base_components(str(info["cs-name"]))
        elif facts.jpx or facts.colour_key:
            components += 1
        if info["has-mask"]:
            # A mask not found in the dictionaries is taken to be the image's size.
            images.append(PageImage(*(facts.mask or (width, height)), 1, not facts.matte, *drawn))
        subsampled = not (facts.jpx or indexed or facts.matte)
        images.append(PageImage(width, height, components, subsampled, *drawn))
    return images


@dataclass(slots=True)
class _Facts:
    """What the image dictionaries say that the draw's list does not."""

    jpx: bool = False
    colour_key: bool = False
    # The largest mask image's (width, height), or None.
    mask: tuple[int, int] | None = None
    matte: bool = False


def _facts(doc: pymupdf.Document, xrefs: list[int], width: int, height: int) -> _Facts:
    facts = _Facts()
    for xref in xrefs:
        # A filter behind an indirect reference is not looked into: counted whole, as a JPX.
        filter_kind, filters = doc.xref_get_key(xref, "Filter")
        facts.jpx |= filter_kind == "xref" or "JPXDecode" in filters
        mask_kind, mask_value = doc.xref_get_key(xref, "Mask")
        facts.colour_key |= mask_kind == "array"
        # MuPDF loads a /SMask, or else a /Mask stream, as the image's mask.
        smask = _xref(doc.xref_get_key(xref, "SMask")) or _xref((mask_kind, mask_value))
        if smask:
            facts.matte |= doc.xref_get_key(smask, "Matte")[0] == "array"
            # A mask whose size is not a plain number is taken to be its image's.
            size = (_int(doc.xref_get_key(smask, "Width"), width), _int(doc.xref_get_key(smask, "Height"), height))
            if facts.mask is None or size[0] * size[1] > facts.mask[0] * facts.mask[1]:
                facts.mask = size
    return facts


def decoded_mib(images: list[PageImage], dpi: int) -> float:
    """MiB that MuPDF allocates to decode ``images`` for a draw at ``dpi``."""
    return sum(image.decoded_bytes(dpi) for image in images) / MIB


def _base_components(cs_name: str) -> int:
    """Components of an indexed space's base ("Indexed(255,DeviceRGB)"); 4 (CMYK) when the name says nothing."""
    base = cs_name.partition(",")[2]
    if "Gray" in base:
        return 1
    return 3 if "RGB" in base or "Lab" in base else 4


def _xref(value: tuple[str, str]) -> int:
    kind, text = value
    return int(text.split()[0]) if kind == "xref" else 0


def _int(value: tuple[str, str], default: int) -> int:
    kind, text = value
    return int(text) if kind == "int" else int(default)
