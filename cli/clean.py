"""``docsan clean``: extract and clean files, write the text and the audit report."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from docsan.batch import Outcome, expand_inputs, render_output
from docsan.budget.tokenizer import Tokenizer
from docsan.collector import tune_for_batch
from docsan.config import BudgetStrategy, Config, OcrMode, TablePolicy
from docsan.corpus import DEFAULT_DOCUMENT_TIMEOUT_S, Engine, clean_files
from docsan.errors import DocsanError
from docsan.pipeline import CleanResult
from docsan.render import OutputFormat, dumps, dumps_list

from .common import (
    ConfigOption,
    TemplateMarkersOption,
    budget_option,
    choices,
    err_console,
    error_line,
    fail,
    get_config,
    say_skipped,
    stderr_is_terminal,
    template_marker_options,
)
from .exit_codes import ExitCode
from .progress import document_progress
from .summary import Summary

OutputChoice = choices("OutputChoice", OutputFormat)
TableChoice = choices("TableChoice", TablePolicy)
StrategyChoice = choices("StrategyChoice", BudgetStrategy)
OcrChoice = choices("OcrChoice", OcrMode)
EngineChoice = choices("EngineChoice", Engine)
TEXT = OutputChoice("text")
_SUFFIX = {"text": ".txt", "markdown": ".md", "html": ".html", "json": ".json"}


def output_path(out_dir: Path, src: Path, fmt: str, is_chat: bool, taken: set[Path] | None = None) -> Path:
    """Where ``src``'s output goes; an input named like an earlier one (a/x.txt, b/x.txt) gets -2, -3..."""
    # A chat renders as messages JSON in the text formats.
    suffix = ".json" if is_chat and fmt in ("text", "markdown") else _SUFFIX[fmt]
    stem = src.name if src.suffix.lower() != suffix else src.stem + ".clean"
    path, n = out_dir / (stem + suffix), 1
    while taken is not None and path in taken:
        n += 1
        path = out_dir / f"{stem}-{n}{suffix}"
    if taken is not None:
        taken.add(path)
    return path


@dataclass(frozen=True, slots=True)
class Prepared:
    """One input as ``clean`` writes it: the output text, the report's JSON, the lines for stderr.

    Made by :class:`Prepare` where the document was cleaned, a ``--jobs`` worker
    (:func:`docsan.corpus.clean_files`' ``transform``): the parent then
    unpickles a few strings instead of the result's ~1,700 model objects a
    document, and renders nothing while the workers take the cores. ``result`` is
    kept only for what needs all of it (``--html-report``, the summary,
    ``--corpus-dedupe``); the parent prepares those outcomes itself.
    """

    source: Path
    error: str | None = None
    pages: int = 0
    is_chat: bool = False
    text: str = ""
    # Said on stderr once the output is written: the gaps of a partial result, a budget that kept nothing.
    warnings: tuple[str, ...] = ()
    partial: bool = False
    report: str | None = None  # the report's JSON, with --report
    result: CleanResult | None = None


@dataclass(frozen=True, slots=True)
class Prepare:
    """What ``clean`` writes of an outcome (:class:`Prepared`), with its options; picklable for ``--jobs`` workers."""

    fmt: OutputFormat
    table_html: bool
    report: bool
    keep_result: bool

    def __call__(self, outcome: Outcome) -> Prepared:
        result = outcome.result
        if result is None:
            return Prepared(outcome.source, error=outcome.error or f"{outcome.source}: failed")
        warnings = [f"{outcome.source}: {gap}" for gap in result.report.gaps]
        if (dropped := _budget_kept_nothing(result)) is not None:
            warnings.append(f"docsan: {outcome.source}: {dropped}")
        return Prepared(
            outcome.source,
            pages=len(result.original.pages),
            is_chat=result.document.is_chat,
            text=render_output(result, self.fmt, table_html=self.table_html),
            warnings=tuple(warnings),
            partial=result.report.partial,
            report=dumps(result.report.to_dict()) if self.report else None,
            result=result if self.keep_result else None,
        )


