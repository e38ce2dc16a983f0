"""The library's batch functions, which ``docsan clean`` (and later the server and ``--jobs``) are built on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docsan.batch import clean_input, clean_inputs, expand_inputs, render_output
from docsan.config import Config
from docsan.errors import ConfigError

NO_OCR = Config().with_overrides(extract={"ocr": "never"})


def test_a_bad_input_is_an_outcome_with_its_error_and_the_batch_goes_on(corpus: Path, fixtures_dir: Path) -> None:
    inputs = [corpus / "broken_not_a_pdf.pdf", fixtures_dir / "noisy_upload.txt", corpus / "missing.pdf"]
    outcomes = list(clean_inputs(inputs, NO_OCR))
    assert [o.source for o in outcomes] == inputs
    assert [o.ok for o in outcomes] == [False, True, False]
    assert outcomes[0].error == f"{inputs[0]}: not a PDF or damaged beyond repair"
    assert outcomes[2].error == f"{inputs[2]}: no such file"
    assert outcomes[1].result is not None and outcomes[1].result.report.stages


def test_one_input_gives_what_the_iterator_gives(fixtures_dir: Path) -> None:
    source = fixtures_dir / "chat_history.json"
    alone = clean_input(source, NO_OCR)
    (batched,) = clean_inputs([source], NO_OCR)
    assert alone.result is not None and batched.result is not None
    assert render_output(alone.result) == render_output(batched.result)
    assert json.loads(render_output(alone.result))["messages"][0]["role"] == "system"  # a chat: its request


def test_a_bad_configuration_fails_before_any_input_is_read(tmp_path: Path) -> None:
    config = Config().with_overrides(options={"neardup": {"threshold": 7}})
    with pytest.raises(ConfigError, match="neardup"):
        clean_inputs([tmp_path / "never-read.pdf"], config)


def test_folders_expand_to_the_documents_inside(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("b/z.pdf", "a.txt", "notes.md", "photo.png", "chat.json"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    single = tmp_path / "photo.png"
    assert expand_inputs([tmp_path, single]) == [
        tmp_path / "a.txt",
        tmp_path / "b" / "z.pdf",
        tmp_path / "chat.json",
        tmp_path / "notes.md",
        single,  # named explicitly: kept, so the user hears why it cannot be read
    ]


def test_with_budget_appends_the_guard_and_the_budget_last() -> None:
    config = Config().with_budget(300, query="Q3 revenue?", markdown=True, suffix="\n")
    assert config.stages[-2:] == ("special_tokens", "budget")
    assert config.stage_options("budget") == {
        "budget": 300,
        "markdown": True,
        "table_html": False,
        "suffix": "\n",
        "query": "Q3 revenue?",
    }
    assert Config().with_budget(None, tokenizer="tok").stages[-1] == "special_tokens"
    assert Config().with_budget(None) == Config()
    with pytest.raises(ConfigError, match="needs a budget"):
        Config().with_budget(None, query="anything")
