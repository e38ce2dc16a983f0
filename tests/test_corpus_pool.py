"""Worker processes (``--jobs``): the same results as one process, and a stuck or dead worker costs one document.

The whole corpus through two workers, byte for byte against the one-process
outputs, is the golden corpus case (tests/golden_outputs.py runs it with ``--jobs 2``).
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import psutil
import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.batch import render_output
from docsan.config import Config
from docsan.corpus import clean_files

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


def _leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _kill_the_worker(stop: threading.Event) -> None:
    """SIGKILL this test's worker process once it exists (it is then blocked on the pipe, or about to be).

    A worker leads its own process group; other children of the test process
    (a session's redis-server) do not, and are left alone.
    """
    me = psutil.Process()
    while not stop.is_set():
        workers = [c for c in me.children() if _leads_its_group(c.pid)]
        if workers:
            stop.wait(1.0)
            os.kill(workers[0].pid, signal.SIGKILL)
            return
        stop.wait(0.05)


def test_a_worker_that_dies_fails_its_document_and_the_batch_goes_on(stuck_input: Path, fixtures_dir: Path) -> None:
    good = fixtures_dir / "noisy_upload.txt"
    stop = threading.Event()
    killer = threading.Thread(target=_kill_the_worker, args=(stop,), daemon=True)
    killer.start()
    try:
        outcomes = list(clean_files([stuck_input, good], NO_OCR, jobs=1, document_timeout=60, ordered=True))
    finally:
        stop.set()
    assert outcomes[0].error == f"{stuck_input}: worker died (killed by SIGKILL)"
    assert outcomes[1].ok


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
