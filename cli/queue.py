"""``docsan queue``: inspect and drain the deferred queue of long non-priority requests."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docsan.errors import DocsanError

from .common import (
    BackendChoice,
    ConfigOption,
    FormatOption,
    JsonAlias,
    TextOrJson,
    err_console,
    fail,
    get_config,
    wants_json,
)
from .exit_codes import ExitCode
from .help import Command, Group

if TYPE_CHECKING:  # the runner is imported when a queue command runs, not by every `docsan` start
    from docsan.runner.queue import DeferredQueue, Job

queue_app = typer.Typer(
    help="Inspect and drain the deferred queue.",
    no_args_is_help=True,
    cls=Group,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@queue_app.command("list", cls=Command)
def list_jobs(
    status: Annotated[
        str | None, typer.Option("--status", help="Only jobs in this state: pending, running, done, failed.")
    ] = None,
    fmt: FormatOption = TextOrJson.text,
    json_alias: JsonAlias = False,
    config_file: ConfigOption = None,
) -> None:
    """List queued jobs, oldest first (--format json: one JSON object per job, one per line)."""
    as_json = wants_json(fmt, json_alias)
    config = get_config(config_file)
    queue = _open(config.runner.queue_path)
    try:
        jobs = queue.list(status)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)
    for job in jobs:
        if as_json:
            sys.stdout.write(json.dumps(job.to_dict(), ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(_line(job) + "\n")


@queue_app.command("run", cls=Command)
def run_jobs(
    limit: Annotated[int | None, typer.Option("--limit", help="Run at most this many jobs.", min=1)] = None,
    backend: Annotated[
        BackendChoice | None, typer.Option("--backend", help="embedded, inprocess or remote (default: config).")
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Remote backend server for every tier.")] = None,
    config_file: ConfigOption = None,
) -> None:
    """Run pending jobs on their tiers and store the answers (see them with `queue list --format json`)."""
    from docsan.runner.backends.factory import make_backend
    from docsan.runner.queue import run_pending
    from docsan.runner.tiers import build_tiers

    config = get_config(config_file)
    try:
        runner_backend = make_backend(
            backend.value if backend else config.runner.backend, config.runner, base_url=base_url
        )
        jobs = run_pending(
            _open(config.runner.queue_path),
            runner_backend,
            build_tiers(config.runner.tiers),
            limit=limit,
            on_job=lambda j: err_console().print(_line(j), highlight=False),
        )
        runner_backend.close()
    except DocsanError as err:
        fail(str(err))
    failed = sum(j.status == "failed" for j in jobs)
    err_console().print(f"docsan: ran {len(jobs)} job(s), {failed} failed", highlight=False)
    if failed:
        raise typer.Exit(ExitCode.FAILED)


def _open(path: Path | None) -> DeferredQueue:
    """The queue, with the jobs a dead process left running taken back first (each said on stderr)."""
    from docsan.runner.queue import DeferredQueue, recovered_note

    queue = DeferredQueue(path)
    for job in queue.recover_orphans():
        err_console().print(f"docsan: {recovered_note(job)}", highlight=False)
    return queue


def _line(job: Job) -> str:
    when = dt.datetime.fromtimestamp(job.created).strftime("%Y-%m-%d %H:%M")
    tail = f"error: {job.error}" if job.error else f"{job.source}: {job.question}"
    return f"{job.id}  {job.status:<7}  {when}  {job.tier:<5} {job.prompt_tokens:>6} tokens  {tail}"
