"""What makes the command feel finished: --version, -h, '-' for standard output, folders, a summary, one flag name
per idea, help texts without Python type labels."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from cli.main import app
from docsan import __version__

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [["clean"], ["chunk"], ["ask"], ["plan"], ["config"], ["schema"], ["queue"], ["queue", "list"],
            ["queue", "run"], []]  # fmt: skip


def invoke(*args: str, stdin: str | None = None):
    result = CliRunner().invoke(app, list(args), input=stdin)
    assert "Traceback" not in result.output
    return result


def test_version_is_the_package_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert result.stdout == f"docsan {version}\n" == f"docsan {__version__}\n"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "docsan")
def test_dash_h_is_help_and_help_has_no_type_labels(command: list[str]) -> None:
    short, long = invoke(*command, "-h"), invoke(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout
    labels = re.findall(r"<(?:bool|str|int|float|path|file|dir|list\[[^>]*\]|[a-z]+ range)>", long.stdout)
    assert labels == []


def _visible_options() -> dict[str, set[str]]:
    """Option names shown in help, per command."""
    root = typer.main.get_command(app)
    out: dict[str, set[str]] = {}

    def walk(cmd, prefix: str) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{prefix} {name}".strip())
        if not getattr(cmd, "commands", None):
            out[prefix] = {o for p in cmd.params if not p.hidden for o in p.opts if o.startswith("--")}

    walk(root, "")
    return out


def test_one_flag_name_per_idea() -> None:
    options = _visible_options()
    shown = set().union(*options.values())
    assert "--json" not in shown  # --format json, as clean has always had
    for command in ("ask", "plan", "queue list"):
        assert "--format" in options[command]
    # The tokenizer that counts: --tokenizer wherever text is counted; --model only where weights are planned.
    for command in ("clean", "chunk", "ask"):
        assert "--tokenizer" in options[command]
    assert [c for c, opts in options.items() if "--model" in opts] == ["plan"]
    # The chat templates guarded: wherever text becomes a prompt.
    assert [c for c, opts in options.items() if "--template-markers" in opts] == ["clean", "ask", "serve"]
    assert all("--config" in opts for c, opts in options.items() if c not in ("config", "schema"))


def test_the_old_spellings_still_work(tmp_path: Path) -> None:
    models = ROOT / "tests" / "data" / "models" / "qwen2.5-7b-instruct"
    new = invoke("plan", "--tier", "a100", "--model", str(models), "--format", "json")
    old = invoke("plan", "--tier", "a100", "--model", str(models), "--json")
    assert new.exit_code == old.exit_code == 0
    assert json.loads(new.stdout) == json.loads(old.stdout)


def test_dash_o_dash_is_standard_output(fixtures_dir: Path) -> None:
    result = invoke("clean", str(fixtures_dir / "noisy_upload.txt"), "-o", "-", "-q")
    assert result.exit_code == 0
    assert result.stdout.startswith("Quarterly report for the knowledge-base service")


def test_report_dash_is_standard_output(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "clean.txt"
    result = invoke("clean", str(fixtures_dir / "noisy_upload.txt"), "-o", str(out), "--report", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["source"].endswith("noisy_upload.txt")
    assert out.read_text(encoding="utf-8").startswith("Quarterly report")
    clash = invoke("clean", str(fixtures_dir / "noisy_upload.txt"), "--report", "-")
    assert clash.exit_code == 2 and clash.stdout == ""
    assert clash.stderr.count("\n") == 1 and "give -o FILE" in clash.stderr


def test_an_output_folder_inside_the_input_folder_is_never_cleaned_again(tmp_path: Path) -> None:
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("First\u200b document.", encoding="utf-8")
    (src / "b.md").write_text("# Second\n\nBody.", encoding="utf-8")
    for _ in range(2):
        result = invoke("clean", str(src), "-o", str(src / "cleaned"), "-q")
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (src / "cleaned").iterdir()) == ["a.clean.txt", "b.md.txt"]


def test_unsupported_files_in_a_folder_are_listed_as_skipped(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "a.txt").write_text("Text.", encoding="utf-8")
    (src / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (src / "sheet.xlsx").write_bytes(b"PK\x03\x04")
    expected = [
        f"docsan: skipped {src / 'photo.png'}: unsupported file type",
        f"docsan: skipped {src / 'sheet.xlsx'}: unsupported file type",
    ]
    # `chunk` reads folders the same way, so it says the same.
    for result in (invoke("clean", str(src), "-o", str(tmp_path / "out")), invoke("chunk", str(src))):
        assert result.exit_code == 0
        assert [line for line in result.stderr.splitlines() if "skipped" in line] == expected
    assert invoke("clean", str(src), "-o", str(tmp_path / "out"), "-q").stderr == ""


def test_summary_with_v_and_silence_with_q(fixtures_dir: Path, tmp_path: Path) -> None:
    args = ["clean", str(fixtures_dir / "noisy_upload.txt"), str(fixtures_dir / "bilingual_report.pdf")]
    loud = invoke(*args, "-o", str(tmp_path / "a"), "-v")
    assert loud.exit_code == 0
    lines = loud.stderr.splitlines()
    assert lines[-2].startswith("docsan: 2 file(s), 5 page(s), ") and " tokens (" in lines[-2]
    assert lines[-1].startswith("docsan: removed or changed: normalize ")
    # A line of notes for the file that has some (how the text was decoded), none for the one without.
    assert f"{fixtures_dir / 'noisy_upload.txt'}: decoded as utf-8" in lines
    assert not any(line.startswith(str(fixtures_dir / "bilingual_report.pdf")) for line in lines)
    assert invoke(*args, "-o", str(tmp_path / "b"), "-q").stderr == ""
    both = invoke(*args, "-o", str(tmp_path / "c"), "-q", "-v")
    assert both.exit_code == 2 and "exclude each other" in both.stderr


def test_a_bad_choice_names_the_choices_in_plain_words(fixtures_dir: Path) -> None:
    # Typer 0.29 checks choices with pydantic: its "Value error, " is not for the user (cli/help.py strips it).
    for args in (["clean", str(fixtures_dir / "noisy_upload.txt"), "--format", "bogus"], ["plan", "--format", "x"]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert "is not one of 'text'" in result.stderr and "Value error" not in result.stderr
