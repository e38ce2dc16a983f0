"""Document.to_dict / from_dict round trips, the JSON Schemas generated from the model, `clean --format json`."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import docsan
from cli.main import app
from docsan import BBox, Block, BlockKind, Cell, Document, DocumentKind, InputError, Page, Source, Table
from docsan.model import SCHEMA_VERSION
from docsan.render import dumps, dumps_list, render_text
from docsan.schema import json_schema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schema"
NO_OCR = docsan.Config().with_overrides(extract={"ocr": "never"})


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json_schema(name)  # type: ignore[arg-type]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("name", ["clean", "document", "chunk"])
def test_committed_schemas_are_current(name: str) -> None:
    committed = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    assert committed == json_schema(name), f"regenerate: docsan schema {name} > docs/schema/{name}.schema.json"


def test_schema_command_prints_the_generated_schema() -> None:
    result = CliRunner().invoke(app, ["schema", "document"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json_schema("document")


@pytest.mark.parametrize("name", ["bilingual_report.pdf", "noisy_upload.txt", "chat_history.json"])
def test_fixture_documents_round_trip_through_json(fixtures_dir: Path, name: str) -> None:
    result = docsan.clean_file(fixtures_dir / name, NO_OCR)
    for doc in (result.original, result.document):
        data = json.loads(json.dumps(doc.to_dict(), ensure_ascii=False))
        assert data["schema_version"] == SCHEMA_VERSION
        validator("document").validate(data)
        assert Document.from_dict(data) == doc


@pytest.mark.parametrize("name", ["bilingual_report.pdf", "noisy_upload.txt", "chat_history.json"])
def test_results_round_trip_through_pickle(fixtures_dir: Path, name: str) -> None:
    # How a --jobs worker hands its result to the parent, and a Ray task to the driver.
    result = docsan.clean_file(fixtures_dir / name, NO_OCR)
    back = pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == result
    assert back.report.to_dict() == result.report.to_dict()


def test_pdf_structure_keeps_pages_blocks_boxes_and_table_grids(fixtures_dir: Path) -> None:
    data = docsan.clean_file(fixtures_dir / "bilingual_report.pdf", NO_OCR).document.to_dict()
    assert [p["number"] for p in data["pages"]] == [1, 2, 3]
    blocks = [b for p in data["pages"] for b in p["blocks"]]
    assert all(set(b["bbox"]) == {"x0", "y0", "x1", "y1"} for b in blocks)
    assert {b["kind"] for b in blocks} >= {"heading", "text", "table"}
    table = next(b for b in blocks if b["kind"] == "table")
    assert table["source"] == "table_extractor"
    assert [c["text"] for c in table["table"]["rows"][0]] == ["地区 Region", "收入 Revenue", "增长 Growth"]
    assert table["table"]["header_rows"] == 1


def test_corpus_documents_round_trip(corpus: Path) -> None:
    for name in ("ca_warn_report_16p.pdf", "zh_dbdq_2018q1_report_22p.pdf"):
        doc = docsan.clean_file(corpus / name, NO_OCR).document
        assert Document.from_dict(json.loads(json.dumps(doc.to_dict()))) == doc


texts = st.text(st.characters(codec="utf-8"), max_size=40)
floats = st.floats(allow_nan=False, allow_infinity=False, width=32)
cells = st.builds(Cell, texts, st.integers(1, 3), st.integers(1, 3), st.booleans())
tables = st.integers(1, 4).flatmap(
    lambda width: st.builds(Table, st.lists(st.tuples(*[cells] * width), max_size=4).map(tuple), st.integers(0, 2))
)
blocks = st.builds(
    Block,
    texts,
    st.sampled_from(BlockKind),
    st.sampled_from(Source),
    st.none() | st.builds(BBox, floats, floats, floats, floats),
    st.none() | tables,
    st.none() | floats,
)
pages = st.builds(
    Page,
    st.integers(1, 10_000),
    st.lists(blocks, max_size=4).map(tuple),
    st.none() | floats,
    st.none() | floats,
    st.none() | st.sampled_from(["system", "user", "assistant", "tool"]),
    st.booleans(),
)
documents = st.builds(
    Document, st.lists(pages, max_size=4).map(tuple), st.sampled_from(DocumentKind), texts, st.lists(texts).map(tuple)
)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_any_document_round_trips(doc: Document) -> None:
    data = json.loads(json.dumps(doc.to_dict()))
    validator("document").validate(data)
    assert Document.from_dict(data) == doc


# Besides hypothesis's text: a line break, a lone surrogate (dumps escapes it) and CJK inside strings.
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars | st.sampled_from(["a\nb", "x\ud800y", "中文\r\n"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, max_size=5))
def test_a_list_joined_from_its_items_json_is_the_lists_json(items: list[object]) -> None:
    assert dumps_list([dumps(item) for item in items]) == dumps(items)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"pages": []}, "schema_version None is not 1"),
        ({"schema_version": 99, "pages": []}, "schema_version 99 is not 1"),
        ({"schema_version": 1, "pages": [{"number": "one"}]}, "pages.0.number: Input should be a valid integer"),
        ({"schema_version": 1, "pages": [], "kind": "docx"}, "kind: Input should be"),
        ([], "expected an object, got list"),
    ],
)
def test_bad_document_data_is_one_clear_error(data: object, problem: str) -> None:
    with pytest.raises(InputError) as info:
        Document.from_dict(data)  # type: ignore[arg-type]
    assert str(info.value).startswith("document data: " + problem)
    assert "\n" not in str(info.value)


def test_clean_json_output_carries_document_and_report(fixtures_dir: Path) -> None:
    result = CliRunner().invoke(app, ["clean", str(fixtures_dir / "bilingual_report.pdf"), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    validator("clean").validate(payload)
    assert payload["schema_version"] == SCHEMA_VERSION
    doc = Document.from_dict(payload["document"])
    assert payload["text"] == render_text(doc)
    assert [s["stage"] for s in payload["report"]["stages"]] == list(docsan.Config().stages)


def test_clean_json_output_of_a_chat_has_messages_and_structure(fixtures_dir: Path) -> None:
    result = CliRunner().invoke(app, ["clean", str(fixtures_dir / "chat_history.json"), "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    validator("clean").validate(payload)
    roles = [p["role"] for p in payload["document"]["pages"]]
    assert roles == [m["role"] for m in payload["messages"]]


def test_an_unknown_schema_is_one_line_naming_the_schemas() -> None:
    result = CliRunner().invoke(app, ["schema", "bogus"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "docsan: error: no schema named 'bogus': the schemas are clean, document, chunk"
    ]
