"""The deferred queue: durable SQLite jobs, claimed once, drained in order, failures recorded, a dead runner's
job taken back."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from docsan.runner.job_owner import current_owner, owner_alive
from docsan.runner.queue import DeferredQueue, run_pending
from docsan.runner.tiers import BUILTIN_TIERS
from tests.conftest import ROOT
from tests.runner_support import RecordingBackend


def _submit(q: DeferredQueue, tier: str = "a100", question: str = "q?") -> str:
    return q.submit(
        tier=tier, prompt_tokens=9000, max_tokens=64, source="doc.pdf", question=question,
        messages=[{"role": "user", "content": "long document"}], prompt_ids=[1, 2, 3],
    )  # fmt: skip


def test_jobs_survive_a_new_process_and_keep_their_order(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "queue.sqlite3"
    first = _submit(DeferredQueue(path), question="first")
    second = _submit(DeferredQueue(path), question="second")
    reopened = DeferredQueue(path)  # a fresh connection: what a later `docsan queue run` sees
    assert [j.id for j in reopened.list()] == [first, second]
    job = reopened.get(first)
    assert job is not None and job.messages == [{"role": "user", "content": "long document"}]
    assert job.prompt_ids == [1, 2, 3] and job.status == "pending"


def test_a_job_is_claimed_once(tmp_path: Path) -> None:
    a, b = DeferredQueue(tmp_path / "q.sqlite3"), DeferredQueue(tmp_path / "q.sqlite3")
    only = _submit(a)
    claimed = a.claim_next()
    assert claimed is not None and claimed.id == only and claimed.status == "running"
    assert b.claim_next() is None


def test_run_pending_completes_and_fails_jobs_without_stopping(tmp_path: Path) -> None:
    q = DeferredQueue(tmp_path / "q.sqlite3")
    gone = _submit(q, tier="h100")  # a tier removed from the config since the job was queued
    ok = _submit(q)
    backend = RecordingBackend()
    done = run_pending(q, backend, dict(BUILTIN_TIERS))
    assert [(j.id, j.status) for j in done] == [(gone, "failed"), (ok, "done")]
    assert "h100" in (q.get(gone).error or "")  # type: ignore[union-attr]
    assert [(tier, req.prompt_ids, req.max_tokens) for tier, req in backend.calls] == [("a100", [1, 2, 3], 64)]
    assert q.list("pending") == []


def test_queue_list_cli(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    job = _submit(DeferredQueue(path))
    cfg = tmp_path / "docsan.toml"
    cfg.write_text(f'[runner]\nqueue_path = "{path}"\n', encoding="utf-8")
    out = CliRunner().invoke(app, ["queue", "list", "--json", "--config", str(cfg)])
    assert out.exit_code == 0, out.output
    row = json.loads(out.stdout)
    assert (row["id"], row["status"], row["tier"], row["prompt_tokens"]) == (job, "pending", "a100", 9000)
    text = CliRunner().invoke(app, ["queue", "list", "--config", str(cfg)])
    assert job in text.stdout and "doc.pdf: q?" in text.stdout
    pending = CliRunner().invoke(app, ["queue", "list", "--status", "pending", "--config", str(cfg)])
    assert job in pending.stdout
    assert CliRunner().invoke(app, ["queue", "list", "--status", "done", "--config", str(cfg)]).stdout == ""
    # A misspelt state is a bad argument, not an empty list.
    typo = CliRunner().invoke(app, ["queue", "list", "--status", "queued", "--config", str(cfg)])
    assert typo.exit_code == 2 and typo.stdout == ""
    assert typo.stderr == "docsan: error: unknown job status 'queued': choose one of pending, running, done, failed\n"


# --- a job whose runner was hard-killed -------------------------------------------------------------


@contextmanager
def _silent_server() -> Iterator[str]:
    """A loopback port that takes connections and never answers: a job sent there stays running."""
    with socket.create_server(("127.0.0.1", 0)) as srv:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"


def _kill_while_running(cfg: Path, q: DeferredQueue, job_id: str, url: str) -> int:
    """A real `docsan queue run` claims the job and waits on the silent upstream; SIGKILL it there."""
    cmd = [sys.executable, "-m", "cli", "queue", "run", "--backend", "remote", "--base-url", url, "--config", str(cfg)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while (job := q.get(job_id)) is not None and job.status != "running":
            assert proc.poll() is None and time.monotonic() < deadline, "the drainer never claimed the job"
            time.sleep(0.05)
        assert job is not None and job.owner is not None and f":{proc.pid}:" in job.owner
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return proc.pid


def test_a_job_whose_runner_was_sigkilled_is_requeued_once_then_failed(tmp_path: Path) -> None:
    path, cfg = tmp_path / "q.sqlite3", tmp_path / "docsan.toml"
    cfg.write_text(f'[runner]\nqueue_path = "{path}"\n', encoding="utf-8")
    q = DeferredQueue(path)
    job_id = _submit(q)
    with _silent_server() as url:
        _kill_while_running(cfg, q, job_id, url)
        assert q.get(job_id).status == "running"  # type: ignore[union-attr]  # what was left for ever before
        listed = CliRunner().invoke(app, ["queue", "list", "--json", "--config", str(cfg)])
        assert listed.exit_code == 0, listed.output
        assert listed.stderr.strip() == f"docsan: job {job_id} was left running by a process that is gone: queued again"
        row = json.loads(listed.stdout)
        assert (row["status"], row["attempts"], row["owner"], row["error"]) == ("pending", 1, None, None)
        pid = _kill_while_running(cfg, q, job_id, url)  # the second runner dies on it too
    listed = CliRunner().invoke(app, ["queue", "list", "--json", "--config", str(cfg)])
    row = json.loads(listed.stdout)
    assert row["status"] == "failed" and row["attempts"] == 2 and row["finished"] is not None
    assert f"its runner (process {pid} on {socket.gethostname()}) stopped while running it, 2 times" in row["error"]
    assert "failed: its runner" in listed.stderr
    assert q.recover_orphans() == []  # taken back once, not again


def test_a_job_whose_runner_lives_is_left_running(tmp_path: Path) -> None:
    q = DeferredQueue(tmp_path / "q.sqlite3")
    _submit(q)
    mine = q.claim_next()  # this test's process: alive
    assert mine is not None and mine.owner == current_owner()
    assert q.recover_orphans() == [] and q.get(mine.id).status == "running"  # type: ignore[union-attr]
    host, pid, start = current_owner().rsplit(":", 2)
    assert owner_alive(current_owner())
    assert not owner_alive(f"{host}:{pid}:{start}0")  # the same pid, started at another time: reused, so gone
    assert owner_alive(f"another-host.example:{pid}:{start}")  # cannot be checked from here: left alone


def test_the_gateway_takes_back_a_job_its_killed_predecessor_left_running(tmp_path: Path) -> None:
    from tests.serve_support import gateway_config, running_gateway

    with _silent_server() as url:
        config = gateway_config(tmp_path, url)
        q = DeferredQueue(config.runner.queue_path)
        job_id = _submit(q, tier="a10g")
        cfg = tmp_path / "docsan.toml"
        cfg.write_text(f'[runner]\nqueue_path = "{config.runner.queue_path}"\n', encoding="utf-8")
        _kill_while_running(cfg, q, job_id, url)
        with running_gateway(config, ready=False):
            deadline = time.monotonic() + 30
            while q.get(job_id).status == "running":  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the gateway left the dead runner's job running"
                time.sleep(0.05)
    job = q.get(job_id)
    assert job is not None and job.attempts == 1 and job.owner in (None, current_owner())
