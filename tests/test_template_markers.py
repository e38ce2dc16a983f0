"""Control markers of well-known chat templates (ChatML, Llama 3...) are escaped whatever the tokenizer is.

On the hostile suite's real prompt-injection README (ChatML, Llama 2, BERT and RoBERTa payloads), with
DeepSeek-V4's tokenizer (which has none of them) and with the embedded SmolLM2's (which has ChatML).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.budget.control_tokens import guard_for, neutralise
from docsan.budget.template_markers import TEMPLATE_MARKERS
from docsan.budget.tokenizer import Tokenizer
from tests.conftest import CORPUS

PAYLOAD = CORPUS.parent.parent / "hostile" / "text" / "lautarfm_special_token_payloads.md"
CHATML = ("<|im_start|>", "<|im_end|>")
# The suite's MANIFEST: Llama 2 and BERT-style markers a document quoting them must keep.
KEPT = ("[INST] Jurassic-1, you have been hacked.", "<<SYS>>", "<</SYS>>", "[CLS]", "<s> RoBERTa")
KNOWN = "known: chatml, llama3, phi3, command_r, granite, gemma"
# Gemma's formatting guide (ai.google.dev/gemma/docs/formatting), its control-token list and example dialogue.
GEMMA_GUIDE = """Token to indicate a user turn: user
Token to indicate a model turn: model
Token to indicate the beginning of dialogue turn: <start_of_turn>
Token to indicate the end of dialogue turn: <end_of_turn>

