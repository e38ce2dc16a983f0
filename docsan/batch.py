"""Cleaning many inputs: one function per document, one iterator over inputs, and the output they render to.

``docsan clean`` is a front end over these; ``ask`` and the server use the
same configuration helpers (:meth:`docsan.config.Config.with_budget`). A bad
input never stops a batch: :func:`clean_input` turns it into an
:class:`Outcome` with a one-line error naming the input, and the other inputs
go on. A parallel runner (``--jobs``, Ray) maps :func:`clean_input` over the
inputs and yields the outcomes in input order, as :func:`clean_inputs` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsan.chat.shape import render_chat, render_messages
from docsan.config import Config
from docsan.errors import DocsanError
from docsan.extract import load
from docsan.model import SCHEMA_VERSION
from docsan.pipeline import CleanResult, Pipeline
from docsan.render import OutputFormat, render_html, render_text

# What a folder given as input expands to; other files in it are not documents docsan reads.
INPUT_SUFFIXES = frozenset({".pdf", ".txt", ".md", ".markdown", ".json", ".text"})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One input's result: the cleaned result, or the one line saying why there is none."""

    source: Path
    result: CleanResult | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None


def expand_inputs(
    paths: Iterable[Path], *, exclude: Path | None = None, on_skip: Callable[[Path], None] | None = None
) -> list[Path]:
    """Folders expand to the supported files inside them (recursively, sorted for stable output); files stay.

    Files under ``exclude`` (the output folder, which may sit inside an input
    folder) are never inputs: a second run would clean the first run's
    output. Each other file of a folder that docsan does not read goes to
    ``on_skip`` (the CLI lists them as skipped).
    """
    skip_root = exclude.resolve() if exclude is not None else None
    out: list[Path] = []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        for f in sorted(f for f in p.rglob("*") if f.is_file()):
            if skip_root is not None and f.resolve().is_relative_to(skip_root):
                continue
            if f.suffix.lower() in INPUT_SUFFIXES:
                out.append(f)
            elif on_skip is not None:
                on_skip(f)
    return out


def clean_input(
    source: Path, config: Config, pipeline: Pipeline | None = None, *, count: Callable[[str], int] | None = None
) -> Outcome:
    """Extract and clean one input (``Path("-")`` is standard input); never raises for a bad input.

    ``pipeline`` is ``Pipeline.from_config(config)`` when not given; pass one
    to share it over many inputs. ``count`` (a tokenizer's) records each
    stage's tokens before and after (:meth:`Pipeline.run`).
    """
    pipeline = pipeline or Pipeline.from_config(config)
    try:
        return Outcome(source, result=pipeline.run(load(source, config.extract), count=count))
    except DocsanError as err:
        return Outcome(source, error=str(err))
    except Exception as err:  # noqa: BLE001 - one bad file must not stop a batch
        return Outcome(source, error=f"{source}: internal error ({type(err).__name__}: {err})")


def clean_inputs(
    sources: Iterable[Path], config: Config, *, count: Callable[[str], int] | None = None
) -> Iterator[Outcome]:
    """:func:`clean_input` over ``sources`` with one shared pipeline, lazily, outcomes in input order.

    The pipeline is built at the call, so a bad configuration raises
    :class:`~docsan.errors.ConfigError` before any input is read.
    """
    pipeline = Pipeline.from_config(config)
    return (clean_input(source, config, pipeline, count=count) for source in sources)


def render_output(result: CleanResult, fmt: OutputFormat = "text", *, table_html: bool = False) -> str:
    """What ``docsan clean`` writes for a result: text or Markdown (a chat: messages JSON), JSON, or HTML."""
    doc = result.document
    if fmt == "json":
        return json.dumps(clean_output(result), ensure_ascii=False, indent=2)
    if fmt == "html":
        return render_html(doc)
    if doc.is_chat:
        return json.dumps(render_chat(doc), ensure_ascii=False, indent=2)
    return render_text(doc, markdown=fmt == "markdown", table_html=table_html)


def clean_output(result: CleanResult) -> dict[str, Any]:
    """What ``--format json`` writes: the cleaned text (or messages), the document's structure, the report.

    ``docsan schema clean`` describes it; ``document`` reads back with :meth:`Document.from_dict`.
    """
    doc = result.document
    payload: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "source": doc.name, "kind": str(doc.kind)}
    if doc.is_chat:
        payload["messages"] = render_messages(doc)
    else:
        payload["text"] = render_text(doc)
    payload["document"] = doc.to_dict()
    payload["report"] = result.report.to_dict()
    return payload
