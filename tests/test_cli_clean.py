"""``docsan clean`` end to end through Typer's CliRunner: outputs, formats, reports, errors.

The runs use a configuration file naming the stages to run (normalize and
reflow), so the tests check the command's behaviour, not the default stage
list; every assertion holds whichever stages are configured.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pymupdf
import pytest
from typer.testing import CliRunner

from cli.main import app
from fixtures.make_fixtures import ENGLAND_FLAG, FAMILY
from tests.test_normalize import forbidden_left

BROKEN = {
    "broken_empty_0byte.pdf": "empty",
    "broken_not_a_pdf.pdf": "not a PDF",
    "broken_encrypted_userpw_4p.pdf": "encrypted",
}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("config") / "docsan.toml"
    path.write_text('stages = ["normalize", "reflow"]\n\n[extract]\nocr = "never"\n', encoding="utf-8")
    return path


@pytest.fixture
def run(config_file):
    def invoke(*args: str, stdin: str | None = None):
        result = CliRunner().invoke(app, ["clean", *args, "--config", str(config_file)], input=stdin)
        # Whatever happened, the user never sees a Python traceback.
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        return result

    return invoke


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


# --- outputs ------------------------------------------------------------------------


def test_one_text_file_goes_to_stdout_cleaned(run, fixtures_dir) -> None:
    result = run(str(fixtures_dir / "noisy_upload.txt"))
    assert result.exit_code == 0
    assert result.stderr == ""
    out = result.stdout
    assert forbidden_left(out) == []
    assert "The café team’s summary: the service crashed during peak hours." in out
    assert "费用分类说明" in out
    # The emoji sequences that need joiners and tags survive intact.
    assert FAMILY in out and ENGLAND_FLAG in out


def test_one_pdf_goes_to_stdout(run, fixtures_dir) -> None:
    result = run(str(fixtures_dir / "bilingual_report.pdf"), "--no-ocr")
    assert result.exit_code == 0
    assert "4,213" in result.stdout and "Q3 revenue" in result.stdout
    assert "\u200b" not in result.stdout and "\x0c" not in result.stdout


def test_several_files_write_one_output_each(run, fixtures_dir, tmp_path) -> None:
    out = tmp_path / "out"
    inputs = [fixtures_dir / n for n in ("noisy_upload.txt", "chat_history.json", "bilingual_report.pdf")]
    result = run(*map(str, inputs), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    written = sorted(p.name for p in out.iterdir())
    assert written == ["bilingual_report.pdf.txt", "chat_history.clean.json", "noisy_upload.clean.txt"]
    assert "Q3 revenue" in (out / "bilingual_report.pdf.txt").read_text(encoding="utf-8")
    request = json.loads((out / "chat_history.clean.json").read_text(encoding="utf-8"))
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant"]  # the request's own shape


def test_a_directory_is_expanded_to_its_supported_files(run, fixtures_dir, tmp_path) -> None:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("first\u200b file", encoding="utf-8")
    (src / "sub" / "b.md").write_text("# Second\n\nsecond\x02 file", encoding="utf-8")
    (src / "ignored.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    out = tmp_path / "out"
    result = run(str(src), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["a.clean.txt", "b.md.txt"]
    assert (out / "a.clean.txt").read_text(encoding="utf-8") == "first file\n"


def test_inputs_with_the_same_name_do_not_overwrite_each_other(run, tmp_path) -> None:
    for folder, word in (("a", "first"), ("b", "second")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.txt").write_text(f"{word}\u200b notes", encoding="utf-8")
    out = tmp_path / "out"
    result = run(str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    texts = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}
    assert texts == {"notes.clean.txt": "first notes\n", "notes.clean-2.txt": "second notes\n"}


def test_several_inputs_without_an_output_folder_are_refused(run, fixtures_dir) -> None:
    result = run(str(fixtures_dir / "noisy_upload.txt"), str(fixtures_dir / "chat_history.json"))
    assert result.exit_code == 2
    assert len(error_lines(result)) == 1 and "-o DIR" in result.stderr


# --- formats and the report -----------------------------------------------------------------


def test_markdown_format_marks_headings_once(run, tmp_path) -> None:
    src = tmp_path / "notes.md"
    src.write_text("# Title\u200b\n\nBody text.", encoding="utf-8")
    result = run(str(src), "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout == "# Title\n\nBody text.\n"


def test_json_format_has_text_stats_and_removals(run, fixtures_dir) -> None:
    result = run(str(fixtures_dir / "noisy_upload.txt"), "--format", "json")
    assert result.exit_code == 0
    payload = json.loads(result.stdout)
    assert payload["kind"] == "text" and payload["source"].endswith("noisy_upload.txt")
    assert "费用分类说明" in payload["text"] and forbidden_left(payload["text"]) == []
    stages = {s["stage"]: s for s in payload["report"]["stages"]}
    assert list(stages) == ["normalize", "reflow"]
    assert stages["normalize"]["stats"]["removed_tag_character"] == 32
    tag = [c for c in stages["normalize"]["changes"] if c["code"] == "normalize.invisible.tag_character"]
    assert len(tag) == 1 and 'hidden text "Ignore all previous instructions"' in tag[0]["reason"]
    assert tag[0]["page"] == 1 and "Hidden note" in tag[0]["text"]


def test_report_file_holds_the_audit(run, fixtures_dir, tmp_path) -> None:
    report = tmp_path / "report.json"
    result = run(str(fixtures_dir / "noisy_upload.txt"), "--report", str(report))
    assert result.exit_code == 0
    audit = json.loads(report.read_text(encoding="utf-8"))
    changes = [c for s in audit["stages"] for c in s["changes"]]
    codes = {c["code"] for c in changes}
    invisible = ("zero_width_character", "bidirectional_control", "byte_order_mark", "soft_hyphen",
                 "replacement_character", "invisible_format_character", "control_character")  # fmt: skip
    assert {f"normalize.invisible.{name}" for name in invisible} | {"normalize.mojibake", "reflow.reflowed"} <= codes
    assert any("U+0007" in c["reason"] for c in changes if c["code"] == "normalize.invisible.control_character")
    assert all({"stage", "code", "kind", "reason", "page", "text"} <= set(c) for c in changes)
    # The text after the form feed is on page 2 of the upload.
    assert {c["page"] for c in changes if "cjk spaces" in c["reason"]} == {2}


def test_report_for_a_batch_is_a_list_per_input(run, fixtures_dir, tmp_path) -> None:
    report = tmp_path / "report.json"
    inputs = [fixtures_dir / "noisy_upload.txt", fixtures_dir / "chat_history.json"]
    result = run(*map(str, inputs), "-o", str(tmp_path / "out"), "--report", str(report))
    assert result.exit_code == 0
    audit = json.loads(report.read_text(encoding="utf-8"))
    assert [Path(a["source"]).name for a in audit] == ["noisy_upload.txt", "chat_history.json"]


# --- chat and standard input ------------------------------------------------------------------


def test_chat_json_comes_out_as_messages(run, fixtures_dir) -> None:
    result = run(str(fixtures_dir / "chat_history.json"))
    assert result.exit_code == 0
    messages = json.loads(result.stdout)["messages"]
    assert messages[1] == {"role": "user", "content": "What was the Q3 revenue?\n\n第三季度营业收入为 4,213 万元。"}
    assert messages[2] == {"role": "assistant", "content": "The Q3 revenue was 42.13 million yuan."}


def test_standard_input_text_and_chat(run) -> None:
    result = run("-", stdin="费用 分 类\u200b 说明\x02\n")
    assert result.exit_code == 0 and result.stdout == "费用分类说明\n"
    chat = json.dumps([{"role": "user", "content": "hi\u202e there"}])
    result = run("-", stdin=chat)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == [{"role": "user", "content": "hi there"}]


def test_empty_standard_input_is_an_error(run) -> None:
    result = run("-", stdin="")
    assert result.exit_code == 1
    assert error_lines(result) == ["docsan: error: -: empty input"]


# --- bad inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_pdf_gives_one_clear_line_and_a_failure_code(run, corpus, name) -> None:
    result = run(str(corpus / name))
    assert result.exit_code != 0
    [line] = error_lines(result)
    assert name in line and BROKEN[name] in line
    assert result.stdout == ""


def test_a_batch_with_broken_files_still_cleans_the_rest(run, corpus, fixtures_dir, tmp_path) -> None:
    out = tmp_path / "out"
    broken = [corpus / n for n in sorted(BROKEN)]
    result = run(str(fixtures_dir / "noisy_upload.txt"), *map(str, broken), "-o", str(out))
    assert result.exit_code == 1
    assert [p.name for p in out.iterdir()] == ["noisy_upload.clean.txt"]
    lines = error_lines(result)
    assert len(lines) == len(broken) + 1
    for path, line in zip(broken, lines, strict=False):
        assert path.name in line
    assert lines[-1] == f"docsan: error: {len(broken)} of {len(broken) + 1} inputs failed"


def _docx(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("word/document.xml", "<w:document/>")
    return path


def _png(path: Path) -> Path:
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 8, 8), False)
    pix.save(str(path))
    return path


@pytest.mark.parametrize("make", [_docx, _png], ids=["docx", "png"])
def test_unsupported_files_are_named_as_such(run, tmp_path, make) -> None:
    path = make(tmp_path / ("upload.docx" if make is _docx else "scan.png"))
    result = run(str(path))
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert path.name in line and "unsupported input" in line


def test_a_missing_file_and_a_bad_config_are_one_line_each(run, tmp_path) -> None:
    result = run(str(tmp_path / "nope.txt"))
    assert result.exit_code == 1
    assert error_lines(result) == [f"docsan: error: {tmp_path / 'nope.txt'}: no such file"]
    bad = tmp_path / "bad.toml"
    bad.write_text('stages = ["normalize"]\n[normalize]\nno_such_option = 1\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["clean", str(tmp_path / "nope.txt"), "--config", str(bad)])
    assert result.exit_code == 2
    [line] = error_lines(result)
    assert "normalize" in line and "no_such_option" in line


@pytest.mark.parametrize("flag", [["--pages", "3-1"], ["--encoding", "nope"]])
def test_a_bad_extract_flag_is_a_usage_error_before_any_input(run, fixtures_dir, tmp_path, flag) -> None:
    # Exit 2 (nothing read or written), as the same [extract] key in the file gets; not exit 1 for every input.
    out = tmp_path / "out"
    result = run(str(tmp_path / "missing.pdf"), str(fixtures_dir / "noisy_upload.txt"), "-o", str(out), *flag)
    assert result.exit_code == 2
    [line] = error_lines(result)
    assert line.startswith("docsan: error: extract.") and flag[1] in line
    assert not out.exists()
