"""Cleaning many inputs: one function per document, one iterator over inputs, and the output they render to.

``docsan clean`` is a front end over these; ``ask`` and the server use the
same configuration helpers (:meth:`docsan.config.Config.with_budget`). A bad
input never stops a batch: :func:`clean_input` turns it into an
:class:`Outcome` with a one-line error naming the input, and the other inputs
go on. A parallel runner (``--jobs``, Ray) maps :func:`clean_input` over the
inputs and yields the outcomes in input order, as :func:`clean_inputs` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from docsan.chat.shape import render_chat, render_messages
from docsan.config import Config
from docsan.errors import DocsanError
from docsan.extract import load
from docsan.pipeline import CleanResult, Pipeline
from docsan.render import OutputFormat, dumps, render_json, render_text

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


def expand_inputs(paths: Iterable[Path]) -> list[Path]:
    """Folders expand to the supported files inside them (recursively, sorted for stable output); files stay."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in INPUT_SUFFIXES))
        else:
            out.append(p)
    return out


def clean_input(source: Path, config: Config, pipeline: Pipeline | None = None) -> Outcome:
    """Extract and clean one input (``Path("-")`` is standard input); never raises for a bad input.

    ``pipeline`` is ``Pipeline.from_config(config)`` when not given; pass one
    to share it over many inputs.
    """
    pipeline = pipeline or Pipeline.from_config(config)
    try:
        return Outcome(source, result=pipeline.run(load(source, config.extract)))
    except DocsanError as err:
        return Outcome(source, error=str(err))
    except Exception as err:  # noqa: BLE001 - one bad file must not stop a batch
        return Outcome(source, error=f"{source}: internal error ({type(err).__name__}: {err})")


def clean_inputs(sources: Iterable[Path], config: Config) -> Iterator[Outcome]:
    """:func:`clean_input` over ``sources`` with one shared pipeline, lazily, outcomes in input order.

    The pipeline is built at the call, so a bad configuration raises
    :class:`~docsan.errors.ConfigError` before any input is read.
    """
    pipeline = Pipeline.from_config(config)
    return (clean_input(source, config, pipeline) for source in sources)


def render_output(result: CleanResult, fmt: OutputFormat = "text", *, table_html: bool = False) -> str:
    """What ``docsan clean`` writes: text or Markdown (a chat: its request as JSON), or JSON with the report."""
    doc = result.document
    if fmt == "json":
        messages = render_messages(doc) if doc.is_chat else None
        return render_json(doc, result.report.to_dict(), messages=messages)
    if doc.is_chat:
        return dumps(render_chat(doc))
    return render_text(doc, markdown=fmt == "markdown", table_html=table_html)
