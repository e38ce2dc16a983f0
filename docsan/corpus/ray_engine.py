"""A Ray cluster when one machine is not enough: the same per-document function as Ray Data tasks.

``docsan clean … --engine ray [--ray-address ADDR]`` builds a Ray Data
dataset of the inputs (one row, one block per document, so that every
document can run on any node), maps :func:`docsan.batch.clean_input` over it
in Ray tasks, and streams the outcomes back to the driver in input order,
where the CLI writes them exactly as it writes a local run's. So a cluster
of any size gives byte for byte what ``--jobs 1`` gives.

* Where the inputs are: a local path must be readable at the same path on
  the node that runs its task (one machine, or a shared filesystem); an
  object-store URI (``s3://…``, ``gs://…``, ``abfs://…``, ``file://…``:
  anything ``pyarrow.fs`` opens, with the credentials the nodes already have)
  is read by the task itself and cleaned under its URI.
* Each task runs its document in a forked child under the same
  ``--document-timeout`` as ``--jobs`` (:func:`docsan.corpus.pool.clean_files`),
  so a document that hangs fails alone there too.
* A task that dies (its node lost, the worker killed) fails that document:
  Ray Data is told to tolerate as many errored blocks as there are inputs,
  and an input whose row never comes back gets a one-line error.

:func:`clean_dataset` is the same for a pipeline that stays in Ray: rows of
``path`` and ``bytes`` (``ray.data.read_binary_files(..., include_paths=True)``)
in, rows of ``path``, ``text``, ``report`` (JSON) and ``error`` out, to be
written where the user wants (``.write_json("s3://bucket/cleaned/")``).
"""

from __future__ import annotations

import logging
import pickle
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from docsan.batch import Outcome, render_output
from docsan.config import Config
from docsan.corpus.pool import DEFAULT_DOCUMENT_TIMEOUT_S, clean_files
from docsan.errors import ConfigError
from docsan.pipeline import CleanResult

INSTALL_HINT = "--engine ray needs Ray: pip install 'docsan[ray]'"
# What makes an input an object-store URI rather than a local path (file:// too: a URI read through pyarrow.fs).
_SCHEMES = ("s3://", "gs://", "gcs://", "abfs://", "abfss://", "hdfs://", "file://")


def as_uri(source: str | Path) -> str:
    """``source`` as given: a ``pathlib.Path`` made of ``s3://b/k`` reads ``s3:/b/k``, which is put back."""
    text = str(source)
    for scheme in _SCHEMES:
        if text.startswith(scheme[:-1]) and not text.startswith(scheme):
            # file:///abs (no host) kept its path's slash: file:/abs; s3://bucket/key lost one: s3:/bucket/key.
            rest = text[len(scheme) - 2 :] if scheme == "file://" else text[len(scheme) - 1 :]
            return scheme + rest
    return text


def _ray() -> Any:
    try:
        import ray
        import ray.data  # the Data library: the [data] part of the extra
    except ModuleNotFoundError:
        raise ConfigError(INSTALL_HINT) from None
    return ray


def connect(address: str | None = None, *, num_cpus: int | None = None) -> None:
    """Join the Ray cluster at ``address`` (``auto``, ``ray://host:10001``), or start a local one; once per process."""
    ray = _ray()
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"address": address, "logging_level": logging.WARNING, "include_dashboard": False}
    if address is None and num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    try:
        ray.init(**kwargs)
    except ConnectionError as err:
        raise ConfigError(f"--ray-address {address}: cannot join the Ray cluster ({err})") from None


