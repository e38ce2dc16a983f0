"""The batch collector settings (docsan.collector): fewer passes, cycles still freed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child: the settings are process-wide, and this test process must keep its own.
PROBE = """
import gc, weakref
from docsan.collector import tune_for_batch

class Node:
    pass

def churn(n):
    passes = [0]
    def count(phase, info):
        if phase == "start":
            passes[0] += 1
    gc.callbacks.append(count)
    refs = []
    for i in range(n):
        a, b = Node(), Node()
        a.other, b.other = b, a
        if i % 1000 == 0:
            refs.append(weakref.ref(a))
    gc.callbacks.remove(count)
    return passes[0], sum(r() is not None for r in refs), len(refs)

default = churn(200_000)
tune_for_batch()
print(gc.get_freeze_count(), *default, *churn(200_000))
"""


def test_fewer_passes_and_cycles_still_freed_without_an_explicit_collect() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    frozen, default_passes, _, _, passes, alive, made = map(int, out)
    assert frozen > 1000  # what was loaded at the call (the interpreter, docsan's modules) is frozen
    assert 0 < passes < default_passes / 20
    # The collector still ran on its own: all but the cycles of the last, unfinished pass are gone.
    assert alive < made / 4


# The CLI as its console script runs it, in a child: from run()'s call (the package holding it is loaded), record
# every collector pass made before anything was frozen.
CLI_PROBE = """
import gc, sys
from cli import run
unfrozen = []
gc.callbacks.append(lambda phase, info: phase == "start" and gc.get_freeze_count() == 0 and unfrozen.append(1))
sys.argv = ["docsan", "clean", sys.argv[1]]
try:
    run()
except SystemExit:
    pass
print(len(unfrozen), int(gc.isenabled()), int(gc.get_threshold()[0] == 50_000), int("docsan.pipeline" in sys.modules))
"""


def test_the_cli_runs_no_pass_while_a_command_imports_and_the_batch_settings_after(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    note.write_text("A short note.\n\nIt has two paragraphs.\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-c", CLI_PROBE, str(note)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    # No pass while the front end and the command's modules are imported; then the collector is on, with the
    # batch settings, and the command did run (it loaded the pipeline).
    assert out[-4:] == ["0", "1", "1", "1"]


# `docsan serve` as the console script runs it, stopped at its help (the command is built, nothing is served).
SERVE_PROBE = """
import gc, sys
from cli import run
sys.argv = ["docsan", "serve", "--help"]
try:
    run()
except SystemExit:
    pass
print(int(gc.isenabled()), int(gc.get_freeze_count() > 1000), gc.get_threshold()[0], int("cli.serve" in sys.modules))
"""


def test_the_gateway_resumes_with_the_batch_settings_too() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SERVE_PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    # Measured under load (docs/benchmarks.md, "The gateway's memory and the collector settings"): the same
    # resident memory as with CPython's settings (the bounded caches decide it), 14 collector passes instead of 12,289.
    assert out[-4:] == ["1", "1", "50000", "1"]
