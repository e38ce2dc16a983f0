"""Every core on one machine: documents cleaned in worker processes, each under a time limit.

Why our own small pool and not ``concurrent.futures.ProcessPoolExecutor``:
a document that hangs (a pathological page in MuPDF's C code, an OCR run
that will not end) must cost only that document. The executor cannot stop
one task; it can only be shut down whole, and a worker that dies takes the
whole executor with it (``BrokenProcessPool``). Here each worker is a process
with its own pipe: the parent waits on every pipe and every process at once
(:func:`multiprocessing.connection.wait`), kills the process group of a
worker past its deadline (its tesseract children too), turns a dead worker
into a one-line error for the document it held, and starts a replacement.

Workers are forked where the platform allows it, after the parent built the
pipeline: they inherit the imported stages (and a loaded tokenizer) instead
of importing them again, which on a 2-core machine is most of the cost of a
short document. Elsewhere (``spawn``) each worker builds its own pipeline.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TypeVar, overload

from docsan.batch import Outcome, clean_input, clean_inputs
from docsan.collector import tune_for_batch
from docsan.config import Config
from docsan.pipeline import Pipeline

# Generous: a 2,000-page PDF with OCR on a busy machine still finishes; only a hang does not.
DEFAULT_DOCUMENT_TIMEOUT_S = 600.0
# A worker whose peak resident memory passed this after a document is replaced by a fresh fork:
# CPython and glibc keep freed memory, so one OCR'd scan (600 MB measured on the corpus) would
# otherwise stay on that worker's bill for the rest of the run.
DEFAULT_WORKER_MAX_RSS_MB = 400.0

T = TypeVar("T")
# clean_files' ``transform``: what it yields for each outcome in place of the outcome itself.
Transform = Callable[[Outcome], Any]


def usable_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _peak_rss_mb() -> float:
    import resource

    # ru_maxrss is in KiB on Linux (bytes on macOS, where this only retires workers later than asked).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(
    conn: Connection,
    config: Config,
    pipeline: Pipeline | None,
    max_rss_mb: float | None,
    count: Callable[[str], int] | None,
    transform: Transform | None,
) -> None:
    """Clean each path received until ``None`` arrives; each reply is ``(index, retiring, ok)``, then the outcome.

    ``retiring``: the worker's peak memory passed ``max_rss_mb``; it exits after this reply. ``ok``: the
    outcome has a result (the parent cannot tell from what ``transform`` made of it). The outcome goes
    pickled, as ``transform`` made it when there is one.
    """
    # Its own process group, so that a timeout kills the worker's OCR children with it.
    os.setpgid(0, 0)
    # Ctrl-C goes to the parent, which stops the workers; a worker never prints a KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pipeline = pipeline or Pipeline.from_config(config)
    tune_for_batch()
    while True:
        task = conn.recv()
        if task is None:
            return
        index, source = task
        outcome = clean_input(source, config, pipeline, count=count)
        retiring = max_rss_mb is not None and _peak_rss_mb() > max_rss_mb
        try:
            payload = pickle.dumps(_transformed(outcome, transform), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 - a result that cannot be sent fails its document only
            outcome = Outcome(source, error=f"{source}: internal error (result not sendable: {err})")
            payload = pickle.dumps(_transformed(outcome, transform), protocol=pickle.HIGHEST_PROTOCOL)
        # The small header comes first: with it the parent can hand out the next document before it
        # unpickles this one (tens of milliseconds for a long document), so this worker does not wait.
        conn.send((index, retiring, outcome.ok))
        conn.send_bytes(payload)
        if retiring:
            return


@dataclass(slots=True)
class _Slot:
    """One worker process and the document it is busy with (``None`` when idle)."""

    process: multiprocessing.process.BaseProcess
    conn: Connection
    task: tuple[int, Path] | None = None
    deadline: float = 0.0


class _Pool:
    def __init__(
        self,
        jobs: int,
        config: Config,
        pipeline: Pipeline,
        max_rss_mb: float | None,
        count: Callable[[str], int] | None = None,
        transform: Transform | None = None,
    ) -> None:
        methods = multiprocessing.get_all_start_methods()
        self._ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._config = config
        self._max_rss_mb = max_rss_mb
        # Only a forked worker can be handed the built pipeline without pickling it.
        forked = self._ctx.get_start_method() == "fork"
        self._pipeline = pipeline if forked else None
        # A token counter holds a loaded tokenizer: handed over by fork only, like the pipeline.
        self._count = count if forked else None
        self._transform = transform
        self.slots = [self._start() for _ in range(jobs)]

    def _start(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        args = (child, self._config, self._pipeline, self._max_rss_mb, self._count, self._transform)
        process = self._ctx.Process(target=_worker, args=args, daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    def replace(self, slot: _Slot) -> None:
        """Kill ``slot``'s worker (and its process group) and put a fresh one in its place."""
        self._kill(slot)
        fresh = self._start()
        slot.process, slot.conn, slot.task = fresh.process, fresh.conn, None

    @staticmethod
    def _kill(slot: _Slot) -> None:
        pid = slot.process.pid
        if slot.process.is_alive() and pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                slot.process.kill()
        slot.process.join()
        slot.conn.close()

    def close(self) -> None:
        """Idle workers are told to exit; busy ones (the run was stopped) are killed."""
        for slot in self.slots:
            if slot.task is not None:
                self._kill(slot)
                continue
            with contextlib.suppress(BrokenPipeError, OSError):
                slot.conn.send(None)
        for slot in self.slots:
            slot.process.join(timeout=5)
            if slot.process.is_alive():
                self._kill(slot)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _death(process: multiprocessing.process.BaseProcess) -> str:
    """How a worker ended, for its document's error: ``killed by SIGKILL``, ``exit status 1``.

    A dying process closes its pipes before the kernel lets its parent reap it: the parent can see the end
    of the pipe while the exit code is not there yet (it would read ``exit status None``). So it waits for
    the process first, bounded: a worker whose pipe ended is on its way out (one still there is killed next).
    """
    process.join(timeout=5)
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _transformed(outcome: Outcome, transform: Transform | None) -> Any:
    return outcome if transform is None else transform(outcome)


