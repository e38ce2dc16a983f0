"""White text in CMYK: judged from MuPDF's plain colour conversion, like the same ink in grey."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsan.config import ExtractConfig
from docsan.extract import layout
from docsan.extract.mupdf import pymupdf
from docsan.extract.pdf import load_pdf

NO_OCR = ExtractConfig(ocr="never")

# (label, fill colour operator). The labels are the text drawn, one line each; the tints near 6 %
# are where MuPDF's ICC conversion and its plain one disagree (docs/extraction.md).
LINES = [
    ("cmyk white", "0 0 0 0 k"),
    ("cmyk key three", "0 0 0 0.03 k"),
    ("cmyk key six", "0 0 0 0.06 k"),  # ICC: eff0f0, a visible grey; plain: f0f0f0, as 0.94 g
    ("cmyk cyan five", "0.05 0 0 0 k"),  # ICC: eff9fe; plain: f2ffff
    ("grey six", "0.94 g"),
    ("cmyk key seven", "0 0 0 0.07 k"),
    ("grey seven", "0.93 g"),
    ("cmyk key ninety", "0 0 0 0.9 k"),
    ("cmyk black", "0 0 0 1 k"),
    ("cmyk rich black", "0.6 0.4 0.4 1 k"),
]
WHITE = {"cmyk white", "cmyk key three", "cmyk key six", "cmyk cyan five", "grey six"}


def _coloured_text_pdf(path: Path, lines: list[tuple[str, str]]) -> Path:
    """One page, each (label, colour operator) line drawn in its colour by a raw content stream, no fills."""
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 72), "x", fontname="helv")  # puts the font /helv in the page's resources
        ops = [f"BT /helv 11 Tf 72 {760 - 20 * i} Td {op} ({label}) Tj ET" for i, (label, op) in enumerate(lines)]
        pdf.update_stream(page.get_contents()[0], "\n".join(ops).encode())
        pdf.save(path)
    return path


@pytest.fixture(scope="module")
def coloured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _coloured_text_pdf(tmp_path_factory.mktemp("colours") / "cmyk.pdf", LINES)


def test_light_cmyk_tints_are_white_text_and_dark_ones_are_kept(coloured: Path) -> None:
    doc = load_pdf(coloured, NO_OCR)
    (white,) = [c for c in doc.extraction if c.code == "extract.white_text"]
    assert set(white.text.split("\n")) == WHITE
    lines = doc.text.split("\n")
    assert [label for label, _ in LINES if label in lines] == [label for label, _ in LINES if label not in WHITE]


@pytest.mark.parametrize("tint", [0.03, 0.06, 0.065, 0.1])
def test_a_key_tint_is_judged_as_the_same_ink_in_grey(tmp_path: Path, tint: float) -> None:
    # PDF's own relation between the two spaces: k = 1 - grey. With MuPDF's ICC profiles 6 % key
    # would be kept while 94 % grey is dropped.
    path = _coloured_text_pdf(tmp_path / "tint.pdf", [("key", f"0 0 0 {tint} k"), ("grey", f"{1 - tint:.3f} g")])
    doc = load_pdf(path, NO_OCR)
    dropped = "\n".join(c.text for c in doc.extraction if c.code == "extract.white_text")
    assert ("key" in dropped) == ("grey" in dropped) == (tint <= 0.06)


def test_colour_management_is_on_again_after_an_extraction(coloured: Path) -> None:
    # The switch is MuPDF's, for the whole process: an application's own PyMuPDF calls after
    # docsan's must see MuPDF's default, which converts CMYK black through the ICC profile.
    load_pdf(coloured, NO_OCR)
    with pymupdf.open(coloured) as pdf:
        data = pdf[0].get_textpage(flags=layout.TEXT_FLAGS).extractDICT()
    colours = {s["text"]: s["color"] for b in data["blocks"] for ln in b.get("lines", ()) for s in ln["spans"]}
    assert colours["cmyk black"] not in (0x000000, 0xFFFFFF)
