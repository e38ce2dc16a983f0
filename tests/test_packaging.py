"""Installing docsan as a library: the wheel's contents, the console script's own package name, py.typed, the
licence, and `ask --backend remote` without the engine extra (torch, vllm unimportable)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.runner.embedded_model import embedded_model_dir

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# The engine extra's own packages; transformers stays, as the serve extra's template renderer (no torch).
ENGINE = ("torch", "vllm", "gguf", "accelerate")


def test_every_package_is_listed_for_setuptools() -> None:
    found = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "docsan").rglob("__init__.py"))
    listed = PYPROJECT["tool"]["setuptools"]["packages"]
    assert sorted(p for p in listed if p.startswith("docsan.") or p == "docsan") == found
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"docsan_cli": "cli"}


def test_licence_file_matches_pyproject() -> None:
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # --no-build-isolation: the venv's setuptools builds it, nothing is downloaded.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT), "-w", str(out)],
        check=True,
        cwd=build,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("docsan-*.whl")
    return found


def test_wheel_installs_the_front_end_under_its_own_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {"docsan", "docsan_cli"} <= tops and "cli" not in tops
    assert "docsan/py.typed" in names and "docsan_cli/main.py" in names
    assert {"docsan/assets/report.css", "docsan/assets/report.js"} <= set(names)  # --html-report inlines them
    assert any(n.endswith("licenses/LICENSE") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "docsan = docsan_cli:run" in zipfile.ZipFile(wheel).read(entry).decode()


# Run from the wheel alone, with the engine extra's packages unimportable.
_WITHOUT_ENGINE = """
import sys
blocked = set(sys.argv[2].split(","))
# None in sys.modules: `import torch` fails, and find_spec("torch") says it is not installed.
for name in blocked:
    sys.modules[name] = None
sys.path.insert(0, sys.argv[1])
import docsan_cli.main
assert docsan_cli.main.__file__.startswith(sys.argv[1]), docsan_cli.main.__file__
sys.argv = ["docsan", *sys.argv[3:]]
try:
    docsan_cli.main.main()
finally:
    loaded = {m.split(".")[0] for m, mod in sys.modules.items() if mod is not None}
    assert not blocked & loaded, "an engine package was imported"
"""


def _without_engine(wheel: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_ENGINE, str(wheel), ",".join(ENGINE), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_wheel_runs_without_the_engine_extra(wheel: Path, tmp_path: Path) -> None:
    version = _without_engine(wheel, tmp_path, "--version")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"docsan {PYPROJECT['project']['version']}"
    cleaned = _without_engine(wheel, tmp_path, "clean", str(ROOT / "fixtures" / "noisy_upload.txt"))
    assert cleaned.returncode == 0, cleaned.stderr
    assert cleaned.stdout.startswith("Quarterly report")


def test_ask_remote_counts_the_prompt_without_the_engine_extra(wheel: Path, tmp_path: Path) -> None:
    model = embedded_model_dir()  # converted once with the engine extra; only its tokenizer files are read here
    cfg = tmp_path / "docsan.toml"
    cfg.write_text(f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\n', encoding="utf-8")
    args = ["ask", str(ROOT / "fixtures" / "bilingual_report.pdf"), "What was the Q3 revenue?", "--dry-run"]
    args += ["--backend", "remote", "--tokenizer", str(model), "--format", "json", "--config", str(cfg)]
    light = _without_engine(wheel, tmp_path, *args)
    assert light.returncode == 0, light.stderr
    full = CliRunner().invoke(app, args)  # the checkout, with the engine extra
    assert full.exit_code == 0, full.output
    assert json.loads(light.stdout) == json.loads(full.stdout)
    # The whole remote path, up to the HTTP request: a closed port answers at once, with one error line.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free now, and closed: nothing listens there
    args = [a for a in args if a != "--dry-run"] + ["--base-url", f"http://127.0.0.1:{port}/v1"]
    refused = _without_engine(wheel, tmp_path, *args)
    assert refused.returncode == 1, refused.stderr
    # transformers warns once that it found no PyTorch; docsan's own output is the one error line.
    ours = [line for line in refused.stderr.splitlines() if not line.startswith("[transformers]")]
    assert len(ours) == 1 and ours[0].startswith("docsan: error: cannot connect to ")
    assert "Traceback" not in refused.stderr
