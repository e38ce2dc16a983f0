"""``docsan chunk``: clean files and cut them into token-exact chunks, one JSON object per line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, TextIO

import typer

from docsan.batch import clean_inputs, expand_inputs
from docsan.budget.tokenizer import Tokenizer
from docsan.chunking import DEFAULT_CHUNK_TOKENS, iter_chunks
from docsan.config import Config
from docsan.errors import DocsanError

from .common import ConfigOption, err_console, error_line, fail, get_config, say_skipped
from .exit_codes import ExitCode

DEPRECATED_MAX_TOKENS = "docsan: warning: chunk --max-tokens is deprecated, use --chunk-tokens (the same number)"


def chunk(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to chunk ('-' reads standard input).", show_default=False)
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="JSONL file to write ('-' or none: standard output).")
    ] = None,
    chunk_tokens: Annotated[
        int | None,
        typer.Option(
            "--chunk-tokens",
            min=8,
            show_default=False,
            help=f"Largest chunk, in tokens of the served model (exact count; default {DEFAULT_CHUNK_TOKENS}).",
        ),
    ] = None,
    # The older name: in `ask` --max-tokens is the answer's length, so here it is kept working, unlisted, with a
    # deprecation line.
    max_tokens_alias: Annotated[
        int | None, typer.Option("--max-tokens", min=8, hidden=True, help="The same as --chunk-tokens (deprecated).")
    ] = None,
    overlap: Annotated[
        int, typer.Option("--overlap", min=0, help="Start each chunk with up to N tokens of whole sentences before it.")
    ] = 0,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Local tokenizer folder or tokenizer.json (default: DeepSeek-V4)."),
    ] = None,
    config_file: ConfigOption = None,
) -> None:
    """Clean FILES and cut them into chunks for retrieval: whole paragraphs, tables cut between rows.

    Each line holds text, num_tokens, page_numbers, headings, source and a stable id;
    `docsan schema chunk` describes it. The served model's control tokens are escaped.
    """
    if max_tokens_alias is not None:
        if chunk_tokens is not None:
            fail("--max-tokens is the old name of --chunk-tokens: give one of them", ExitCode.USAGE)
        err_console().print(DEPRECATED_MAX_TOKENS, highlight=False, markup=False)
    limit = chunk_tokens or max_tokens_alias or DEFAULT_CHUNK_TOKENS  # both at least 8 when given
    if overlap >= limit:
        fail(f"--overlap ({overlap}) must be below --chunk-tokens ({limit})", ExitCode.USAGE)
    config = get_config(config_file)
    try:
        tok = Tokenizer.load(tokenizer)
        inputs = expand_inputs(paths, exclude=output, on_skip=say_skipped)
        outcomes = clean_inputs(inputs, _with_guard(config, tokenizer))
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)
    if not inputs:
        fail("no input files found", ExitCode.USAGE)
    out: TextIO
    if output is None or str(output) == "-":
        out = sys.stdout
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        out = output.open("w", encoding="utf-8")
    failed = 0
    try:
        for outcome in outcomes:
            if outcome.result is None:
                failed += 1
                error_line(outcome.error or f"{outcome.source}: failed")
                continue
            chunks = iter_chunks(outcome.result, limit, overlap=overlap, tokenizer=tok)
            out.write("".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in chunks))
    finally:
        if out is not sys.stdout:
            out.close()
    if failed:
        raise typer.Exit(ExitCode.FAILED)


def _with_guard(config: Config, tokenizer: str | None) -> Config:
    """The configured stages plus ``special_tokens`` for the tokenizer the chunks are counted with."""
    stages = config.stages if "special_tokens" in config.stages else (*config.stages, "special_tokens")
    return config.with_overrides(options={"special_tokens": {"tokenizer": tokenizer}}, stages=stages)
