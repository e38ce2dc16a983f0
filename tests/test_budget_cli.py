"""``docsan clean --budget N``: the written output encodes to at most N tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.budget.chat_trim import count_messages_default
from docsan.budget.tokenizer import Tokenizer, default_tokenizer_dir
from docsan.config import ExtractConfig
from docsan.extract import load

runner = CliRunner()
FACT = "The Copyright Office keeps the zebra registry backup in the Reykjavik vault number 7741."


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.load()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Only the budget stages, so these tests measure them and not the cleaning stages."""
    path = tmp_path / "only-budget.toml"
    path.write_text("stages = []\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def dmca_text(corpus: Path) -> str:
    doc = load(corpus / "dmca_copyright_office_summary_18p.pdf", ExtractConfig(ocr="never"))
    paras = [b.text for _, b in doc.blocks() if b.text.strip()]
    paras.insert(int(len(paras) * 0.8), FACT)
    return "\n\n".join(paras)


def clean(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["clean", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("budget", [50, 900])
def test_pdf_output_fits_the_budget(corpus: Path, config: Path, tok: Tokenizer, tmp_path: Path, budget: int) -> None:
    out = tmp_path / "out.txt"
    pdf = corpus / "zh_dbdq_2018q1_report_22p.pdf"
    code, output = clean(str(pdf), "--no-ocr", "--config", str(config), "--budget", str(budget), "-o", str(out))
    assert code == 0, output
    written = out.read_text(encoding="utf-8")
    assert 0.9 * budget <= tok.count(written) <= budget  # the file as written, final newline included


def test_query_keeps_the_planted_fact(dmca_text: str, config: Path, tok: Tokenizer, tmp_path: Path) -> None:
    src = tmp_path / "dmca.txt"
    src.write_text(dmca_text, encoding="utf-8")
    report = tmp_path / "report.json"
    base = [str(src), "--config", str(config), "--budget", "400", "--report", str(report)]
    code, head = clean(*base)
    assert code == 0 and FACT not in head and tok.count(head) <= 400
    code, answer = clean(*base, "--query", "Where is the zebra registry backup kept?")
    assert code == 0 and FACT in answer and tok.count(answer) <= 400
    stages = {s["stage"]: s for s in json.loads(report.read_text(encoding="utf-8"))["stages"]}
    assert list(stages) == ["special_tokens", "budget"]
    assert any(c["code"] == "budget.dropped" and c["kind"] == "removed" for c in stages["budget"]["changes"])


def test_markdown_output_fits(tmp_path: Path, config: Path, tok: Tokenizer) -> None:
    src = tmp_path / "doc.md"
    src.write_text("\n\n".join(f"# Part {i}\n\nBody of part {i}, a sentence. Another one." for i in range(60)))
    code, output = clean(str(src), "--config", str(config), "--budget", "120", "--format", "markdown")
    assert code == 0 and tok.count(output) <= 120 and "Part 0" in output.splitlines()[0]


def test_chat_history_fits(tmp_path: Path, config: Path, tok: Tokenizer, dmca_text: str) -> None:
    paras = dmca_text.split("\n\n")
    msgs = [{"role": "system", "content": "Answer from the pasted text."}]
    for i in range(8):
        msgs += [
            {"role": "user", "content": "\n\n".join(paras[5 * i : 5 * i + 5])},
            {"role": "assistant", "content": "OK."},
        ]
    msgs.append({"role": "user", "content": "Summarise the <｜end▁of▁sentence｜> act."})
    src = tmp_path / "chat.json"
    src.write_text(json.dumps(msgs, ensure_ascii=False), encoding="utf-8")
    code, output = clean(str(src), "--config", str(config), "--budget", "600")
    assert code == 0, output
    out = json.loads(output)
    assert count_messages_default(tok)(out) <= 600
    assert out[0] == msgs[0] and out[-1]["content"] == "Summarise the <\\｜end▁of▁sentence｜> act."


def test_local_tokenizer_folder(tmp_path: Path, config: Path) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(default_tokenizer_dir() / name, folder / name)
    src = tmp_path / "a.txt"
    src.write_text("First paragraph here.\n\nSecond paragraph, which is longer than the first one.")
    code, output = clean(str(src), "--config", str(config), "--budget", "6", "--tokenizer", str(folder))
    assert code == 0 and output == "First paragraph here.\n"


def test_errors_are_one_line(tmp_path: Path, config: Path) -> None:
    src = tmp_path / "a.txt"
    src.write_text("text")
    code, output = clean(str(src), "--config", str(config), "--budget", "9", "--tokenizer", "deepseek-ai/DeepSeek-V3")
    assert code == 2 and "model hubs are not reachable" in output and "Traceback" not in output
    code, output = clean(str(src), "--config", str(config), "--query", "why?")
    assert code == 2 and "need --budget" in output
    code, output = clean(str(src), "--config", str(config), "--budget", "9", "--strategy", "query")
    assert code == 2 and "needs a query" in output


def test_toml_config_drives_the_stages(tok: Tokenizer) -> None:
    """The stages work from a TOML-style config too: `[budget]` and `[special_tokens]` tables."""
    from docsan import clean_text
    from docsan.config import config_from_dict

    config = config_from_dict(
        {
            "stages": ["special_tokens", "budget"],
            "special_tokens": {"action": "remove"},
            "budget": {"budget": 40, "strategy": "head-tail"},
        }
    )
    text = "\n\n".join(f"Paragraph {i} <｜User｜> says something short." for i in range(30))
    result = clean_text(text, config)
    assert tok.count(result.text) <= 40
    assert "<｜User｜>" not in result.text and "Paragraph 0" in result.text and "Paragraph 29" in result.text
    assert result.report.stage("special_tokens").stats["tokens_neutralised"] == 30
    assert result.report.stage("budget").stats["tokens"] <= 40


def test_a_budget_below_one_is_refused_in_the_same_words_everywhere(tmp_path: Path, fixtures_dir: Path) -> None:
    """The library, the configuration file and the CLI all apply docsan/config/token_budget.py's rule, in its words."""
    from pydantic import ValidationError

    from docsan import Config, ConfigError, clean_file
    from docsan.stages.budget import Budget

    words = "must be at least 1 token, got 0 (leave it out for no budget)"
    src = fixtures_dir / "noisy_upload.txt"
    with pytest.raises(ValidationError) as direct:
        Budget(budget=0)
    assert direct.value.errors()[0]["msg"] == f"Value error, {words}"
    with pytest.raises(ConfigError) as library:
        clean_file(src, Config().with_budget(0))
    assert str(library.value) == f"stage 'budget': bad option budget: {words}"
    toml = tmp_path / "budget.toml"
    toml.write_text('stages = ["normalize", "budget"]\n\n[budget]\nbudget = 0\n', encoding="utf-8")
    code, output = clean(str(src), "--config", str(toml))
    assert code == 2 and output == f"docsan: error: stage 'budget': bad option budget: {words}\n"
    for command in (["clean", str(src), "--budget", "0"], ["ask", str(src), "why?", "--dry-run", "--budget", "0"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and result.stderr == f"docsan: error: --budget: {words}\n", result.output


def test_a_budget_that_keeps_nothing_is_said_on_stderr(fixtures_dir: Path, tmp_path: Path) -> None:
    """Exit 0 (the budget was obeyed) and an empty file, but not in silence: stderr names the file."""
    pdf = fixtures_dir / "bilingual_report.pdf"
    out = tmp_path / "out.txt"
    code, output = clean(str(pdf), "--budget", "5", "-o", str(out))
    assert code == 0, output
    assert out.read_text(encoding="utf-8").strip() == ""
    assert f"{pdf}: a budget of 5 tokens keeps none of its" in output
    # A budget that keeps something warns of nothing.
    code, output = clean(str(pdf), "--budget", "200", "-o", str(out))
    assert code == 0 and out.read_text(encoding="utf-8").strip()
    assert "keeps none" not in output
