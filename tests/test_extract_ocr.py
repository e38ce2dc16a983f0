"""OCR with the real tesseract on the corpus scans. Slow: few pages, each extracted once."""

from __future__ import annotations

import io
from pathlib import Path

import pytesseract
import pytest
from PIL import Image

from docsan.config import ExtractConfig
from docsan.extract.mupdf import pymupdf
from docsan.extract.ocr import OcrUnavailableError
from docsan.extract.pdf import load_pdf
from docsan.model import Document, Source

pytestmark = pytest.mark.slow

# 200 dpi: the corpus notes that tesseract reads the customs decision almost
# perfectly at 200 dpi, and it is ~2x faster than 300 on a shared 2-core box.
FAST = ExtractConfig(dpi=200)


def _ocr_pages(doc: Document) -> list[int]:
    return [p.number for p in doc.pages if p.ocr]


@pytest.fixture(scope="module")
def linn(corpus: Path) -> Document:
    # English brochure: eng alone, 150 dpi (its 300-dpi scan has large type).
    return load_pdf(corpus / "linn_sequencer_cardinal_rotations_4p.pdf", ExtractConfig(lang="eng", dpi=150))


def test_customs_penalty_decision_scan(corpus: Path) -> None:
    doc = load_pdf(corpus / "zh_admin_penalty_decision_scan_3p.pdf", FAST, pages=[1])
    assert _ocr_pages(doc) == [1]
    assert "行政处罚决定书" in doc.text and "常州海关" in doc.text
    blocks = doc.pages[0].blocks
    assert len(blocks) > 2 and all(b.source is Source.OCR and b.bbox is not None for b in blocks)
    # Boxes are in PDF points, inside the page.
    page = doc.pages[0]
    assert all(0 <= b.bbox.x0 < b.bbox.x1 <= (page.width or 0) + 1 for b in blocks if b.bbox)
    assert any("no text layer; OCR'd (chi_sim+eng)" in n for n in doc.notes)


def test_title_page_scan_at_default_settings(corpus: Path) -> None:
    doc = load_pdf(corpus / "zh_cv_book_titlepage_scan_1p.pdf", ExtractConfig())
    assert "计算机视觉" in doc.text


@pytest.mark.parametrize("page_no", [1, 2, 3, 4])
def test_rotated_pages_are_turned_upright(linn: Document, page_no: int) -> None:
    page = linn.pages[page_no - 1]
    assert page.ocr and "sequencer" in page.text.lower()
    turned = any(n.startswith(f"page {page_no}: turned") for n in linn.notes)
    assert turned is (page_no != 1)


def test_scan_sliced_into_strips_is_detected_as_a_scan(corpus: Path) -> None:
    # 62 image strips per page, none covering half of it: coverage is summed.
    doc = load_pdf(corpus / "zh_capital_book_scan_strips_8p.pdf", FAST, pages=[1])
    assert _ocr_pages(doc) == [1]
    han = sum(1 for ch in doc.text if "\u4e00" <= ch <= "\u9fff")
    assert han > 300
    assert "商品" in doc.text


def test_per_page_decision_text_layer_then_ocr(corpus: Path) -> None:
    doc = load_pdf(corpus / "mixed_text_and_image_pages_2p.pdf", ExtractConfig(lang="eng", dpi=200))
    first, second = doc.pages
    assert not first.ocr and all(b.source is not Source.OCR for b in first.blocks)
    assert second.ocr and "Ukraine" in second.text
    assert [n for n in doc.notes if "OCR'd" in n] == ["page 2: no text layer; OCR'd (eng)"]


def test_garbage_text_layer_is_replaced_by_ocr(corpus: Path) -> None:
    doc = load_pdf(corpus / "memo_scan_garbage_ocr_layer.pdf", ExtractConfig(lang="eng", dpi=200))
    assert doc.pages[0].ocr and "«POAH" not in doc.text
    assert "Foundation" in doc.text and "letter" in doc.text.lower()
    assert any("garbage" in n and "OCR'd" in n for n in doc.notes)


def test_huge_page_is_downscaled_for_its_pixels_and_its_image_decode(corpus: Path) -> None:
    # Page 2 is a 30-inch square: 81 MP at 300 dpi, so 210 dpi for the 40 MP cap. Its one image,
    # 9000 x 9000 RGB, decodes whole at 210 dpi (232 MiB, a worker at 579 MB) and at half size down to
    # 75 dpi (58 MiB); at 74 dpi MuPDF decodes it at a quarter size, within the 56 MiB default.
    doc = load_pdf(corpus / "huckfinn_mixed_scans_6p.pdf", ExtractConfig(lang="eng"), pages=[2])
    assert doc.notes[1:3] == (
        "page 2: rendered at 210 dpi instead of 300 to stay within 40 megapixels",
        "page 2: rendered at 74 dpi instead of 210, where its images decode to 14.5 MiB instead of 231.7, "
        "to stay within ocr_max_image_mib (56)",
    )
    assert doc.pages[0].ocr and not doc.gaps
    # The page's large type reads well at 74 dpi: "9000x9000 pixels at 300 DPI".
    assert "pixels at 300 DPI" in doc.text


