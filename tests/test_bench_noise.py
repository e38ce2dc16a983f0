"""The quality scorer (bench/noise.py) on hand-built cases: what counts as removed, what as kept."""

from __future__ import annotations

import pytest

from bench import noise

BASE_ZH = [
    f"第{i}段：系统在高峰时段处理了大量上传的文档，并记录了每一次请求的上下文长度和显存占用情况。" for i in range(30)
]
BASE_EN = [
    f"Paragraph {i} describes how the service handled uploaded documents during peak hours and what it logged."
    for i in range(30)
]


@pytest.fixture(scope="module", params=["zh", "en"])
def doc(request) -> noise.NoisyDocument:
    base = BASE_ZH if request.param == "zh" else BASE_EN
    return noise.build(base, request.param, pages=8, per_page=3)


def test_ideal_output_scores_full_marks(doc):
    s = noise.score(doc, doc.ideal)
    assert s.noise_removed == 1.0
    assert s.noise_removed_macro == 1.0
    assert s.facts_kept == 1.0
    assert s.originals_lost == 0


def test_untouched_noisy_input_removes_nothing_and_keeps_facts(doc):
    s = noise.score(doc, doc.noisy)
    assert s.noise_removed == 0.0
    assert all(k["removed"] == 0.0 for k in s.by_kind.values())
    assert s.facts_kept == 1.0


def test_every_kind_of_noise_is_injected(doc):
    kinds = {c.kind for c in doc.checks}
    assert kinds == {
        "control",
        "zero_width",
        "bidi",
        "tag",
        "header",
        "footer",
        "page_number",
        "fake_bold",
        "collapsed_cell",
        "repeat",
        "near_duplicate",
    }
    assert doc.noisy.count("\x0c") == 7  # the page breaks
    assert noise.tag_encode(noise.TAG_MESSAGE) in doc.noisy


def test_repeated_paragraphs_make_about_half_the_body(doc):
    repeated = sum(c.injected * c.chars for c in doc.checks if c.kind == "repeat")
    body = len(noise.squash(doc.noisy))
    assert 0.4 <= repeated / body <= 0.6


def test_build_is_deterministic():
    a = noise.build(BASE_EN, "en", seed=3)
    b = noise.build(BASE_EN, "en", seed=3)
    c = noise.build(BASE_EN, "en", seed=4)
    assert a.noisy == b.noisy
    assert a.noisy != c.noisy


def test_lost_fact_is_named(doc):
    fact = doc.facts[5]
    s = noise.score(doc, doc.ideal.replace(fact, ""))
    assert s.facts_lost == [fact]
    assert s.facts_kept == pytest.approx(11 / 12)


def test_header_kept_once_counts_as_removed():
    doc = noise.build(BASE_EN, "en")
    s = noise.score(doc, noise.EN.header + "\n\n" + doc.ideal)
    assert s.by_kind["header"]["removed"] == 1.0
    s = noise.score(doc, "\n\n".join([noise.EN.header] * 3 + [doc.ideal]))
    assert s.by_kind["header"]["residual"] == 2


def test_repeat_gone_altogether_is_content_lost_not_noise_removed():
    doc = noise.build(BASE_EN, "en")
    check = next(c for c in doc.checks if c.kind == "repeat")
    s = noise.score(doc, doc.ideal.replace(check.pattern, ""))
    assert s.originals_lost == 1
    assert s.by_kind["repeat"]["residual"] == check.injected


def test_collapsed_row_with_empty_cells_left_is_not_removed():
    doc = noise.build(BASE_ZH, "zh")
    label = noise.ZH.labels[0]
    assert noise.score(doc, doc.ideal).by_kind["collapsed_cell"]["removed"] == 1.0
    s = noise.score(doc, doc.ideal.replace(label, label + "| | |", 1))
    assert s.by_kind["collapsed_cell"]["residual"] == 1


def test_leftover_invisible_characters_are_counted_once_as_themselves():
    doc = noise.build(BASE_EN, "en")
    s = noise.score(doc, doc.ideal + "\u200b\u200b")
    assert s.by_kind["zero_width"]["residual"] == 2
    assert s.by_kind["repeat"]["removed"] == 1.0


def test_squash_ignores_whitespace_and_invisible_characters():
    assert noise.squash("a b\n\tc\u200b\x00\U000e0041") == "abc"


def test_pdf_rendering_carries_the_noise_and_the_facts(tmp_path, doc):
    import pymupdf

    from bench import noise_pdf

    path = noise_pdf.write_pdf(doc, tmp_path / "noisy.pdf")
    with pymupdf.open(path) as pdf:
        assert pdf.page_count == len(doc.bodies)
        text = "\n".join(page.get_text() for page in pdf)
    version = noise_pdf.pdf_version(doc)
    assert {c.kind for c in version.checks}.isdisjoint({"control", "zero_width", "bidi", "tag"})
    s = noise.score(version, text)
    # Plain extraction removes nothing and loses nothing: the PDF holds every injected unit.
    assert s.noise_removed == 0.0
    assert s.facts_kept == 1.0
    # Fake bold is overprinted, and the text layer has all four copies.
    assert noise.squash(text).count(noise.squash(doc.style.headings[0])) == 4
