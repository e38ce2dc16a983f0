"""Every parse has a bound: decompression bombs, drawings-heavy pages, oversized text, long PDFs.

What happens at each limit (docs/extraction.md, "Limits") is a clear error or
a documented partial result, and each limit is a configuration option. The
speed side (linear in pages and characters) is measured by
bench/bench_limits.py, not here: these tests never time anything.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.exit_codes import ExitCode
from cli.main import app
from docsan.config import ExtractConfig
from docsan.errors import InputError
from docsan.extract import load
from docsan.extract.content_size import decoded_size
from docsan.extract.mupdf import pymupdf
from docsan.model import BlockKind

# The bomb: a small PDF whose one content stream inflates to 64 MiB of path operators
# (it ran past 120 s at 4.8 GB before the content was measured).
BOMB_MIB = 64
PATH_OPS = b"0 0 m 1 1 l S\n"


def _pdf(pages: list[bytes]) -> bytes:
    """A PDF whose pages have these (already Flate-compressed) content streams, Helvetica as F1."""
    n = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    font = 3 + 2 * n
    for i, stream in enumerate(pages):
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >>"
            f" /Contents {4 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out, offsets = b"%PDF-1.4\n", []
    for i, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return out


def _text_page(text: str) -> bytes:
    return zlib.compress(f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET\n".encode())


def _bomb_page(mib: float) -> bytes:
    compressor = zlib.compressobj(9)
    chunk = PATH_OPS * (1 << 16)
    parts = [compressor.compress(chunk) for _ in range(int(mib * (1 << 20)) // len(chunk))]
    return b"".join([*parts, compressor.flush()])


@pytest.fixture(scope="module")
def bomb_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "bomb.pdf"
    path.write_bytes(_pdf([_text_page("Hello from page one"), _bomb_page(BOMB_MIB)]))
    return path


def test_the_flate_bomb_is_measured_not_inflated_and_its_page_is_a_gap(bomb_pdf: Path) -> None:
    assert bomb_pdf.stat().st_size < 200_000  # small on disk, 64 MiB once inflated
    result = CliRunner().invoke(app, ["clean", str(bomb_pdf), "--no-ocr"])
    assert result.exit_code == ExitCode.PARTIAL, result.output
    assert "Hello from page one" in result.stdout
    assert result.stderr.strip() == (
        f"{bomb_pdf}: page 2: content decodes to more than 16 MiB (max_page_content_mib): page not read"
    )


def test_a_pdf_of_only_a_bomb_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "only_bomb.pdf"
    path.write_bytes(_pdf([_bomb_page(BOMB_MIB)]))
    result = CliRunner().invoke(app, ["clean", str(path)])
    assert result.exit_code == ExitCode.FAILED
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert f"{path}: no page could be read (page 1: content decodes to more than 16 MiB" in result.stderr


def test_the_content_limit_is_an_option(corpus: Path) -> None:
    # Set below a real page's content, the limit leaves nothing to read: one error naming the option.
    with pytest.raises(InputError, match=r"no page could be read \(page 1: content decodes to more than 0.001 MiB"):
        load(corpus / "epa_spanning_cells.pdf", ExtractConfig(ocr="never", max_page_content_mib=0.001))


def test_a_page_over_the_drawings_limit_keeps_its_text_without_ruled_tables(corpus: Path) -> None:
    path = corpus / "epa_spanning_cells.pdf"
    normal = load(path, ExtractConfig(ocr="never"))
    light = load(path, ExtractConfig(ocr="never", page_drawings_mib=0.001))
    assert any(b.kind is BlockKind.TABLE for p in normal.pages for b in p.blocks)
    assert not any(b.kind is BlockKind.TABLE for p in light.pages for b in p.blocks)
    assert any("read without its drawings (no ruled tables)" in n for n in light.notes)

    def letters(doc: object) -> int:
        return sum(ch.isalpha() for p in doc.pages for b in p.blocks for ch in b.text)  # type: ignore[attr-defined]

    # The table's words are still there, as text in reading order.
    assert letters(light) >= 0.95 * letters(normal)


def test_text_over_the_size_limit_is_refused_with_the_option_named(fixtures_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "small.toml"
    config.write_text("[extract]\nmax_text_mib = 0.0001\n", encoding="utf-8")
    src = fixtures_dir / "noisy_upload.txt"
    result = CliRunner().invoke(app, ["clean", str(src), "--config", str(config)])
    assert result.exit_code == ExitCode.FAILED
    assert f"{src}: 0.0 MiB of text, over the max_text_mib limit of 0.0001 MiB" in result.stderr
    with pytest.raises(InputError, match="over the max_text_mib limit"):
        from docsan.extract import load_bytes

        load_bytes(src.read_bytes(), "-", ExtractConfig(max_text_mib=0.0001))


def test_a_scan_over_the_image_decode_limit_is_a_gap_of_a_partial_result(corpus: Path, tmp_path: Path) -> None:
    # huckfinn's page 2 holds a 9000 x 9000 RGB image: even at 72 dpi MuPDF decodes it to 14.5 MiB (1/4 size).
    # Under the default (56 MiB) the page is read at 74 dpi (tests/test_extract_ocr.py); under 10 it is not read.
    config = tmp_path / "low.toml"
    config.write_text("[extract]\nocr_max_image_mib = 10\n", encoding="utf-8")
    src = corpus / "huckfinn_mixed_scans_6p.pdf"
    result = CliRunner().invoke(app, ["clean", str(src), "--pages", "2", "--config", str(config)])
    assert result.exit_code == ExitCode.PARTIAL, result.output
    assert result.stderr.strip() == (
        f"{src}: page 2: its images decode to 14.5 MiB even at 72 dpi, over the ocr_max_image_mib limit of 10 "
        "(the largest: 9000 x 9000 px, 231.7 MiB whole): not OCR'd (raise ocr_max_image_mib to read it)"
    )


@pytest.mark.parametrize("filters", ["/JBIG2Decode", "[/FlateDecode /JBIG2Decode]", "[/ASCIIHexDecode /DCTDecode]"])
def test_an_image_codec_in_a_filter_chain_counts_as_the_raw_length(filters: str) -> None:
    # PyMuPDF prints a filter array without spaces ("[/FlateDecode/JBIG2Decode]"): the codec must still be
    # seen, so the stream is measured by its raw length and never handed to an image decoder.

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "x")
    (xref,) = page.get_contents()
    doc.update_stream(xref, zlib.compress(os.urandom(3000)), compress=0)
    doc.xref_set_key(xref, "Filter", filters)
    assert decoded_size(doc, page, 1 << 20) == len(doc.xref_stream_raw(xref)) > 3000


def test_an_image_codec_named_by_reference_counts_as_the_raw_length() -> None:
    # /Filter 12 0 R, object 12 being /JBIG2Decode: MuPDF follows the reference to its decoder, so must the measure.
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "x")
    (xref,) = page.get_contents()
    doc.update_stream(xref, os.urandom(3000), compress=0)
    name = doc.get_new_xref()
    doc.update_object(name, "/JBIG2Decode")
    doc.xref_set_key(xref, "Filter", f"{name} 0 R")
    assert doc.xref_get_key(xref, "Filter") == ("xref", f"{name} 0 R")
    assert decoded_size(doc, page, 1 << 20) == len(doc.xref_stream_raw(xref)) == 3000