@overload
def clean_files(
    paths: Iterable[str | Path],
    config: Config | None = None,
    *,
    jobs: int | None = None,
    document_timeout: float | None = None,
    fail_fast: bool = False,
    ordered: bool = False,
    max_worker_rss_mb: float | None = DEFAULT_WORKER_MAX_RSS_MB,
    count: Callable[[str], int] | None = None,
    transform: None = None,
) -> Iterator[Outcome]: ...


@overload
def clean_files(
    paths: Iterable[str | Path],
    config: Config | None = None,
    *,
    jobs: int | None = None,
    document_timeout: float | None = None,
    fail_fast: bool = False,
    ordered: bool = False,
    max_worker_rss_mb: float | None = DEFAULT_WORKER_MAX_RSS_MB,
    count: Callable[[str], int] | None = None,
    transform: Callable[[Outcome], T],
) -> Iterator[T]: ...


def clean_files(
    paths: Iterable[str | Path],
    config: Config | None = None,
    *,
    jobs: int | None = None,
    document_timeout: float | None = None,
    fail_fast: bool = False,
    ordered: bool = False,
    max_worker_rss_mb: float | None = DEFAULT_WORKER_MAX_RSS_MB,
    count: Callable[[str], int] | None = None,
    transform: Transform | None = None,
) -> Iterator[Any]:
    """Clean ``paths`` in ``jobs`` worker processes (default: the usable cores), yielding outcomes as they finish.

    Each outcome is what :func:`docsan.batch.clean_input` gives for that
    input, so the results equal a one-process run. A document that takes
    longer than ``document_timeout`` seconds (default 600 with workers; OCR
    time counts) or whose worker dies gets an error outcome naming it, and
    the other documents go on. With ``fail_fast`` the iterator stops after
    the first failed outcome (running workers are killed). ``ordered`` yields
    in input order instead (finished documents wait for the earlier ones).
    A worker whose peak memory passed ``max_worker_rss_mb`` after a document
    is replaced by a fresh one (``None``: never). ``count`` (a tokenizer's)
    records each stage's tokens, as in :func:`docsan.batch.clean_input`.

    ``transform``: each outcome is passed to it where it was made (in the
    worker; in this process for ``jobs=1`` and for the error outcomes of a
    time-out or a dead worker), and what it returns is yielded instead of the
    outcome. Use it to send back only what the caller needs of a result,
    such as the rendered output: a worker pickles what it sends and the
    parent unpickles it while the workers take the cores, and a
    :class:`~docsan.pipeline.CleanResult` is about 1,700 model objects a
    document where a string is one. It must be picklable where workers are
    spawned, not forked (a module-level function, or an instance of a
    module-level class), and it should not raise: in a worker, what it
    raises fails its document (``internal error``).

    ``jobs=1`` without a timeout runs in this process, exactly as
    :func:`docsan.batch.clean_inputs`. The pipeline is built before any
    input is read, so a bad configuration raises
    :class:`~docsan.errors.ConfigError` at the call.
    """
    config = config or Config()
    sources = [Path(p) for p in paths]
    jobs = usable_cores() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    pipeline = Pipeline.from_config(config)  # raises ConfigError now, not in a worker
    if jobs == 1 and document_timeout is None:
        outcomes = _stop_at_failure(clean_inputs(sources, config, count=count), fail_fast)
        return outcomes if transform is None else map(transform, outcomes)
    timeout = DEFAULT_DOCUMENT_TIMEOUT_S if document_timeout is None else document_timeout
    workers = min(jobs, max(1, len(sources)))
    done = _run(sources, config, pipeline, workers, timeout, fail_fast, max_worker_rss_mb, count, transform)
    return _in_order(done, len(sources)) if ordered else (value for _, value in done)


