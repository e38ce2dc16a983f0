"""The library entry points: typed results, an untouched input, a report a user can audit."""

from __future__ import annotations

import copy

import pytest

import docsan
from docsan import Block, CleanResult, Config, Document, DocumentKind, InputError, Page, Report, Source
from docsan.lazy_exports import home_of
from docsan.report import Change, StageReport

CONFIG = Config(stages=("normalize", "reflow"))


def test_clean_text_returns_a_typed_result() -> None:
    result = docsan.clean_text("第三季度 营业 收入\u200b\n\nSecond\x02 paragraph.", CONFIG)
    assert isinstance(result, CleanResult)
    assert isinstance(result.original, Document) and isinstance(result.document, Document)
    assert isinstance(result.report, Report)
    assert result.text == "第三季度营业收入\n\nSecond paragraph."
    assert [s.stage for s in result.report.stages] == ["normalize", "reflow"]
    assert all(isinstance(s, StageReport) for s in result.report.stages)
    assert all(isinstance(c, Change) for c in result.report.changes)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("bilingual_report.pdf", DocumentKind.PDF),
        ("noisy_upload.txt", DocumentKind.TEXT),
        ("chat_history.json", DocumentKind.CHAT),
    ],
)
def test_clean_file_reads_each_supported_kind(fixtures_dir, name, kind) -> None:
    config = CONFIG.with_overrides(extract={"ocr": "never"})
    result = docsan.clean_file(fixtures_dir / name, config)
    assert result.document.kind is kind
    assert result.report.source == str(fixtures_dir / name)
    assert result.text.strip()


def test_the_original_document_is_never_modified(fixtures_dir) -> None:
    config = CONFIG.with_overrides(extract={"ocr": "never"})
    result = docsan.clean_file(fixtures_dir / "noisy_upload.txt", config)
    fresh = docsan.clean_file(fixtures_dir / "noisy_upload.txt", Config(stages=())).original
    assert result.original == fresh
    assert result.original != result.document
    # The noise is still in the original: the audit can show what was there.
    assert "\u200b" in result.original.text and "\u200b" not in result.document.text


def test_clean_document_leaves_a_hand_built_document_as_it_was() -> None:
    doc = Document(
        pages=(
            Page(1, (Block("pre-\nprocessing\u00ad text\x0cnext", source=Source.TEXT_LAYER),)),
            Page(2, (Block("费用 分 类\u202e", source=Source.OCR),), ocr=True),
        ),
        kind=DocumentKind.PDF,
        name="hand.pdf",
    )
    snapshot = copy.deepcopy(doc)
    result = docsan.clean_document(doc, CONFIG)
    assert doc == snapshot
    assert result.original is doc
    assert result.document.pages[1].ocr is True
    assert result.document.pages[1].blocks[0].text == "费用分类"


def test_report_entries_carry_stage_code_kind_reason_page_and_text() -> None:
    text = "page one has a zero\u200bwidth space\x0cpage two has a bidi\u202e override"
    result = docsan.clean_text(text, CONFIG)
    by_page = {c.page: c for c in result.report.changes}
    assert by_page[1].stage == "normalize"
    assert by_page[1].code == "normalize.invisible.zero_width_character"
    assert by_page[1].kind == "removed"
    assert by_page[1].reason == "zero-width character: U+200B ×1"
    assert by_page[1].text == "page one has a zero\u200bwidth space"
    assert by_page[1].replacement == "page one has a zerowidth space"
    assert by_page[2].reason == "bidirectional control: U+202E ×1"
    assert by_page[2].to_dict() == {
        "stage": "normalize",
        "code": "normalize.invisible.bidirectional_control",
        "kind": "removed",
        "reason": "bidirectional control: U+202E ×1",
        "page": 2,
        "text": "page two has a bidi\u202e override",
        "replacement": "page two has a bidi override",
    }
    report = result.report.to_dict()
    assert report["stages"][0]["stats"]["chars_removed"] == 2
    assert report["stages"][0]["chars_before"] > report["stages"][0]["chars_after"]


def test_a_lone_surrogate_in_a_string_is_reported_not_a_crash() -> None:
    result = docsan.clean_text("half an emoji \ud83d here", CONFIG)
    assert result.text == "half an emoji here"
    assert [c.code for c in result.report.changes] == ["normalize.invisible.replacement_character"]


def test_stage_options_come_from_configuration() -> None:
    keep = CONFIG.with_overrides(options={"reflow": {"remove_cjk_spaces": False}})
    assert docsan.clean_text("费用 分 类", keep).text == "费用 分 类"
    assert docsan.clean_text("费用 分 类", CONFIG).text == "费用分类"


def test_unreadable_input_raises_an_input_error(corpus) -> None:
    with pytest.raises(InputError) as info:
        docsan.clean_file(corpus / "broken_encrypted_userpw_4p.pdf", CONFIG)
    assert info.value.name.endswith("broken_encrypted_userpw_4p.pdf")
    assert "encrypted" in info.value.problem


def test_every_public_name_is_reached_from_the_package_and_its_module_loads_on_first_use() -> None:
    import subprocess
    import sys

    homes = home_of(docsan._HOMES)
    assert set(homes) == set(docsan.__all__)  # the lazy table and __all__ name the same things
    for name in docsan.__all__:
        assert name in dir(docsan)
        assert getattr(docsan, name) is getattr(sys.modules[homes[name]], name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        docsan.nope  # noqa: B018
    # A fresh process: `import docsan` alone imports none of the public names' modules.
    probe = "import sys, docsan; print(sorted(m for m in docsan._HOMES if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_budget_package_names_load_on_first_use() -> None:
    import subprocess
    import sys

    import docsan.budget

    homes = home_of(docsan.budget._HOMES)
    assert set(homes) == set(docsan.budget.__all__)
    for name in docsan.budget.__all__:
        assert name in dir(docsan.budget)
        assert getattr(docsan.budget, name) is getattr(sys.modules[homes[name]], name)
    # What `docsan clean` reads of it (the template markers) does not import the ranking, truncation or chat trim.
    probe = "import sys, docsan.budget.template_markers; print(sorted(m for m in {!r} if m in sys.modules))"
    heavy = ("docsan.budget.chat_trim", "docsan.budget.truncate", "docsan.budget.rank", "docsan.budget.segment")
    out = subprocess.run([sys.executable, "-c", probe.format(heavy)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