def clean(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to clean ('-' reads standard input).", show_default=False)
    ],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Output file (one input; '-': standard output) or folder (several)."),
    ] = None,
    fmt: Annotated[
        OutputChoice, typer.Option("--format", "-f", help="text, markdown, json (text, pages, blocks, report), html.")
    ] = TEXT,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write the audit of every removal and change as JSON ('-': standard output)."),
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
        int | None,
        typer.Option("--budget", callback=budget_option, help="Keep at most N tokens (exact count), whole paragraphs."),
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
    template_markers: TemplateMarkersOption = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, help="Worker processes for several inputs (default: the usable cores)."),
    ] = None,
    document_timeout: Annotated[
        float | None,
        typer.Option(
            "--document-timeout",
            min=1,
            help=f"Fail a document that takes longer, OCR included (default {DEFAULT_DOCUMENT_TIMEOUT_S:g} s "
            "with workers).",
            show_default=False,
        ),
    ] = None,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Stop at the first input that fails.")] = False,
    engine: Annotated[
        EngineChoice | None,
        typer.Option("--engine", help="local (worker processes, --jobs) or ray (Ray Data tasks on a Ray cluster)."),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="With --engine ray: the cluster to join (auto, ray://HOST:10001; default: start one)."
        ),
    ] = None,
    corpus_dedupe: Annotated[
        bool,
        typer.Option(
            "--corpus-dedupe", help="Remove paragraphs an earlier document (of this run or of the index) already has."
        ),
    ] = False,
    index: Annotated[
        str | None,
        typer.Option(
            "--index",
            help="Corpus index for --corpus-dedupe: a SQLite file or redis://HOST:PORT/DB "
            "(default: docsan-index.sqlite in the -o folder).",
            show_default=False,
        ),
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
        fail("-q and -v exclude each other", ExitCode.USAGE)
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
    if index is not None and not corpus_dedupe:
        fail("--index needs --corpus-dedupe", ExitCode.USAGE)
    use_ray = engine is not None and engine.value == "ray"
    if ray_address is not None and not use_ray:
        fail("--ray-address needs --engine ray", ExitCode.USAGE)
    if use_ray and jobs is not None:
        fail("--jobs is for --engine local; Ray uses the cluster's CPUs", ExitCode.USAGE)
    output = None if _is_stdout(output) else output
    to_stdout = [name for name, p in (("--report", report), ("--html-report", html_report)) if _is_stdout(p)]
    if to_stdout and (output is None or len(to_stdout) > 1):
        fail(
            f"{' and '.join(to_stdout)} - and the cleaned text cannot all go to standard output: give -o FILE",
            ExitCode.USAGE,
        )
    on_terminal = stderr_is_terminal()
    show_summary = not quiet and (verbose or on_terminal)
    try:
        options = template_marker_options(template_markers)
        if table_policy is not None:
            options["tables"] = {"policy": table_policy.value}
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
        # Counted only when someone reads the counts: the summary, the report's token bars. Loaded here, not at the
        # first count: loaded after a document, it raised the peak more (an 18-page PDF, --jobs 1: 176 MB against
        # 164 MB; 116 MB with no summary).
        count = Tokenizer.load(tokenizer).count if show_summary or html_report is not None else None
        stage_count = count if html_report is not None else None
        skip = None if quiet else say_skipped
        # What needs whole results gets them in this process; otherwise each worker prepares its own.
        keep_result = show_summary or html_report is not None or corpus_dedupe
        prepare = Prepare(fmt.value, config.table_html, report is not None, keep_result)  # type: ignore[arg-type]
        inputs = expand_inputs(paths, exclude=output, on_skip=skip)
        # An existing folder given as -o receives the output even for one input, like cp and mv.
        several = len(inputs) > 1 or any(p.is_dir() for p in paths) or (output is not None and output.is_dir())
        # One input runs here (no worker to start), unless it needs a worker for its time limit.
        workers = jobs if several else 1
        if use_ray:
            from docsan.corpus.ray_engine import clean_files_ray

            # Ray tasks build their own pipeline: the report's per-stage token bars are left out there.
            outcomes = clean_files_ray(inputs, config, address=ray_address, document_timeout=document_timeout)
        else:
            outcomes = clean_files(
                inputs,
                config,
                jobs=workers,
                document_timeout=document_timeout,
                fail_fast=fail_fast,
                ordered=True,
                count=stage_count,
                transform=None if keep_result else prepare,
            )
        # The pipeline is built and no document is read yet (nor a worker forked): this process is
        # docsan's own, so what is loaded now stays out of the collector's passes (docsan.collector).
        tune_for_batch()
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)

    if not inputs:
        fail("no input files found", ExitCode.USAGE)
    if several and output is None:
        fail("several inputs need -o DIR to write one output per input", ExitCode.USAGE)
    if several:
        assert output is not None
        _make_dir(output, "-o")
    for target, flag in ((report, "--report"), (html_report, "--html-report")):
        if target is not None and not _is_stdout(target):
            _check_writable(target, flag)
    if corpus_dedupe:
        # The corpus index (SQLite, document hashes) is imported for this flag only.
        from docsan.corpus.dedupe import DUPLICATE_DOCUMENT, CorpusDedupe, dedupe_outcomes

        if index is None and not several:
            fail("--corpus-dedupe on one input needs --index PATH (the corpus it joins)", ExitCode.USAGE)
        location = index if index is not None else str(output / "docsan-index.sqlite")  # type: ignore[operator]
        try:
            dedupe = CorpusDedupe.open(location, config)
        except DocsanError as err:
            fail(str(err), ExitCode.USAGE)
        outcomes = dedupe_outcomes(outcomes, dedupe)
    # Already prepared in the workers unless whole results are needed here (or Ray gave them).
    items = map(prepare, outcomes) if keep_result or use_ray else outcomes

    summary = Summary(count, verbose=verbose) if count is not None and show_summary else None
    results: list[CleanResult] = []
    # Each document's report as JSON text, written as it comes in (docsan.render.dumps_list says why).
    reports: list[str] = []
    written: set[Path] = set()
    failed = partial = 0
    done = pages_done = 0
    with document_progress(len(inputs), shown=several and on_terminal) as advance:
        for item in items:
            done += 1
            pages_done += item.pages
            advance(item.source.name, pages_done)
            if item.error is not None:
                failed += 1
                if summary is not None:
                    summary.failed += 1
                # The progress bar draws on err_console(), so error_line prints above it.
                error_line(item.error)
                if fail_fast:
                    break
                continue
            if corpus_dedupe:
                # A document already in the corpus index (only corpus dedupe finds one) is said where a person looks.
                assert item.result is not None  # kept for it (keep_result)
                for finding in item.result.report.with_code(DUPLICATE_DOCUMENT):
                    err_console().print(f"docsan: {item.source}: {finding.reason}", markup=False, highlight=False)
            try:
                if several:
                    assert output is not None
                    target = output_path(output, item.source, fmt.value, item.is_chat, written)
                    target.write_text(item.text + "\n", encoding="utf-8")
                elif output is not None:
                    output.parent.mkdir(parents=True, exist_ok=True)
                    output.write_text(item.text + "\n", encoding="utf-8")
                else:
                    sys.stdout.write(item.text + "\n")
            except OSError as err:
                failed += 1
                error_line(f"{err.filename or output}: cannot write the output: {err.strerror}")
                continue
            for line in item.warnings:
                # A partial result says so where a person or a script looks: stderr and the exit status.
                err_console().print(line, highlight=False, markup=False)
            partial += item.partial
            if item.report is not None:
                reports.append(item.report)
            if html_report is not None or summary is not None:
                assert item.result is not None  # kept for them (keep_result)
                if html_report is not None:
                    results.append(item.result)
                if summary is not None:
                    summary.add(item.result)

    if corpus_dedupe:
        dedupe.close()
    if report is not None:
        report_text = reports[0] if not several and reports else dumps_list(reports)
        _write(report, report_text + "\n", "--report")
    if html_report is not None:
        from docsan.report_html import render_report_html  # difflib and its page template: only for this flag

        _write(html_report, render_report_html(results, title=_report_title(inputs)), "--html-report")
    if summary is not None:
        for line in summary.lines():
            err_console().print(line, highlight=False, markup=False)
    if done < len(inputs):
        left = len(inputs) - done
        error_line(f"--fail-fast: stopped at the first failure; {left} of {len(inputs)} inputs not cleaned")
    if failed:
        if several:
            error_line(f"{failed} of {len(inputs)} inputs failed")
        raise typer.Exit(ExitCode.FAILED)
    if partial:
        raise typer.Exit(ExitCode.PARTIAL)


