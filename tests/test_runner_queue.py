"""The deferred queue: durable SQLite jobs, claimed once, drained in order, failures recorded."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from docsan.runner.queue import DeferredQueue, run_pending
from docsan.runner.tiers import BUILTIN_TIERS
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