def _fetch(uri: str, folder: Path) -> Path:
    """Copy an object-store file to ``folder`` under its own base name (the extractor reads files)."""
    from pyarrow import fs

    filesystem, path = fs.FileSystem.from_uri(uri)
    target = folder / Path(path).name
    with filesystem.open_input_stream(path) as src, target.open("wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
    return target


def _renamed(outcome: Outcome, local: Path, name: str) -> Outcome:
    """The outcome of a fetched copy, told under the name the user gave (errors, document, report)."""
    if outcome.result is None:
        return Outcome(Path(name), error=(outcome.error or "").replace(str(local), name))
    r = outcome.result
    report = replace(r.report, source=name)
    result = CleanResult(replace(r.original, name=name), replace(r.document, name=name), report)
    return Outcome(Path(name), result=result)


def clean_one(source: str, config: Config, timeout: float) -> Outcome:
    """One input in this Ray task, in a forked child under ``timeout`` (as a ``--jobs`` worker runs it)."""
    if not source.startswith(_SCHEMES):
        (outcome,) = clean_files([source], config, jobs=1, document_timeout=timeout)
        return outcome
    with tempfile.TemporaryDirectory(prefix="docsan-ray-") as tmp:
        try:
            local = _fetch(source, Path(tmp))
        except (OSError, ValueError) as err:
            return Outcome(Path(source), error=f"{source}: cannot read from the object store ({err})")
        (outcome,) = clean_files([local], config, jobs=1, document_timeout=timeout)
        return _renamed(outcome, local, source)


def _clean_row(row: dict[str, Any], config_json: str, timeout: float) -> dict[str, Any]:
    outcome = clean_one(row["path"], Config.model_validate_json(config_json), timeout)
    return {"index": row["index"], "outcome": pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)}


def clean_files_ray(
    paths: Iterable[str | Path],
    config: Config | None = None,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    document_timeout: float | None = None,
) -> Iterator[Outcome]:
    """Clean ``paths`` as Ray Data tasks; outcomes in input order, equal to :func:`docsan.batch.clean_input`'s."""
    config = config or Config()
    sources = [as_uri(p) for p in paths]
    ray = _ray()
    from docsan.pipeline import Pipeline

    Pipeline.from_config(config)  # a bad configuration fails here, not in every task
    connect(address, num_cpus=num_cpus)
    timeout = DEFAULT_DOCUMENT_TIMEOUT_S if document_timeout is None else document_timeout
    return _stream(ray, sources, config, timeout)


def _stream(ray: Any, sources: list[str], config: Config, timeout: float) -> Iterator[Outcome]:
    if not sources:
        return
    # Ray Data reports each dataset's start and end on stderr; the CLI's own lines are what the user reads.
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    # A task that fails (after Ray's retries) loses its document, not the run.
    ctx.max_errored_blocks = len(sources)
    items = [{"index": i, "path": s} for i, s in enumerate(sources)]
    ds = ray.data.from_items(items, override_num_blocks=len(items)).map(
        _clean_row, fn_kwargs={"config_json": config.model_dump_json(), "timeout": timeout}
    )
    nxt = 0
    for row in ds.iter_rows():
        index = int(row["index"])
        for lost in range(nxt, index):
            yield _lost(sources[lost])
        yield pickle.loads(row["outcome"])  # written by our own task a moment ago
        nxt = index + 1
    for lost in range(nxt, len(sources)):
        yield _lost(sources[lost])


def _lost(source: str) -> Outcome:
    return Outcome(Path(source), error=f"{source}: the Ray task cleaning it failed (see the Ray logs)")


def clean_dataset(ds: Any, config: Config | None = None, *, document_timeout: float | None = None) -> Any:
    """Rows ``path`` + ``bytes`` in; ``path``, ``text``, ``report`` (JSON), ``error`` out: for object-store runs."""
    config = config or Config()
    timeout = DEFAULT_DOCUMENT_TIMEOUT_S if document_timeout is None else document_timeout
    return ds.map(_clean_bytes_row, fn_kwargs={"config_json": config.model_dump_json(), "timeout": timeout})


def _clean_bytes_row(row: dict[str, Any], config_json: str, timeout: float) -> dict[str, Any]:
    import json

    config = Config.model_validate_json(config_json)
    name = str(row["path"])
    with tempfile.TemporaryDirectory(prefix="docsan-ray-") as tmp:
        local = Path(tmp) / Path(name).name
        local.write_bytes(row["bytes"])
        (outcome,) = clean_files([local], config, jobs=1, document_timeout=timeout)
        outcome = _renamed(outcome, local, name)
    if outcome.result is None:
        return {"path": name, "text": None, "report": None, "error": outcome.error}
    report = json.dumps(outcome.result.report.to_dict(), ensure_ascii=False)
    text = render_output(outcome.result, table_html=config.table_html)
    return {"path": name, "text": text, "report": report, "error": None}