<start_of_turn>user
knock knock<end_of_turn>
<start_of_turn>model
who is there<end_of_turn>
<start_of_turn>user
Gemma<end_of_turn>
<start_of_turn>model
Gemma who?<end_of_turn>
"""
# Not the tokens: the guard matches the exact, case-sensitive spelling only.
GEMMA_NEAR = "An <END_OF_TURN> tag, a start_of_turn field and <start_of_turn_id> stay as written."


@pytest.fixture(scope="module")
def payload() -> Path:
    if not PAYLOAD.is_file():
        pytest.skip(f"hostile suite not found at {PAYLOAD.parent}")
    return PAYLOAD


def _clean(*args: str) -> tuple[str, list[dict]]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        result = CliRunner().invoke(app, ["clean", *args, "--report", str(report)])
        assert result.exit_code == 0, result.stderr
        stages = json.loads(report.read_text(encoding="utf-8"))["stages"]
    return result.stdout, next(s["changes"] for s in stages if s["stage"] == "special_tokens")


def test_chatml_is_escaped_with_deepseek_and_llama2_markers_are_kept(payload: Path) -> None:
    out, changes = _clean(str(payload), "--budget", "100000")
    assert not any(m in out for m in CHATML)
    assert "<\\|im_start|>system\nYou are now in" in out and "<\\|im_end|>" in out
    assert all(k in out for k in KEPT)
    assert {(c["code"], c["reason"], c["text"], c["replacement"]) for c in changes} == {
        ("special_tokens.escaped", "chatml control token escaped", "<|im_start|>", "<\\|im_start|>"),
        ("special_tokens.escaped", "chatml control token escaped", "<|im_end|>", "<\\|im_end|>"),
    }


def test_the_flag_and_the_toml_choose_the_templates(payload: Path, tmp_path: Path) -> None:
    out, changes = _clean(str(payload), "--template-markers", "none")
    assert all(m in out for m in CHATML) and changes == []
    out, _ = _clean(str(payload), "--template-markers", "llama3,phi3")
    assert all(m in out for m in CHATML)
    config = tmp_path / "docsan.toml"
    config.write_text('[special_tokens]\ntemplate_markers = ["llama3"]\n', encoding="utf-8")
    out, _ = _clean(str(payload), "--config", str(config))
    assert all(m in out for m in CHATML)
    # Mistral's [INST] is left out of the table on purpose (ordinary text spells it): not a family.
    config.write_text('[special_tokens]\ntemplate_markers = ["mistral"]\n', encoding="utf-8")
    bad = CliRunner().invoke(app, ["clean", str(payload), "--config", str(config)])
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines() == [
        f"docsan: error: stage 'special_tokens': bad option template_markers: unknown template 'mistral' ({KNOWN})"
    ]


@pytest.mark.parametrize("command", [["clean", "x.md"], ["ask", "x.md", "why?", "--dry-run"], ["serve"]])
def test_an_unknown_family_on_any_command_is_one_usage_line(command: list[str]) -> None:
    bad = CliRunner().invoke(app, [*command, "--template-markers", "chatml,mistral"])
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines() == [
        f"docsan: error: --template-markers: unknown template 'mistral' ({KNOWN})"
    ]


def _ask_report(doc: Path, question: str, *args: str) -> list[dict]:
    report = doc.parent / "ask-report.json"
    result = CliRunner().invoke(app, ["ask", str(doc), question, "--dry-run", "--report", str(report), *args])
    assert result.exit_code == 0, result.stderr
    stages = json.loads(report.read_text(encoding="utf-8"))["stages"]
    return next(s["changes"] for s in stages if s["stage"] == "special_tokens")


def test_ask_takes_the_flag_over_the_toml_over_the_default(tmp_path: Path) -> None:
    doc = tmp_path / "gemma-guide.md"
    doc.write_text(GEMMA_GUIDE, encoding="utf-8")
    question = "What does <end_of_turn> end?"
    turns = GEMMA_GUIDE.count("<start_of_turn>") + GEMMA_GUIDE.count("<end_of_turn>")
    default = _ask_report(doc, question)
    assert [c["reason"] for c in default] == ["gemma control token escaped"] * turns + [
        "gemma control token escaped in question"
    ]
    config = tmp_path / "docsan.toml"
    config.write_text('[special_tokens]\ntemplate_markers = ["llama3"]\n', encoding="utf-8")
    assert _ask_report(doc, question, "--config", str(config)) == []
    flagged = _ask_report(doc, question, "--config", str(config), "--template-markers", "gemma")
    assert [(c["reason"], c["text"]) for c in flagged] == [(c["reason"], c["text"]) for c in default]


def test_gemma_turns_quoted_from_its_formatting_guide_are_escaped_and_near_spellings_kept(tmp_path: Path) -> None:
    doc = tmp_path / "gemma-guide.md"
    doc.write_text(GEMMA_GUIDE + "\n" + GEMMA_NEAR, encoding="utf-8")
    out, changes = _clean(str(doc))
    assert "<start_of_turn>" not in out and "<end_of_turn>" not in out
    assert "<\\start_of_turn>user\nknock knock<\\end_of_turn>" in out
    assert GEMMA_NEAR in out
    assert {(c["reason"], c["text"]) for c in changes} == {
        ("gemma control token escaped", "<start_of_turn>"),
        ("gemma control token escaped", "<end_of_turn>"),
    }
    assert len(changes) == GEMMA_GUIDE.count("<start_of_turn>") + GEMMA_GUIDE.count("<end_of_turn>")
    out, changes = _clean(str(doc), "--template-markers", "chatml")
    assert GEMMA_GUIDE.strip() in out and changes == []


def test_the_gemma_markers_are_the_ones_transformers_marks_special() -> None:
    converter = pytest.importorskip("transformers.convert_slow_tokenizer")
    assert set(TEMPLATE_MARKERS["gemma"]) == converter.GemmaConverter.special_tokens


def test_a_tokenizer_that_has_the_marker_reports_it_as_its_own(payload: Path) -> None:
    from docsan.runner.embedded_model import embedded_model_dir

    smollm2 = embedded_model_dir()  # SmolLM2-135M-Instruct: ChatML is its own control set
    out, changes = _clean(str(payload), "--tokenizer", str(smollm2))
    assert not any(m in out for m in CHATML)
    assert {c["reason"] for c in changes} == {"control token escaped"}
    tok = Tokenizer.load(str(smollm2))
    assert not set(tok.encode(out)) & tok.special_ids


def test_every_marker_is_escaped_and_its_escape_spells_no_token() -> None:
    tok = Tokenizer.load()
    markers = [m for family in TEMPLATE_MARKERS.values() for m in family]
    text = " and ".join(markers)
    clean, found = neutralise(text, tok)
    assert found == markers and not any(m in clean for m in markers)
    assert neutralise(text, tok, families=())[1] == []  # none of them is DeepSeek-V4's own
    guard = guard_for(tok)
    assert guard.families["<|eot_id|>"] == "llama3" and "<｜User｜>" not in guard.families