def _stop_at_failure(outcomes: Iterator[Outcome], fail_fast: bool) -> Iterator[Outcome]:
    for outcome in outcomes:
        yield outcome
        if fail_fast and not outcome.ok:
            return


def _in_order(done: Iterator[tuple[int, Any]], n: int) -> Iterator[Any]:
    """Yield each input's value once every earlier input's has been yielded."""
    waiting: dict[int, Any] = {}
    nxt = 0
    for index, value in done:
        waiting[index] = value
        while nxt in waiting:
            yield waiting.pop(nxt)
            nxt += 1
    # fail_fast stopped early: what finished after the failure is still given, in order.
    yield from (waiting[i] for i in sorted(waiting))


def _run(
    sources: list[Path],
    config: Config,
    pipeline: Pipeline,
    jobs: int,
    timeout: float,
    fail_fast: bool,
    max_rss_mb: float | None,
    count: Callable[[str], int] | None,
    transform: Transform | None,
) -> Iterator[tuple[int, Any]]:
    """Each input's index and its outcome (as ``transform`` made it), as they finish."""
    if not sources:
        return
    pool = _Pool(jobs, config, pipeline, max_rss_mb, count, transform)
    # Largest files first, so that a long document does not start last and run alone at the end
    # (the order of the results does not depend on it). pop() takes from the end.
    todo = sorted(enumerate(sources), key=lambda task: _size(task[1]))

    def hand_out(slot: _Slot) -> None:
        if slot.task is None and todo:
            slot.task = todo.pop()
            slot.deadline = time.monotonic() + timeout
            # A worker that died idle cannot take it: its sentinel fails the document below.
            with contextlib.suppress(BrokenPipeError, OSError):
                slot.conn.send(slot.task)

    try:
        while True:
            for slot in pool.slots:
                hand_out(slot)
            busy = [s for s in pool.slots if s.task is not None]
            if not busy:
                return
            wait_s = max(0.0, min(s.deadline for s in busy) - time.monotonic())
            ready = set(wait([x for s in busy for x in (s.conn, s.process.sentinel)], timeout=wait_s))
            for slot in busy:
                assert slot.task is not None
                index, source = slot.task
                error = None
                if slot.conn in ready:
                    try:
                        got, retiring, ok = slot.conn.recv()
                        payload = slot.conn.recv_bytes()
                    except (EOFError, OSError):  # died while sending
                        error = f"{source}: worker died ({_death(slot.process)})"
                        pool.replace(slot)
                    else:
                        assert got == index
                        slot.task = None
                        if retiring:
                            pool.replace(slot)
                        hand_out(slot)  # before the unpickling: tens of milliseconds for a long document
                        value = pickle.loads(payload)
                elif slot.process.sentinel in ready:
                    error = f"{source}: worker died ({_death(slot.process)})"
                    pool.replace(slot)
                elif time.monotonic() >= slot.deadline:
                    error = f"{source}: timed out after {timeout:g} s (--document-timeout)"
                    pool.replace(slot)
                else:
                    continue
                if error is not None:
                    ok, value = False, _transformed(Outcome(source, error=error), transform)
                # The consumer renders and writes this outcome before the loop comes round again: the slot's
                # worker (after a reply it already has; after a death or time-out, its fresh replacement) gets
                # its next document first, so it works meanwhile instead of waiting for the parent.
                hand_out(slot)
                yield index, value
                if fail_fast and not ok:
                    return
    finally:
        # A consumer that stops early (fail-fast, an exception, Ctrl-C) leaves no worker behind.
        pool.close()
