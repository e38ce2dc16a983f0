"""Each ``docsan`` command's module is imported when that command runs (or a help lists it), never for another.

A real ``docsan clean`` process on a real PDF reports the modules it imported; the group still knows every
command's name before building any, in the order help lists them, so a typo gets its suggestion.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from cli.main import app

ROOT = Path(__file__).resolve().parent.parent
# What only the other commands need: their modules, the runner, the chunker, the schemas, the TOML writer; and what
# only flags not given here need: the budget's ranking and trimming (--budget), the corpus index (--corpus-dedupe).
OTHERS = (
    "cli.ask",
    "cli.chunk",
    "cli.plan",
    "cli.queue",
    "cli.schema",
    "cli.serve",
    "cli.config_cmd",
    "docsan.runner",
    "docsan.chunking",
    "docsan.schema",
    "docsan.config_toml",
    "docsan.budget.chat_trim",
    "docsan.budget.truncate",
    "docsan.budget.rank",
    "docsan.corpus.dedupe",
    "docsan.corpus.index",
)
ORDER = ["clean", "chunk", "ask", "plan", "config", "schema", "serve", "queue"]


def test_clean_imports_no_other_command_nor_what_flags_not_given_need(fixtures_dir: Path, tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom cli.main import app\n"
        "try:\n    app(sys.argv[1:])\nexcept SystemExit as end:\n    assert not end.code, end.code\n"
        f"print(sorted(m for m in {OTHERS!r} if m in sys.modules))\n"
    )
    args = ["clean", "--no-ocr", "-q", "-o", str(tmp_path / "out.txt"), str(fixtures_dir / "bilingual_report.pdf")]
    done = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    assert (tmp_path / "out.txt").read_text(encoding="utf-8").strip()


def test_every_command_is_listed_in_order_and_built_on_first_lookup() -> None:
    group = typer.main.get_command(app)
    assert list(group.commands) == ORDER
    clean = group.commands["clean"]
    assert clean is group.get_command(None, "clean")  # built once, then kept
    assert clean.name == "clean" and clean.no_args_is_help
    assert {p.name for p in clean.params} >= {"paths", "output", "report", "jobs"}
    queue = group.get_command(None, "queue")
    assert list(queue.commands) == ["list", "run"]


def test_a_mistyped_command_is_refused_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["clea"])
    assert result.exit_code == 2
    assert "No such command 'clea'" in result.output and "Did you mean 'clean'" in result.output