def _scan(tmp_path: Path, image_dpi: int, fmt: str) -> Path:
    """A one-page PDF whose page is an image of a line of text, scanned at ``image_dpi`` and stored as ``fmt``."""
    words = pymupdf.open()
    page = words.new_page(width=300, height=200)
    page.insert_text((20, 110), "Invoice 4711 paid", fontsize=28)
    pix = page.get_pixmap(dpi=image_dpi, colorspace=pymupdf.csGRAY)
    data = io.BytesIO()
    Image.frombytes("L", (pix.width, pix.height), pix.samples).save(data, fmt)
    scan = pymupdf.open()
    scan.new_page(width=300, height=200).insert_image(pymupdf.Rect(0, 0, 300, 200), stream=data.getvalue())
    path = tmp_path / f"scan_{image_dpi}.pdf"
    scan.save(path, deflate=True)
    return path


def test_a_page_whose_image_decodes_over_the_limit_at_any_dpi_is_a_gap(tmp_path: Path) -> None:
    # 600 x 400 grey (0.23 MiB) drawn at its own size: MuPDF decodes it whole at any dpi down to 72.
    path = _scan(tmp_path, 144, "PNG")
    over = load_pdf(path, ExtractConfig(lang="eng", dpi=144, ocr_max_image_mib=0.1))
    reason = (
        "its images decode to 0.2 MiB even at 72 dpi, over the ocr_max_image_mib limit of 0.1 "
        "(the largest: 600 x 400 px, 0.2 MiB whole): not OCR'd (raise ocr_max_image_mib to read it)"
    )
    assert over.text == "" and [str(g) for g in over.gaps] == [f"page 1: {reason}"]
    assert f"page 1: {reason}" in over.notes
    (given_up,) = over.extraction
    assert given_up.code == "extract.ocr_given_up" and given_up.reason == reason
    # Under the limit, the same page is read at the dpi asked for.
    under = load_pdf(path, ExtractConfig(lang="eng", dpi=144, ocr_max_image_mib=1))
    assert "Invoice 4711" in under.text and not under.gaps
    assert not any("ocr_max_image_mib" in n for n in under.notes)


def test_a_jpeg_that_mupdf_decodes_at_half_size_is_within_the_limit(tmp_path: Path) -> None:
    # 2400 x 1600 grey: 3.7 MiB whole, but drawn at 600 x 400 (144 dpi) libjpeg decodes it at half size, 0.9 MiB.
    path = _scan(tmp_path, 576, "JPEG")
    doc = load_pdf(path, ExtractConfig(lang="eng", dpi=144, ocr_max_image_mib=1))
    assert "Invoice 4711" in doc.text and not doc.gaps
    assert not any("ocr_max_image_mib" in n for n in doc.notes)
    # Below that, a quarter size (600 x 400, 0.2 MiB): MuPDF would give it at 143 dpi, the estimate (a pixel
    # of margin for MuPDF's rounding) at 142. Rendered there, with a note.
    lower = load_pdf(path, ExtractConfig(lang="eng", dpi=144, ocr_max_image_mib=0.5))
    assert (
        "page 1: rendered at 142 dpi instead of 144, where its images decode to 0.2 MiB instead of 0.9, "
        "to stay within ocr_max_image_mib (0.5)" in lower.notes
    )
    assert "Invoice 4711" in lower.text and not lower.gaps


def test_cpu_budget_retries_once_then_leaves_a_gap(corpus: Path) -> None:
    # One CPU second (the least a budget rounds to) is too little for this dense page, at 300 dpi and at 200.
    doc = load_pdf(corpus / "zh_admin_penalty_decision_scan_3p.pdf", ExtractConfig(ocr_cpu_s=0.01), pages=[1])
    assert doc.text == ""
    assert any("retrying at 200 dpi" in n for n in doc.notes)
    assert [str(g) for g in doc.gaps] == ["page 1: OCR gave up after 2 s"]
    (given_up,) = doc.extraction
    assert given_up.code == "extract.ocr_given_up" and given_up.page == 1 and given_up.reason == "OCR gave up after 2 s"


def test_missing_tesseract_is_a_clear_error(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "/nonexistent/tesseract")
    with pytest.raises(OcrUnavailableError, match="install tesseract"):
        load_pdf(corpus / "zh_cv_book_titlepage_scan_1p.pdf", ExtractConfig())
    # Not needed, not asked for: a text-layer PDF never touches tesseract.
    doc = load_pdf(corpus / "epa_spanning_cells.pdf", ExtractConfig())
    assert "Server closets" in doc.text


def test_a_language_tesseract_lacks_is_named_in_the_error(corpus: Path) -> None:
    # A --lang typo: the real tesseract refuses it; the line names that language, not the default packs.
    with pytest.raises(OcrUnavailableError) as err:
        load_pdf(corpus / "zh_cv_book_titlepage_scan_1p.pdf", ExtractConfig(lang="eng+engl"))
    assert str(err.value).startswith("OCR needed but tesseract has no language data for 'engl'")
    assert "apt-get install tesseract-ocr-engl" in str(err.value) and "--no-ocr" in str(err.value)


def test_ocr_always_replaces_a_good_text_layer(corpus: Path) -> None:
    doc = load_pdf(corpus / "epa_spanning_cells.pdf", ExtractConfig(ocr="always", lang="eng", dpi=150))
    page = doc.pages[0]
    assert page.ocr and page.blocks and all(b.source is Source.OCR for b in page.blocks)
    assert "Server" in page.text
    assert doc.notes == ("page 1: OCR forced; OCR'd (eng)",)
    # The text layer it replaced is reported, whole.
    (replaced,) = doc.extraction
    assert replaced.code == "extract.text_layer_replaced" and "Server closets" in replaced.text
