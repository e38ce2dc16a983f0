"""``docsan clean``: extract and clean files, write the text and the audit report."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.common import err_console, error_line, fail, get_config
from cli.exit_codes import ExitCode
from docsan.config import Config
from docsan.errors import DocsanError
from docsan.extract import load
from docsan.pipeline import CleanResult, Pipeline
from docsan.render import dumps, render_json, render_messages, render_text

INPUT_SUFFIXES = {".pdf", ".txt", ".md", ".markdown", ".json", ".text"}


class OutputFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


class TablePolicy(StrEnum):
    once = "once"
    fill = "fill"
    html = "html"


class BudgetStrategy(StrEnum):
    head = "head"
    head_tail = "head-tail"
    query = "query"


class OcrMode(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def expand_inputs(paths: list[Path]) -> list[Path]:
    """Directories expand to the supported files inside them, sorted for stable output."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in INPUT_SUFFIXES))
        else:
            out.append(p)
    return out


def render(result: CleanResult, fmt: OutputFormat, *, table_html: bool) -> str:
    doc = result.document
    if fmt is OutputFormat.json:
        return render_json(doc, result.report.to_dict())
    if doc.is_chat:
        return dumps(render_messages(doc))
    return render_text(doc, markdown=fmt is OutputFormat.markdown, table_html=table_html)


def output_path(out_dir: Path, src: Path, fmt: OutputFormat, is_chat: bool, taken: set[Path] | None = None) -> Path:
    """Where ``src``'s output goes; an input named like an earlier one (a/x.txt, b/x.txt) gets -2, -3..."""
    suffix = ".json" if fmt is OutputFormat.json or is_chat else {"text": ".txt", "markdown": ".md"}[fmt]
    stem = src.name if src.suffix.lower() != suffix else src.stem + ".clean"
    path, n = out_dir / (stem + suffix), 1
    while taken is not None and path in taken:
        n += 1
        path = out_dir / f"{stem}-{n}{suffix}"
    if taken is not None:
        taken.add(path)
    return path


def clean(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to clean ('-' reads standard input).", show_default=False)
    ],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Output file (one input) or folder (several).")
    ] = None,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="text, markdown, or json (text + statistics + removals).")
    ] = OutputFormat.text,
    report: Annotated[
        Path | None, typer.Option("--report", help="Write the audit of every removal and change as JSON.")
    ] = None,
    lang: Annotated[
        str | None,
        typer.Option("--lang", help="Tesseract languages for OCR, e.g. rus+eng (default: from each page's script)."),
    ] = None,
    encoding: Annotated[
        str | None,
        typer.Option("--encoding", help="Text and chat files: decode with this codec (default: detected)."),
    ] = None,
    pages: Annotated[
        str | None, typer.Option("--pages", help="PDF pages to read, e.g. 1-20,25,40- (default: all).")
    ] = None,
    no_ocr: Annotated[
        bool, typer.Option("--no-ocr", help="Never OCR; pages without a text layer come out empty.")
    ] = False,
    ocr: Annotated[
        OcrMode | None, typer.Option("--ocr", help="auto: OCR pages without usable text; always; never.")
    ] = None,
    table_policy: Annotated[
        TablePolicy | None,
        typer.Option(
            "--table-policy",
            help="Spanned table cells: once (value once, rest blank), fill (repeat it), html (colspan/rowspan).",
        ),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="TOML configuration file.", exists=True, dir_okay=False)
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Keep at most N tokens (exact count), whole paragraphs.")
    ] = None,
    query: Annotated[
        str | None, typer.Option("--query", help="With --budget: keep the paragraphs most relevant to this question.")
    ] = None,
    strategy: Annotated[
        BudgetStrategy | None,
        typer.Option(
            "--strategy", help="With --budget: head, head-tail, or query (default: query if --query, else head)."
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Local tokenizer folder or tokenizer.json (default: DeepSeek-V4)."),
    ] = None,
    keep_control_tokens: Annotated[
        bool,
        typer.Option(
            "--keep-control-tokens", help="Do not escape text that spells the tokenizer's control tokens."
        ),
    ] = False,
) -> None:
    """Extract text from PDFs, text files or chat histories and remove the noise.

    Every removal is recorded: use --report to see what went and why.
    """
    config: Config = get_config(config_file)
    extract: dict[str, object] = {}
    if lang:
        extract["lang"] = lang
    if encoding:
        extract["encoding"] = encoding
    if pages:
        extract["pages"] = pages
    if ocr is not None:
        extract["ocr"] = ocr.value
    if no_ocr:
        extract["ocr"] = "never"
    try:
        options = {"tables": {"policy": table_policy.value}} if table_policy is not None else None
        config = config.with_overrides(extract=extract, options=options)
        config = budget_overrides(config, budget, query, strategy, tokenizer, markdown=fmt is OutputFormat.markdown)
        if keep_control_tokens:
            config = config.with_overrides(stages=tuple(s for s in config.stages if s != "special_tokens"))
        pipeline = Pipeline.from_config(config)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)

    inputs = expand_inputs(paths)
    if not inputs:
        fail("no input files found", ExitCode.USAGE)
    # An existing folder given as -o receives the output even for one input, like cp and mv.
    several = len(inputs) > 1 or any(p.is_dir() for p in paths) or (output is not None and output.is_dir())
    if several and output is None:
        fail("several inputs need -o DIR to write one output per input", ExitCode.USAGE)
    if several:
        assert output is not None
        _make_dir(output, "-o")
    if report is not None:
        _check_writable(report, "--report")

    reports: list[dict[str, object]] = []
    written: set[Path] = set()
    failed = partial = 0
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not (several and err_console.is_terminal),
    )
    with progress:
        task = progress.add_task("cleaning", total=len(inputs))
        for src in inputs:
            progress.update(task, description=f"cleaning {src.name}")
            try:
                result = pipeline.run(load(src, config.extract))
            except Exception as err:  # noqa: BLE001 - one bad file must not stop a batch
                failed += 1
                # The progress bar draws on err_console, so error_line prints above it.
                known = isinstance(err, DocsanError)
                error_line(str(err) if known else f"{src}: internal error ({type(err).__name__}: {err})")
                progress.advance(task)
                continue
            text = render(result, fmt, table_html=_table_html(config))
            try:
                if several:
                    assert output is not None
                    target = output_path(output, src, fmt, result.document.is_chat, written)
                    target.write_text(text + "\n", encoding="utf-8")
                elif output is not None:
                    output.parent.mkdir(parents=True, exist_ok=True)
                    output.write_text(text + "\n", encoding="utf-8")
                else:
                    sys.stdout.write(text + "\n")
            except OSError as err:
                failed += 1
                error_line(f"{err.filename or output}: cannot write the output: {err.strerror}")
                progress.advance(task)
                continue
            for gap in result.report.gaps:
                # A partial result says so where a person or a script looks: stderr and the exit status.
                err_console.print(f"{src}: {gap}", highlight=False, markup=False)
            partial += result.report.partial
            reports.append(result.report.to_dict())
            progress.advance(task)

    if report is not None:
        payload: object = reports[0] if not several and reports else reports
        try:
            report.write_text(dumps(payload) + "\n", encoding="utf-8")
        except OSError as err:
            fail(f"{report}: cannot write the report: {err.strerror}", ExitCode.FAILED)
    if failed:
        if several:
            error_line(f"{failed} of {len(inputs)} inputs failed")
        raise typer.Exit(ExitCode.FAILED)
    if partial:
        raise typer.Exit(ExitCode.PARTIAL)


