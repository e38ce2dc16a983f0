"""Commands that only need a tokenizer print no "PyTorch was not found" advice, and hide no other warning.

The gateway install (the ``serve`` extra) has transformers for the chat template but no torch. Each
run is a real docsan process; torch is hidden from it (``sys.modules["torch"] = None``, which is how
``importlib.util.find_spec`` and so transformers see a package that is not installed), since this
venv has the engine extra too.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from docsan.runner.chat_template import NO_TORCH_ADVICE
from tests.conftest import FIXTURES, ROOT

# Runs the CLI without torch, then logs another transformers advice: it must still be printed.
WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None
from cli.main import main
try:
    main()
except SystemExit as stop:
    if stop.code:
        raise
if "transformers" in sys.modules:
    from transformers.utils import logging
    logging.get_logger("transformers").warning_advice("another advice")
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", WITHOUT_TORCH, *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_clean_with_a_budget_prints_no_torch_advice() -> None:
    done = _run("clean", str(FIXTURES / "noisy_upload.txt"), "--budget", "1000")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and NO_TORCH_ADVICE not in done.stderr and "[transformers]" not in done.stderr


@pytest.mark.slow
def test_ask_renders_the_chat_template_without_the_advice_and_other_warnings_still_show() -> None:
    done = _run("ask", str(FIXTURES / "noisy_upload.txt"), "What changed?", "--dry-run", "--budget", "500")
    assert done.returncode == 0, done.stderr
    assert NO_TORCH_ADVICE not in done.stderr
    assert "another advice" in done.stderr  # transformers was imported, and its other warnings are not hidden
