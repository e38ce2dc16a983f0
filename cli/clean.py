"""``docsan clean``: extract and clean files, write the text and the audit report."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from docsan.budget.tokenizer import Tokenizer
from docsan.config import Config
from docsan.errors import DocsanError
from docsan.extract import load
from docsan.pipeline import CleanResult, Pipeline
from docsan.render import render_html, render_messages, render_text
from docsan.report_html import render_report_html
from docsan.serialize import clean_output

from .common import err_console, error_line, fail, get_config
from .summary import Summary

INPUT_SUFFIXES = {".pdf", ".txt", ".md", ".markdown", ".json", ".text"}


class OutputFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"
    html = "html"


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


def expand_inputs(paths: list[Path], *, exclude: Path | None = None, quiet: bool = False) -> list[Path]:
    """Directories expand to the supported files inside them, sorted for stable output.

    Files under ``exclude`` (the output folder, which may sit inside an input
    folder) are never inputs: a second run would clean the first run's output.
    Unsupported files in a folder are listed on stderr as skipped, unless ``quiet``.
    """
    out: list[Path] = []
    skip_root = exclude.resolve() if exclude is not None else None
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        for f in sorted(f for f in p.rglob("*") if f.is_file()):
            if skip_root is not None and f.resolve().is_relative_to(skip_root):
                continue
            if f.suffix.lower() in INPUT_SUFFIXES:
                out.append(f)
            elif not quiet:
                err_console.print(f"docsan: skipped {f}: unsupported file type", highlight=False, markup=False)
    return out


def render(result: CleanResult, fmt: OutputFormat, *, table_html: bool) -> str:
    doc = result.document
    if fmt is OutputFormat.json:
        return json.dumps(clean_output(result), ensure_ascii=False, indent=2)
    if fmt is OutputFormat.html:
        return render_html(doc)
    if doc.is_chat:
        return json.dumps(render_messages(doc), ensure_ascii=False, indent=2)
    return render_text(doc, markdown=fmt is OutputFormat.markdown, table_html=table_html)


_SUFFIX = {OutputFormat.text: ".txt", OutputFormat.markdown: ".md", OutputFormat.html: ".html"}


def output_path(out_dir: Path, src: Path, fmt: OutputFormat, is_chat: bool, taken: set[Path] | None = None) -> Path:
    """Where ``src``'s output goes; an input named like an earlier one (a/x.txt, b/x.txt) gets -2, -3..."""
    suffix = ".json" if fmt is OutputFormat.json or (is_chat and fmt is not OutputFormat.html) else _SUFFIX[fmt]
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
        Path | None,
        typer.Option("-o", "--output", help="Output file (one input; '-': standard output) or folder (several)."),
    ] = None,
    fmt: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="text, markdown, json (text, pages, blocks, report), html.")
    ] = OutputFormat.text,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write the audit of every removal and change as JSON ('-': standard output)."),
    ] = None,
    lang: Annotated[
        str | None, typer.Option("--lang", help="Tesseract languages for OCR (default: chi_sim+eng).")
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
    html_report: Annotated[
        Path | None,
        typer.Option("--html-report", help="Write a page showing every removal beside the original (one for all)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No summary at the end; errors only.")] = False,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Summary even when stderr is not a terminal, with extraction notes.")
    ] = False,
) -> None:
    """Extract text from PDFs, text files or chat histories and remove the noise.

    Every removal is recorded: use --report to see what went and why.
    """
    if quiet and verbose:
        fail("-q and -v exclude each other", 2)
    config: Config = get_config(config_file)
    extract: dict[str, object] = {}
    if lang:
        extract["lang"] = lang
    if ocr is not None:
        extract["ocr"] = ocr.value
    if no_ocr:
        extract["ocr"] = "never"
    try:
        options = {"tables": {"policy": table_policy.value}} if table_policy is not None else None
        config = config.with_overrides(extract=extract, options=options)
        config = budget_overrides(config, budget, query, strategy, tokenizer, markdown=fmt is OutputFormat.markdown)
        pipeline = Pipeline.from_config(config)
    except DocsanError as err:
        fail(str(err), 2)

    output = None if output is not None and _is_stdout(output) else output
    to_stdout = [name for name, p in (("--report", report), ("--html-report", html_report)) if _is_stdout(p)]
    if to_stdout and (output is None or len(to_stdout) > 1):
        fail(f"{' and '.join(to_stdout)} - and the cleaned text cannot all go to standard output: give -o FILE", 2)
    inputs = expand_inputs(paths, exclude=output, quiet=quiet)
    if not inputs:
        fail("no input files found", 2)
    several = len(inputs) > 1 or any(p.is_dir() for p in paths)
    if several and output is None:
        fail("several inputs need -o DIR to write one output per input", 2)
    if several:
        assert output is not None
        output.mkdir(parents=True, exist_ok=True)

    show_summary = not quiet and (verbose or err_console.is_terminal)
    try:
        count = Tokenizer.load(tokenizer).count if show_summary or html_report is not None else None
    except DocsanError as err:
        fail(str(err), 2)
    summary = Summary(count, verbose=verbose) if count is not None and show_summary else None
    results: list[CleanResult] = []
    reports: list[dict[str, object]] = []
    written: set[Path] = set()
    failed = 0
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
                result = pipeline.run(load(src, config.extract), count=count if html_report else None)
            except Exception as err:  # noqa: BLE001 - one bad file must not stop a batch
                failed += 1
                if summary is not None:
                    summary.failed += 1
                # The progress bar draws on err_console, so error_line prints above it.
                known = isinstance(err, DocsanError)
                error_line(str(err) if known else f"{src}: internal error ({type(err).__name__}: {err})")
                progress.advance(task)
                continue
            text = render(result, fmt, table_html=_table_html(config))
            if several:
                assert output is not None
                target = output_path(output, src, fmt, result.document.is_chat, written)
                target.write_text(text + "\n", encoding="utf-8")
            elif output is not None:
                output.parent.mkdir(parents=True, exist_ok=True)
                output.write_text(text + "\n", encoding="utf-8")
            else:
                sys.stdout.write(text + "\n")
            reports.append(result.report.to_dict())
            if html_report is not None:
                results.append(result)
            if summary is not None:
                summary.add(result)
            progress.advance(task)

    if report is not None:
        payload: object = reports[0] if not several and reports else reports
        _write(report, json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    if html_report is not None:
        _write(html_report, render_report_html(results, title=_report_title(inputs)))
    if summary is not None:
        for line in summary.lines():
            err_console.print(line, highlight=False, markup=False)
    if failed:
        if several:
            error_line(f"{failed} of {len(inputs)} inputs failed")
        raise typer.Exit(1)


def _is_stdout(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def _write(path: Path, text: str) -> None:
    """Write a report file, or standard output for ``-``."""
    if _is_stdout(path):
        sys.stdout.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _report_title(inputs: list[Path]) -> str:
    return f"docsan report: {inputs[0]}" if len(inputs) == 1 else f"docsan report: {len(inputs)} files"


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
        fail("--query and --strategy need --budget N", 2)
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