def _make_dir(path: Path, flag: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        fail(f"{path}: cannot create the {flag} folder: {err.strerror}", ExitCode.USAGE)


def _check_writable(path: Path, flag: str) -> None:
    """Refuse an unwritable target before any work is done, not after a long batch."""
    if path.is_dir():
        fail(f"{path}: {flag} needs a file name, this is a folder", ExitCode.USAGE)
    _make_dir(path.parent, flag)
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        fail(f"{path}: {flag} cannot be written (permission denied)", ExitCode.USAGE)


def _table_html(config: Config) -> bool:
    return config.stage_options("tables").get("policy") == "html"


def budget_overrides(
    config: Config,
    budget: int | None,
    query: str | None,
    strategy: BudgetStrategy | None,
    tokenizer: str | None,
    *,
    markdown: bool,
) -> Config:
    """Append the special_tokens stage (with --budget or --tokenizer) and the budget stage (with --budget).

    A tokenizer names the model the prompt is for, so its control tokens are
    guarded whenever one is given; the budget stage runs last, on the text
    exactly as it will be written.
    """
    if budget is None and (query is not None or strategy is not None):
        fail("--query and --strategy need --budget N", ExitCode.USAGE)
    if budget is None and tokenizer is None:
        return config
    stages = list(config.stages)
    options: dict[str, dict[str, object]] = {}
    tok = {"tokenizer": tokenizer} if tokenizer is not None else {}
    if "special_tokens" not in stages:
        stages.append("special_tokens")
    options["special_tokens"] = dict(tok)
    if budget is not None:
        if "budget" in stages:
            stages.remove("budget")
        stages.append("budget")
        opts: dict[str, object] = {"budget": budget, "markdown": markdown, "table_html": _table_html(config), **tok}
        opts["suffix"] = "\n"  # the final newline clean writes after the text
        if query is not None:
            opts["query"] = query
        if strategy is not None:
            opts["strategy"] = strategy.value
        options["budget"] = opts
    return config.with_overrides(options=options, stages=tuple(stages))