def _budget_kept_nothing(result: CleanResult) -> str | None:
    """A warning when the budget (--budget or the TOML's) dropped every paragraph of a document that had some.

    Every dropped paragraph is in the report, so nothing is lost silently; but
    an empty output file with exit 0 looks like success to a person and a script
    alike, while it almost always means the budget was meant for something else
    (``ask`` refuses such a budget outright; ``clean`` has no question to fit it to).
    """
    try:
        stats = result.report.stage("budget").stats
    except KeyError:
        return None
    # A chat history's budget stats count messages, not units (docsan.budget.chat_trim): not warned of here.
    total, kept = stats.get("units_total", 0), stats.get("units_kept")
    if not total or kept != 0:
        return None
    return (
        f"a budget of {stats['budget']} tokens keeps none of its {total} paragraphs ({stats['tokens_in']} tokens): "
        "the output is empty; give a larger budget (the report lists what was dropped)"
    )


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


def _is_stdout(path: Path | None) -> bool:
    return path is not None and str(path) == "-"


def _write(path: Path, text: str, flag: str) -> None:
    """Write a report file, or standard output for ``-``."""
    if _is_stdout(path):
        sys.stdout.write(text)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        fail(f"{path}: cannot write the {flag[2:]}: {err.strerror}", ExitCode.FAILED)


def _report_title(inputs: list[Path]) -> str:
    return f"docsan report: {inputs[0]}" if len(inputs) == 1 else f"docsan report: {len(inputs)} files"
