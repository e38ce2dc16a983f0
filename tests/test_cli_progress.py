"""``docsan clean``'s progress bar: drawn on a terminal (documents, pages), absent otherwise.

Real processes: stderr is a pseudo-terminal in the first test, a pipe in the second.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from cli.common import stderr_is_terminal

ROOT = Path(__file__).resolve().parent.parent


def _inputs(fixtures_dir: Path) -> list[str]:
    return [str(fixtures_dir / "bilingual_report.pdf"), str(fixtures_dir / "noisy_upload.txt")]


def test_the_bar_counts_documents_and_pages_on_a_terminal(fixtures_dir: Path, tmp_path: Path) -> None:
    leader, follower = os.openpty()
    argv = [sys.executable, "-m", "cli", "clean", "--no-ocr", "-q", "-o", str(tmp_path), *_inputs(fixtures_dir)]
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    drawn = b""
    while select.select([leader], [], [], 120)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process ended and closed its end
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    text = drawn.decode("utf-8", errors="replace")
    assert "cleaned bilingual_report.pdf" in text and "1/2" in text
    assert "cleaned noisy_upload.txt" in text and "2/2" in text and " pages " in text


def test_no_bar_and_no_rich_when_stderr_is_not_a_terminal(fixtures_dir: Path, tmp_path: Path) -> None:
    # Nothing is printed on stderr either, so rich is not imported at all.
    probe = (
        "import sys\nfrom cli.main import app\n"
        "try:\n    app(sys.argv[1:])\nexcept SystemExit as end:\n    assert not end.code, end.code\n"
        "print('rich' in sys.modules)\n"
    )
    args = ["clean", "--no-ocr", "-q", "-o", str(tmp_path), *_inputs(fixtures_dir)]
    done = subprocess.run([sys.executable, "-c", probe, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
    assert done.stderr == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bilingual_report.pdf.txt", "noisy_upload.clean.txt"]


@pytest.mark.parametrize(
    ("env", "terminal"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"TTY_COMPATIBLE": "1"}, True), ({"TTY_COMPATIBLE": "0"}, False)],
)
def test_a_pipe_is_a_terminal_only_where_richs_switches_say_so(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], terminal: bool
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert not sys.stderr.isatty()  # pytest captures it
    assert stderr_is_terminal() is terminal
