"""``docsan ask``: answer a question from a document on the tiered vLLM runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from docsan.errors import ConfigError, DocsanError

from .common import (
    BackendChoice,
    ConfigOption,
    FormatOption,
    JsonAlias,
    TemplateMarkersOption,
    TextOrJson,
    budget_option,
    err_console,
    fail,
    get_config,
    template_marker_options,
    wants_json,
)
from .exit_codes import ExitCode

if TYPE_CHECKING:
    from docsan.runner.ask import Answer
    from docsan.runner.request import Prepared


def ask(
    file: Annotated[Path, typer.Argument(help="The document (PDF, text, Markdown, chat JSON).", show_default=False)],
    question: Annotated[str, typer.Argument(help="The question to answer from it.", show_default=False)],
    tier: Annotated[
        str, typer.Option("--tier", help="auto (route by prompt length), or a tier name: t4, a10g, a100, ...")
    ] = "auto",
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            callback=budget_option,
            help="Prompt token budget (chat template included); trims the document.",
        ),
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Answer length limit (default: the tier's).")
    ] = None,
    coerce: Annotated[
        bool, typer.Option("--coerce", help="Replace an invalid --max-tokens by the tier default instead of refusing.")
    ] = False,
    priority: Annotated[
        bool, typer.Option("--priority", help="Long prompts (>8k) run in real time on a100 instead of being queued.")
    ] = False,
    stream: Annotated[
        bool | None, typer.Option("--stream/--no-stream", help="Stream the answer (default: on a terminal).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the routing decision; run nothing.")] = False,
    fmt: FormatOption = TextOrJson.text,
    json_alias: JsonAlias = False,
    backend: Annotated[
        BackendChoice | None, typer.Option("--backend", help="embedded (CPU, default), inprocess (GPU), remote.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Remote backend: one OpenAI-compatible server for every tier.")
    ] = None,
    tokenizer: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            help="The served model's folder: its tokenizer and chat template count the prompt (default: bundled).",
        ),
    ] = None,
    model_alias: Annotated[Path | None, typer.Option("--model", hidden=True, help="The same as --tokenizer.")] = None,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write the audit (every removal: cleaning, control tokens, budget) as JSON."),
    ] = None,
    template_markers: TemplateMarkersOption = None,
    config_file: ConfigOption = None,
) -> None:
    """Answer QUESTION from FILE: extract, clean, fit the budget, guard, route to a tier, run.

    Long non-priority prompts go to the deferred queue (see `docsan queue`).
    """
    # The runner (tokenizer, backends) is imported here, not at module level:
    # every other command, `clean` above all, would pay for it at start-up.
    from docsan.runner.ask import execute, prepare
    from docsan.runner.backends.factory import make_backend
    from docsan.runner.errors import GuardError
    from docsan.runner.queue import DeferredQueue
    from docsan.runner.router import named_tier
    from docsan.runner.tiers import build_tiers

    as_json = wants_json(fmt, json_alias)
    config = get_config(config_file).with_overrides(options=template_marker_options(template_markers))
    backend_name = backend.value if backend else config.runner.backend
    if tier != "auto":
        try:  # a name that is no tier is a bad argument: refused before the file is read
            named_tier(tier, build_tiers(config.runner.tiers))
        except DocsanError as err:
            fail(str(err), ExitCode.USAGE)
    try:
        prepared = prepare(
            file,
            question,
            config,
            backend=backend_name,
            tier=None if tier == "auto" else tier,
            budget_tokens=budget,
            max_tokens=max_tokens,
            priority=priority,
            coerce=coerce or None,
            model_dir=tokenizer or model_alias,
            on_convert=lambda msg: err_console().print(f"docsan: {msg}", highlight=False),
        )
    except GuardError as err:
        fail(str(err), ExitCode.REFUSED)
    except ConfigError as err:  # the configuration, or a --budget the template and question fill alone
        fail(str(err), ExitCode.USAGE)
    except DocsanError as err:
        fail(str(err))
    if report is not None:
        _write_report(prepared, report)
    if dry_run:
        _print_decision(prepared, backend_name, as_json)
        return
    live = stream if stream is not None else (sys.stdout.isatty() and not as_json)
    if not as_json:
        for note in prepared.decision.notes:
            err_console().print(f"docsan: {note}", highlight=False)
    try:
        runner_backend = make_backend(backend_name, config.runner, base_url=base_url)
        answer = execute(
            prepared,
            runner_backend,
            DeferredQueue(config.runner.queue_path),
            on_text=_write if live and not as_json else None,
        )
        runner_backend.close()
    except DocsanError as err:
        fail(str(err))
    _print_answer(answer, as_json, streamed=live and not as_json)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _write_report(p: Prepared, path: Path) -> None:
    try:
        path.write_text(json.dumps(p.report.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as err:
        fail(f"{path}: cannot write the report: {err.strerror}")


def _decision_dict(p: Prepared, backend: str) -> dict[str, object]:
    return {
        **p.decision.to_dict(),
        "backend": backend,
        "tokens_removed_by_cleaning": p.tokens_removed_by_cleaning,
        "tokens_removed_by_budget": p.tokens_removed_by_budget,
    }


def _print_decision(p: Prepared, backend: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(_decision_dict(p, backend), ensure_ascii=False) + "\n")
        return
    d = p.decision
    where = "deferred queue" if d.deferred else f"tier {d.tier}"
    sys.stdout.write(f"{where}: prompt {d.prompt_tokens} tokens, max_tokens {d.max_tokens}, limit {d.limit}\n")
    for note in d.notes:
        sys.stdout.write(f"  {note}\n")


def _print_answer(answer: Answer, as_json: bool, *, streamed: bool) -> None:
    p, gen = answer.prepared, answer.generation
    if as_json:
        out = {**_decision_dict(p, answer.backend), "job_id": answer.job_id}
        if gen is not None:
            out |= {
                "answer": gen.text,
                "answer_tokens": gen.completion_tokens,
                "finish_reason": gen.finish_reason,
                "seconds": round(gen.seconds, 3),
            }
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return
    if gen is None:
        sys.stdout.write(f"deferred: job {answer.job_id} (run it with `docsan queue run`)\n")
        return
    if not streamed:
        sys.stdout.write(gen.text)
    sys.stdout.write("\n")
    sys.stdout.flush()
    engine = " (embedded CPU engine: every tier runs SmolLM2-135M)" if answer.backend == "embedded" else ""
    cut = ", cut at max_tokens" if gen.finish_reason == "length" else ""
    err_console().print(
        f"tier {p.decision.tier}{engine} · prompt {p.decision.prompt_tokens} tokens · "
        f"answer {gen.completion_tokens} tokens{cut} · cleaning removed {p.tokens_removed_by_cleaning} tokens",
        highlight=False,
    )
