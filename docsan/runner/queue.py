"""The deferred queue: long non-priority requests wait in a local SQLite file until drained.

SQLite because it is durable (a crash or reboot loses no job), needs no server, and
its transactions let two ``docsan queue run`` processes drain the same file without
running a job twice (a job is claimed by an UPDATE that only succeeds while it is pending).

A claim records the process that runs the job (:mod:`docsan.runner.job_owner`). A job
whose process died while it ran (SIGKILL, the OOM killer) is found by
:meth:`DeferredQueue.recover_orphans`, which the gateway's drainer calls before each pass
and ``docsan queue`` on every command: it goes back to pending once, and is failed with the
reason the second time, since a job that killed its runner twice is likely the cause.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsan.errors import ConfigError, DocsanError
from docsan.paths import docsan_home
from docsan.runner.backends.base import Backend, GenerationRequest
from docsan.runner.job_owner import current_owner, describe, owner_alive
from docsan.runner.tiers import Tier

# A job's life: pending (queued) → running (claimed by one runner) → done or failed.
JOB_STATUSES = ("pending", "running", "done", "failed")

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    status TEXT NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in JOB_STATUSES)})),
    tier TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    max_tokens INTEGER NOT NULL,
    source TEXT NOT NULL,
    question TEXT NOT NULL,
    messages TEXT NOT NULL,
    prompt_ids TEXT NOT NULL,
    answer TEXT,
    completion_tokens INTEGER,
    error TEXT,
    finished REAL,
    request TEXT,
    response TEXT
)
"""
# Columns added after the first release: a queue file written by an older docsan gets them on open.
ADDED_COLUMNS = {
    "request": "TEXT",
    "response": "TEXT",
    # The process running the job (host:pid:start), and how many times one was started.
    "owner": "TEXT",
    "attempts": "INTEGER NOT NULL DEFAULT 0",
}
JSON_COLUMNS = ("request", "response")
# A job is started at most this often: after a second runner died on it, it is failed, not retried.
MAX_ATTEMPTS = 2


def default_queue_path() -> Path:
    return docsan_home() / "queue.sqlite3"


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    created: float
    status: str
    tier: str
    prompt_tokens: int
    max_tokens: int
    source: str
    question: str
    messages: list[dict[str, str]]
    prompt_ids: list[int]
    answer: str | None
    completion_tokens: int | None
    error: str | None
    finished: float | None
    # The gateway's jobs: the request's other OpenAI fields (temperature, stop, tools...) to send with the
    # messages, and the upstream's whole completion once done. None for `docsan ask`'s jobs.
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    owner: str | None = None
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
        del d["messages"], d["prompt_ids"], d["request"], d["response"]  # the whole document: too long for a listing
        return d


