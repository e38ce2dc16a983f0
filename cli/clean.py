"""``docsan clean``: extract and clean files, write the text and the audit report."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.common import ConfigOption, choices, err_console, error_line, fail, get_config
from cli.exit_codes import ExitCode
from docsan.batch import clean_inputs, expand_inputs, render_output
from docsan.config import BudgetStrategy, Config, OcrMode, TablePolicy
from docsan.errors import DocsanError
from docsan.render import OutputFormat, dumps

OutputChoice = choices("OutputChoice", OutputFormat)
TableChoice = choices("TableChoice", TablePolicy)
StrategyChoice = choices("StrategyChoice", BudgetStrategy)
OcrChoice = choices("OcrChoice", OcrMode)
TEXT = OutputChoice("text")


def output_path(out_dir: Path, src: Path, fmt: str, is_chat: bool, taken: set[Path] | None = None) -> Path:
    """Where ``src``'s output goes; an input named like an earlier one (a/x.txt, b/x.txt) gets -2, -3..."""
    suffix = ".json" if fmt == "json" or is_chat else {"text": ".txt", "markdown": ".md"}[fmt]
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
        OutputChoice, typer.Option("--format", "-f", help="text, markdown, or json (text + statistics + removals).")
    ] = TEXT,
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
        OcrChoice | None, typer.Option("--ocr", help="auto: OCR pages without usable text; always; never.")
    ] = None,
    table_policy: Annotated[
        TableChoice | None,
        typer.Option(
            "--table-policy",
            help="Spanned table cells: once (value once, rest blank), fill (repeat it), html (colspan/rowspan).",
        ),
    ] = None,
    config_file: ConfigOption = None,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Keep at most N tokens (exact count), whole paragraphs.")
    ] = None,
    query: Annotated[
        str | None, typer.Option("--query", help="With --budget: keep the paragraphs most relevant to this question.")
    ] = None,
    strategy: Annotated[
        StrategyChoice | None,
        typer.Option(
            "--strategy",
            help="With --budget: head, head-tail, or query (default: query if --query, else head); "
            "chat histories: query (default: the turns that matter to the latest question) or recent.",
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Local tokenizer folder or tokenizer.json (default: DeepSeek-V4)."),
    ] = None,
    keep_control_tokens: Annotated[
        bool,
        typer.Option("--keep-control-tokens", help="Do not escape text that spells the tokenizer's control tokens."),
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
    if budget is None and (query is not None or strategy is not None):
        fail("--query and --strategy need --budget N", ExitCode.USAGE)
    try:
        options = {"tables": {"policy": table_policy.value}} if table_policy is not None else None
        config = config.with_overrides(extract=extract, options=options)
        config = config.with_budget(
            budget,
            query=query,
            strategy=strategy.value if strategy is not None else None,  # type: ignore[arg-type]
            tokenizer=tokenizer,
            markdown=fmt.value == "markdown",
            suffix="\n",  # the final newline written after the text
        )
        if keep_control_tokens:
            config = config.with_overrides(stages=tuple(s for s in config.stages if s != "special_tokens"))
        inputs = expand_inputs(paths)
        outcomes = clean_inputs(inputs, config)
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)

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
        for outcome in outcomes:
            progress.update(task, description=f"cleaned {outcome.source.name}", advance=1)
            if outcome.result is None:
                failed += 1
                # The progress bar draws on err_console, so error_line prints above it.
                error_line(outcome.error or f"{outcome.source}: failed")
                continue
            result = outcome.result
            text = render_output(result, fmt.value, table_html=config.table_html)  # type: ignore[arg-type]
            try:
                if several:
                    assert output is not None
                    target = output_path(output, outcome.source, fmt.value, result.document.is_chat, written)
                    target.write_text(text + "\n", encoding="utf-8")
                elif output is not None:
                    output.parent.mkdir(parents=True, exist_ok=True)
                    output.write_text(text + "\n", encoding="utf-8")
                else:
                    sys.stdout.write(text + "\n")
            except OSError as err:
                failed += 1
                error_line(f"{err.filename or output}: cannot write the output: {err.strerror}")
                continue
            for gap in result.report.gaps:
                # A partial result says so where a person or a script looks: stderr and the exit status.
                err_console.print(f"{outcome.source}: {gap}", highlight=False, markup=False)
            partial += result.report.partial
            reports.append(result.report.to_dict())

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
