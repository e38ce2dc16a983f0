"""The estimate of what MuPDF decodes to draw a page's images, on real PDFs; nothing here is decoded."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image

from docsan.extract.image_decode import decoded_mib, page_images
from docsan.extract.mupdf import pymupdf

WIDTH, HEIGHT = 300, 200


def _page_with(image: Image.Image, fmt: str) -> pymupdf.Page:
    data = io.BytesIO()
    image.save(data, fmt)
    doc = pymupdf.open()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    page.insert_image(page.rect, stream=data.getvalue())
    return page


def _page_with_raw_image(dictionary: str, samples: bytes, matrix: str = f"{WIDTH} 0 0 {HEIGHT} 0 0") -> pymupdf.Page:
    """A page drawing one image XObject written as is (PyMuPDF's insert_image rewrites palettes and keys)."""
    doc = pymupdf.open()
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    image = doc.get_new_xref()
    doc.update_object(image, dictionary)
    doc.update_stream(image, samples)
    doc.xref_set_key(page.xref, "Resources", f"<</XObject<</Im1 {image} 0 R>>>>")
    contents = doc.get_new_xref()
    doc.update_object(contents, "<<>>")
    doc.update_stream(contents, f"q {matrix} cm /Im1 Do Q".encode())
    doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
    return page


def test_huckfinn_scan_is_decoded_at_half_size_only_below_150_dpi(corpus: Path) -> None:
    # MuPDF halves a 9000-pixel image only when half of it is 2 pixels wider than its drawn size:
    # drawn 4,470 pixels at 149 dpi, 4,500 at 150. Measured (get_pixmap alone): +116 MiB at 149, +348 at 150.
    page = pymupdf.open(corpus / "huckfinn_mixed_scans_6p.pdf")[1]
    (scan,) = page_images(page)
    assert (scan.width, scan.height, scan.bytes_per_pixel, scan.subsampled) == (9000, 9000, 3, True)
    assert [scan.subsample(dpi) for dpi in (210, 150, 149, 75, 74)] == [0, 0, 1, 1, 2]
    assert round(decoded_mib([scan], 210), 1) == 231.7
    assert round(decoded_mib([scan], 149), 1) == 57.9
    assert round(decoded_mib([scan], 74), 1) == 14.5


def test_dct_and_uncompressed_images_are_subsampled_on_decode() -> None:
    grey = Image.new("L", (2400, 1600), 255)
    for fmt in ("JPEG", "PNG"):
        (image,) = page_images(_page_with(grey, fmt))
        # Drawn 600 x 400 at 144 dpi: decoded at half size (1200 x 800), not at a quarter (600 < 603).
        assert image.subsample(144) == 1 and image.decoded_bytes(144) == 1200 * 800
        assert image.decoded_bytes(72) == 600 * 400


def test_jpx_is_counted_whole_with_an_alpha_byte() -> None:
    page = _page_with(Image.new("L", (2400, 1600), 255), "JPEG2000")
    assert page.parent.xref_get_key(page.get_images()[0][0], "Filter")[1] == "/JPXDecode"
    (image,) = page_images(page)
    # pdf_load_jpx decodes it whole when the page loads it, whatever size it is drawn at.
    assert not image.subsampled and image.decoded_bytes(72) == 2400 * 1600 * 2


def test_a_soft_mask_is_one_more_image_of_one_component() -> None:
    (mask, image) = page_images(_page_with(Image.new("RGBA", (800, 600), (255, 0, 0, 128)), "PNG"))
    assert (mask.width, mask.height, mask.bytes_per_pixel) == (800, 600, 1)
    assert (image.width, image.height, image.bytes_per_pixel) == (800, 600, 3)


def test_an_indexed_image_is_expanded_whole_beside_its_index() -> None:
    page = _page_with_raw_image(
        "<</Type/XObject/Subtype/Image/Width 400/Height 300/BitsPerComponent 8"
        "/ColorSpace[/Indexed/DeviceRGB 1<000000FFFFFF>]>>",
        bytes(400 * 300),
    )
    (image,) = page_images(page)
    assert not image.subsampled and image.bytes_per_pixel == 1 + 3
    assert image.decoded_bytes(72) == 400 * 300 * 4


def test_a_colour_key_mask_adds_an_alpha_byte() -> None:
    page = _page_with_raw_image(
        "<</Type/XObject/Subtype/Image/Width 400/Height 300/BitsPerComponent 8/ColorSpace/DeviceGray/Mask[0 10]>>",
        bytes(400 * 300),
    )
    (image,) = page_images(page)
    assert image.subsampled and image.bytes_per_pixel == 2


def test_a_page_without_images_decodes_nothing(corpus: Path) -> None:
    page = pymupdf.open(corpus / "epa_spanning_cells.pdf")[0]
    assert decoded_mib(page_images(page), 300) == 0


def test_an_image_drawn_under_a_pixel_is_counted_whole() -> None:
    # MuPDF truncates the drawn size to 0 pixels and then does not subsample at all.
    page = _page_with_raw_image(
        "<</Type/XObject/Subtype/Image/Width 2000/Height 2000/BitsPerComponent 8/ColorSpace/DeviceGray>>",
        bytes(2000 * 2000),
        matrix="0.5 0 0 0.5 10 10",
    )
    (image,) = page_images(page)
    assert image.subsample(72) == 0 and image.decoded_bytes(72) == 2000 * 2000
    assert image.subsample(300) == 6  # drawn 2.1 pixels wide: 1/64 (32 pixels)