class DeferredQueue:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_queue_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._conn() as conn:
            conn.execute(SCHEMA)
            have = {row["name"] for row in conn.execute("PRAGMA table_info(jobs)")}
            for column, kind in ADDED_COLUMNS.items():
                if column not in have:
                    conn.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: no connection is shared across threads or forks.
        with closing(sqlite3.connect(self.path, timeout=30)) as conn, conn:
            conn.row_factory = sqlite3.Row
            yield conn

    def submit(
        self, *, tier: str, prompt_tokens: int, max_tokens: int, source: str, question: str,
        messages: list[dict[str, Any]], prompt_ids: list[int], request: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        # 128 random bits: a gateway job id is all a client needs to read its answer.
        job_id = uuid.uuid4().hex
        with self._conn() as conn:
            conn.execute(
                "INSERT INTO jobs (id, created, status, tier, prompt_tokens, max_tokens, source, question, messages,"
                " prompt_ids, request) VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, time.time(), tier, prompt_tokens, max_tokens, source, question,
                 json.dumps(messages, ensure_ascii=False), json.dumps(prompt_ids),
                 None if request is None else json.dumps(request, ensure_ascii=False)),
            )  # fmt: skip
        return job_id

    def list(self, status: str | None = None) -> list[Job]:
        if status is not None and status not in JOB_STATUSES:
            raise ConfigError(f"unknown job status {status!r}: choose one of {', '.join(JOB_STATUSES)}")
        with self._conn() as conn:
            if status is None:
                rows = conn.execute("SELECT * FROM jobs ORDER BY created").fetchall()
            else:
                rows = conn.execute("SELECT * FROM jobs WHERE status = ? ORDER BY created", (status,)).fetchall()
        return [_job(r) for r in rows]

    def get(self, job_id: str) -> Job | None:
        with self._conn() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row) if row else None

    def claim(self, job_id: str) -> bool:
        """Mark a pending job running; False when another drainer got it first."""
        with self._conn() as conn:
            claimed = conn.execute(
                "UPDATE jobs SET status = 'running', owner = ?, attempts = attempts + 1"
                " WHERE id = ? AND status = 'pending'",
                (current_owner(), job_id),
            )
            return bool(claimed.rowcount)

    def recover_orphans(self) -> list[Job]:
        """Jobs left ``running`` by a process that is gone: pending again, or failed once started
        :data:`MAX_ATTEMPTS` times; returns them in their new state."""
        with self._conn() as conn:
            rows = conn.execute("SELECT id, owner, attempts FROM jobs WHERE status = 'running'").fetchall()
        out = []
        for row in rows:
            if owner_alive(row["owner"]):
                continue
            # ``owner IS ?``: a job another recoverer requeued and another drainer claimed since is left alone.
            with self._conn() as conn:
                if row["attempts"] >= MAX_ATTEMPTS:
                    error = (
                        f"its runner ({describe(row['owner'])}) stopped while running it, {row['attempts']} times:"
                        " not retried again"
                    )
                    changed = conn.execute(
                        "UPDATE jobs SET status = 'failed', error = ?, finished = ?"
                        " WHERE id = ? AND status = 'running' AND owner IS ?",
                        (error, time.time(), row["id"], row["owner"]),
                    )
                else:
                    changed = conn.execute(
                        "UPDATE jobs SET status = 'pending', owner = NULL WHERE id = ? AND status = 'running'"
                        " AND owner IS ?",
                        (row["id"], row["owner"]),
                    )
            job = self.get(row["id"]) if changed.rowcount else None
            if job is not None:
                out.append(job)
        return out

    def claim_next(self) -> Job | None:
        """Mark the oldest pending job running and return it; None when nothing is pending."""
        while True:
            with self._conn() as conn:
                row = conn.execute("SELECT id FROM jobs WHERE status = 'pending' ORDER BY created LIMIT 1").fetchone()
            if row is None:
                return None
            if self.claim(row["id"]):
                job = self.get(row["id"])
                assert job is not None
                return job
            # another drainer claimed it between our SELECT and UPDATE: look again

    def complete(
        self, job_id: str, answer: str, completion_tokens: int, response: dict[str, Any] | None = None
    ) -> None:
        with self._conn() as conn:
            conn.execute(
                "UPDATE jobs SET status = 'done', answer = ?, completion_tokens = ?, finished = ?, response = ?"
                " WHERE id = ?",
                (answer, completion_tokens, time.time(),
                 None if response is None else json.dumps(response, ensure_ascii=False), job_id),
            )  # fmt: skip

    def fail(self, job_id: str, error: str) -> None:
        with self._conn() as conn:
            conn.execute(
                "UPDATE jobs SET status = 'failed', error = ?, finished = ? WHERE id = ?", (error, time.time(), job_id)
            )


def recovered_note(job: Job) -> str:
    """One line for a job :meth:`DeferredQueue.recover_orphans` took back."""
    fate = "queued again" if job.status == "pending" else f"failed: {job.error}"
    return f"job {job.id} was left running by a process that is gone: {fate}"


def _job(row: sqlite3.Row) -> Job:
    d = dict(row)
    d["messages"] = json.loads(d["messages"])
    d["prompt_ids"] = json.loads(d["prompt_ids"])
    for key in JSON_COLUMNS:
        d[key] = json.loads(d[key]) if d.get(key) else None
    return Job(**d)


def run_pending(
    queue: DeferredQueue,
    backend: Backend,
    tiers: dict[str, Tier],
    *,
    limit: int | None = None,
    on_job: Callable[[Job], None] | None = None,
) -> list[Job]:
    """Drain up to ``limit`` pending jobs on ``backend``, each on the tier it was routed to; return them finished."""
    done: list[Job] = []
    while limit is None or len(done) < limit:
        job = queue.claim_next()
        if job is None:
            break
        try:
            tier = tiers[job.tier]
            request = GenerationRequest(messages=job.messages, prompt_ids=job.prompt_ids, max_tokens=job.max_tokens)
            gen = backend.generate(tier, request)
        except (DocsanError, KeyError) as err:
            # A job that cannot run (its tier was removed from the config, its server is down) is failed
            # with the reason, so it does not block the ones after it.
            queue.fail(job.id, str(err))
        else:
            queue.complete(job.id, gen.text, gen.completion_tokens)
        finished = queue.get(job.id)
        assert finished is not None
        done.append(finished)
        if on_job is not None:
            on_job(finished)
    return done
