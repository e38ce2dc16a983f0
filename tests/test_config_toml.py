"""`docsan config` prints every option with its default; the committed example must match it."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from docsan.config import Config, load_config
from docsan.config_toml import default_toml
from docsan.stages import REGISTRY, build_stage

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "docsan.example.toml"


def test_generated_toml_reads_back_as_the_defaults(tmp_path: Path) -> None:
    f = tmp_path / "docsan.toml"
    f.write_text(default_toml(), encoding="utf-8")
    cfg = load_config(f)
    defaults = Config()
    assert cfg.stages == defaults.stages
    assert cfg.extract == defaults.extract
    assert cfg.runner == defaults.runner
    # Every stage accepts exactly the options written for it (budget needs its number added).
    for name in REGISTRY:
        options = cfg.stage_options(name)
        if name == "budget":
            options["budget"] = 100
        build_stage(name, options)


def test_committed_example_is_current() -> None:
    assert EXAMPLE.read_text(encoding="utf-8") == default_toml(), "regenerate: docsan config > docs/docsan.example.toml"


def _is_option(line: str) -> bool:
    """``key = value``, or ``# key = (unset)`` / ``# key = (required)`` for options TOML cannot spell."""
    if line.startswith("# "):
        return bool(re.fullmatch(r"# [a-z_]+ = \((unset|required)\)", line))
    return bool(re.match(r"[a-z_]+ = ", line))


def test_every_option_says_why_and_sections_come_in_run_order() -> None:
    lines = default_toml().splitlines()
    options = [i for i, line in enumerate(lines) if _is_option(line)]
    assert len(options) > 60
    for i in options:
        above = lines[i - 1]
        assert above.startswith("# ") and not _is_option(above), f"no comment says why: {lines[i]}"
    sections = [line.strip("[]") for line in lines if line.startswith("[")]
    stages = [s for s in sections if s in REGISTRY]
    assert sections[0] == "extract"
    assert sections[-5:] == ["runner", "runner.embedded", "serve", "serve.sessions", "serve.ledger"]
    assert stages[: len(Config().stages)] == list(Config().stages)  # the default stages, in their order
    assert set(stages) == set(REGISTRY)


def test_config_command_prints_it() -> None:
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0
    assert result.stdout == default_toml()
