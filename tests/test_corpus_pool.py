"""Worker processes (``--jobs``): the same results as one process, and a stuck or dead worker costs one document.

The whole corpus through two workers, byte for byte against the one-process
outputs, is the golden corpus case (tests/golden_outputs.py runs it with ``--jobs 2``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.batch import Outcome, render_output
from docsan.config import Config
from docsan.corpus import clean_files, pool

NO_OCR = Config().with_overrides(extract={"ocr": "never"})


def test_unordered_results_come_as_they_finish_each_input_once(corpus: Path, fixtures_dir: Path) -> None:
    files = [corpus / "epa_spanning_cells.pdf", fixtures_dir / "noisy_upload.txt", corpus / "broken_not_a_pdf.pdf"]
    got = list(clean_files(files, NO_OCR, jobs=2))
    assert sorted(str(o.source) for o in got) == sorted(map(str, files))
    assert {str(o.source): o.ok for o in got}[str(files[2])] is False


@pytest.fixture
def stuck_input(tmp_path: Path) -> Path:
    """A named pipe nobody writes to: reading it blocks forever, like a file on a hung network mount."""
    fifo = tmp_path / "stuck.txt"
    os.mkfifo(fifo)
    return fifo


def test_a_document_past_its_time_limit_fails_alone(stuck_input: Path, fixtures_dir: Path) -> None:
    good = fixtures_dir / "noisy_upload.txt"
    outcomes = list(clean_files([stuck_input, good], NO_OCR, jobs=1, document_timeout=2, ordered=True))
    assert [o.source for o in outcomes] == [stuck_input, good]
    assert outcomes[0].error == f"{stuck_input}: timed out after 2 s (--document-timeout)"
    assert outcomes[1].ok  # the replacement worker cleaned it


def _rendered(outcome: Outcome) -> tuple[str, int]:
    """A transform for clean_files: what the caller keeps of an outcome, and the process that made it."""
    return (outcome.error or render_output(outcome.result), os.getpid())  # type: ignore[arg-type]


def test_a_transform_runs_where_each_outcome_is_made(
    corpus: Path, fixtures_dir: Path, stuck_input: Path, tmp_path: Path
) -> None:
    files = [corpus / "epa_spanning_cells.pdf", fixtures_dir / "noisy_upload.txt", corpus / "broken_not_a_pdf.pdf"]
    expected = [o.error or render_output(o.result) for o in clean_files(files, NO_OCR, jobs=1)]  # type: ignore[arg-type]
    in_process = list(clean_files(files, NO_OCR, jobs=1, transform=_rendered))
    assert [text for text, _ in in_process] == expected
    assert {pid for _, pid in in_process} == {os.getpid()}
    workers = list(clean_files(files, NO_OCR, jobs=2, ordered=True, transform=_rendered))
    assert [text for text, _ in workers] == expected
    assert os.getpid() not in {pid for _, pid in workers}
    # A time-out's error outcome is made (and transformed) in this process; the other documents go on.
    timed = list(
        clean_files([stuck_input, files[1]], NO_OCR, jobs=1, document_timeout=2, ordered=True, transform=_rendered)
    )
    assert timed[0] == (f"{stuck_input}: timed out after 2 s (--document-timeout)", os.getpid())
    assert timed[1][0] == expected[1] and timed[1][1] != os.getpid()
    # fail_fast knows a failure from the worker's reply, not from what the transform made of it. The largest
    # file goes first: here the broken one.
    broken = tmp_path / "large_broken.pdf"
    broken.write_bytes(b"not a PDF " * 100_000)
    stopped = list(
        clean_files([*files, broken], NO_OCR, jobs=1, document_timeout=60, fail_fast=True, transform=_rendered)
    )
    assert [text for text, _ in stopped] == [f"{broken}: not a PDF (no %PDF- header in its first kilobyte)"]


def _leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return []


def _kill_the_worker_blocked_on(fifo: Path, stop: threading.Event) -> None:
    """SIGKILL this test's worker once it is blocked on ``fifo``, whenever that is (a busy machine: seconds).

    The worker takes the good document first (the largest file goes out first) and the pipe after it;
    a fixed delay before the kill could land while it still cleans the good one. Opening the pipe for
    writing without blocking succeeds only once a reader has it open (ENXIO before): then the worker
    is waiting on it, and waits on, since this writer never writes. A worker is a fork of this process
    that leads its own process group; other children of the test process (a session's redis-server, a
    browser driver or a vLLM server started by earlier tests) run other programs and are left alone.
    """
    me = psutil.Process()
    mine = me.cmdline()
    writer = None
    try:
        while writer is None and not stop.is_set():
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                stop.wait(0.05)
        workers = [c for c in me.children() if _leads_its_group(c.pid) and _cmdline(c) == mine]
        if writer is not None and len(workers) == 1:  # jobs=1: the one worker is the blocked one
            os.kill(workers[0].pid, signal.SIGKILL)
    finally:
        if writer is not None:
            os.close(writer)


def test_a_worker_that_dies_fails_its_document_and_the_batch_goes_on(stuck_input: Path, fixtures_dir: Path) -> None:
    good = fixtures_dir / "noisy_upload.txt"
    stop = threading.Event()
    killer = threading.Thread(target=_kill_the_worker_blocked_on, args=(stuck_input, stop), daemon=True)
    killer.start()
    try:
        outcomes = list(clean_files([stuck_input, good], NO_OCR, jobs=1, document_timeout=60, ordered=True))
    finally:
        stop.set()
        killer.join(10)
    assert outcomes[0].error == f"{stuck_input}: worker died (killed by SIGKILL)"
    assert outcomes[1].ok


def _close_the_pipes_then_exit(*_args: object, **_kw: object) -> None:
    """In a worker: its pipes end at once, its process only half a second later (status 3)."""
    os.closerange(3, 4096)
    time.sleep(0.5)
    os._exit(3)


def test_a_dead_workers_error_names_how_it_ended_even_if_its_pipe_ended_first(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A killed process closes its pipes before it can be reaped; the parent sees the end of the pipe first
    # and read "exit status None" in that window (rare; a busy machine widens it). Here the window is 0.5 s.
    good = fixtures_dir / "noisy_upload.txt"
    monkeypatch.setattr(pool, "clean_input", _close_the_pipes_then_exit)  # the forked worker inherits it
    outcomes = list(clean_files([good], NO_OCR, jobs=1, document_timeout=60))
    assert [o.error for o in outcomes] == [f"{good}: worker died (exit status 3)"]


def test_fail_fast_stops_at_the_first_failure(corpus: Path, fixtures_dir: Path) -> None:
    files = [corpus / "broken_not_a_pdf.pdf", *[fixtures_dir / "noisy_upload.txt"] * 3]
    outcomes = list(clean_files(files, NO_OCR, jobs=1, fail_fast=True))
    assert [o.ok for o in outcomes] == [False]


def test_cli_jobs_write_the_same_files_reports_and_exit_code(corpus: Path, tmp_path: Path) -> None:
    # Broken files and real ones; the golden corpus case runs the whole corpus with --jobs 2.
    names = ("broken_empty_0byte.pdf", "epa_spanning_cells.pdf", "broken_not_a_pdf.pdf", "zh_lab_report_table_1p.pdf")
    files = [str(corpus / name) for name in names]
    runs = {}
    for jobs in ("1", "2"):
        out, report = tmp_path / f"out{jobs}", tmp_path / f"report{jobs}.json"
        result = CliRunner().invoke(
            app, ["clean", "--no-ocr", "-j", jobs, "-o", str(out), "--report", str(report), *files]
        )
        reports = json.loads(report.read_text(encoding="utf-8"))
        for entry in reports:
            for stage in entry["stages"]:
                stage.pop("seconds")
        outputs = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        runs[jobs] = (result.exit_code, result.stderr, outputs, reports)
    assert runs["1"] == runs["2"]
    assert runs["1"][0] == 1 and "broken_not_a_pdf.pdf: not a PDF" in runs["1"][1]


def test_workers_past_their_memory_limit_are_replaced_and_every_document_still_comes(
    corpus: Path, fixtures_dir: Path
) -> None:
    # A limit of 1 MB retires the worker after every document: each next document goes to a fresh fork.
    files = [
        corpus / "epa_spanning_cells.pdf",
        fixtures_dir / "noisy_upload.txt",
        corpus / "zh_lab_report_table_1p.pdf",
    ]
    files += [fixtures_dir / "chat_history.json", corpus / "broken_not_a_pdf.pdf"]
    recycled = list(clean_files(files, NO_OCR, jobs=2, ordered=True, max_worker_rss_mb=1))
    kept = list(clean_files(files, NO_OCR, jobs=2, ordered=True, max_worker_rss_mb=None))
    assert [o.error or render_output(o.result) for o in recycled] == [o.error or render_output(o.result) for o in kept]
    assert [o.ok for o in recycled] == [True, True, True, True, False]
