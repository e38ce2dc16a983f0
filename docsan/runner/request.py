"""The one request path shared by ``docsan ask`` and ``docsan serve``.

sanitize → neutralise control tokens (the served model's tokenizer) → fit/trim to the
budget → resolve max_tokens → count the exact prompt with the chat template → route.
Admission and running are the caller's (``ask`` runs one request on its backend; the
gateway admits against its tiers' KV ledgers first).

:class:`RequestPath` holds everything that does not depend on the request (tiers, the
built pipeline, the guard, the tokenizer and its template) and is built once per
configuration; a request then costs only its own work. Every step's record of what it
removed lands in one :class:`~docsan.report.Report`, as ``docsan clean --report`` writes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docsan.budget import fit_messages, neutralise
from docsan.config import Config
from docsan.errors import ConfigError
from docsan.model import Document
from docsan.pipeline import Pipeline
from docsan.render import render_text
from docsan.report import Change, Report, StageReport
from docsan.runner.chat_template import ChatTokenizer, Message, content_text
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.errors import GuardError
from docsan.runner.messages import (
    document_messages,
    escaped_changes,
    messages_document,
    neutralise_fields,
    tools_neutralised,
)
from docsan.runner.prompt import build_messages, fit_context
from docsan.runner.router import Decision, route
from docsan.runner.tiers import Tier, build_tiers
from docsan.stages.special_tokens import SpecialTokens

BUDGET_STAGE = "budget"


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What a caller asks for besides the messages: each None falls back to the configuration."""

    max_tokens: object = None
    priority: bool = False
    # Force a tier instead of routing by length.
    tier: str | None = None
    coerce: bool | None = None
    budget_tokens: int | None = None
    # The request's ``tools``: the template renders them, so they are counted (and guarded).
    tools: list[dict[str, Any]] | None = None
    # Per tier, the positions its engine really serves (the model's, or what its server reports).
    model_limits: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready for an engine: the messages it receives, their exact ids, the routing decision, the audit."""

    source: str
    messages: list[Message]
    prompt_ids: list[int]
    decision: Decision
    tiers: dict[str, Tier]
    report: Report
    tokens_removed_by_cleaning: int
    tokens_removed_by_budget: int
    # The request's tools after guarding (None when it sent none).
    tools: list[dict[str, Any]] | None = None
    # ``docsan ask``'s question (kept with a deferred job).
    question: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def tokens_removed(self) -> int:
        return self.tokens_removed_by_cleaning + self.tokens_removed_by_budget


class RequestPath:
    """Built once per configuration; :meth:`chat` and :meth:`document` prepare one request each."""

    def __init__(
        self,
        config: Config,
        *,
        model_dir: str | Path | None = None,
        on_convert: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.tiers = build_tiers(config.runner.tiers)
        # Counting needs the served model's tokenizer: the given folder, else the bundled SmolLM2.
        self.model_dir = Path(model_dir) if model_dir else embedded_model_dir(on_convert=on_convert)
        self.chat_tokenizer = ChatTokenizer.load(self.model_dir)
        self.tokenizer = self.chat_tokenizer.tokenizer
        # The configured stages, then the control-token guard with the served model's tokenizer: the pipeline
        # times and reports it like any stage.
        self.guard = SpecialTokens(tokenizer=str(self.model_dir))
        self.pipeline = Pipeline([*Pipeline.from_config(config).stages, self.guard])

    def warm(self) -> None:
        """Pay the one-time costs now (the template's compilation and its renderer's import, the stages' first
        run) instead of in the first request: a gateway calls this before it reports ready."""
        sample = [{"role": "user", "content": "Warm-up: is the pipeline ready?"}]
        self.chat_tokenizer.prompt_ids(sample)
        self.pipeline.run(messages_document(sample, "<warm-up>"))

    def chat(self, messages: Sequence[Message], options: RequestOptions, source: str = "<request>") -> Prepared:
        """An OpenAI messages list: each message keeps its keys; only text that a step changed is replaced."""
        t0 = time.perf_counter()
        cleaned = self.pipeline.run(messages_document(messages, source))
        report = cleaned.report
        sanitized = document_messages(cleaned.document, messages)
        sanitized, field_changes = neutralise_fields(sanitized, self.tokenizer)
        tools, tool_changes = tools_neutralised(options.tools, self.tokenizer)
        report.stage(self.guard.name).changes.extend(field_changes + tool_changes)
        # Only what cleaning changed is counted again: an untouched message is the same object, same count.
        changed = [(a, b) for a, b in zip(messages, sanitized, strict=True) if a is not b]
        removed_by_cleaning = self._content_tokens([a for a, _ in changed]) - self._content_tokens(
            [b for _, b in changed]
        )
        t1 = time.perf_counter()
        budget = self._budget(options)
        fitted, budget_changes = self._fit_chat(sanitized, tools, budget)
        removed_by_budget = 0
        if fitted is not sanitized:
            removed_by_budget = self._content_tokens(sanitized) - self._content_tokens(fitted)
        report.stages.append(_budget_report(sanitized, fitted, budget_changes, time.perf_counter() - t1))
        return self._finish(
            source, fitted, tools, report, options, max(0, removed_by_cleaning), max(0, removed_by_budget), t0=t0
        )

    def _content_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self.tokenizer.count_batch([content_text(m.get("content")) for m in messages]))

    def document(self, doc: Document, question: str, options: RequestOptions) -> Prepared:
        """``docsan ask``: a cleaned document and a question in one user message, the document fitted to the budget."""
        t0 = time.perf_counter()
        cleaned = self.pipeline.run(doc)
        report = cleaned.report
        question, found = neutralise(question, self.tokenizer)  # the question is user text too
        report.stage(self.guard.name).changes.extend(escaped_changes(found, self.tokenizer, 0))
        t1 = time.perf_counter()
        fitted = fit_context(cleaned.document, question, self._budget(options), self.chat_tokenizer)
        text = render_text(cleaned.document)
        report.stages.append(
            StageReport(BUDGET_STAGE, len(text), len(fitted.text), time.perf_counter() - t1, {}, list(fitted.changes))
        )
        removed = self.tokenizer.count(render_text(cleaned.original)) - self.tokenizer.count(text)
        messages = build_messages(fitted.text, question)
        return self._finish(
            doc.name, messages, None, report, options, removed, fitted.tokens_removed, t0=t0, question=question
        )

    def _budget(self, options: RequestOptions) -> int | None:
        return options.budget_tokens or self.config.runner.budget_tokens

    def _fit_chat(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, budget: int | None
    ) -> tuple[list[Message], list[Change]]:
        """Trim the history to ``budget`` prompt tokens, counted exactly with the chat template."""
        if budget is None:
            return messages, []

        def count(plain: list[dict[str, str]]) -> int:
            return self.chat_tokenizer.count_messages(plain, tools)

        room = budget
        while True:
            try:
                fit = fit_messages(messages, room, self.tokenizer, count_messages=count)
            except ConfigError as err:
                raise GuardError(f"budget {budget} tokens: {err}", param="messages") from None
            # The trimmer counts role and content only; names and tool calls render too.
            excess = self.chat_tokenizer.count_messages(fit.messages, tools) - budget
            if excess <= 0:
                return fit.messages, fit.changes
            room -= excess
            if room < 1:
                raise GuardError(f"budget {budget} tokens is smaller than what this chat must keep", param="messages")

    def _finish(
        self,
        source: str,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        report: Report,
        options: RequestOptions,
        removed_by_cleaning: int,
        removed_by_budget: int,
        *,
        t0: float,
        question: str = "",
    ) -> Prepared:
        prompt_ids = self.chat_tokenizer.prompt_ids(messages, tools)
        coerce = options.coerce if options.coerce is not None else self.config.runner.coerce_max_tokens
        decision = route(
            len(prompt_ids),
            options.max_tokens,
            self.tiers,
            forced=options.tier,
            priority=options.priority,
            coerce=coerce,
            hard_limit=self.config.runner.hard_limit,
            model_limits=options.model_limits,
        )
        return Prepared(
            source=source,
            messages=messages,
            prompt_ids=prompt_ids,
            decision=decision,
            tiers=self.tiers,
            report=report,
            tokens_removed_by_cleaning=removed_by_cleaning,
            tokens_removed_by_budget=removed_by_budget,
            tools=tools,
            question=question,
            seconds=time.perf_counter() - t0,
            notes=list(decision.notes),
        )


def _budget_report(before: list[Message], after: list[Message], changes: list[Change], seconds: float) -> StageReport:
    chars = [sum(len(content_text(m.get("content"))) for m in ms) for ms in (before, after)]
    stats: dict[str, int | float] = {"messages_total": len(before), "messages_kept": len(after)}
    return StageReport(BUDGET_STAGE, chars[0], chars[1], seconds, stats, changes)


def model_limits_for(tiers: Mapping[str, Tier], limit: int | None) -> dict[str, int] | None:
    """One engine serving every tier (the embedded one): its position limit caps them all."""
    if limit is None:
        return None
    return {name: limit for name in tiers}
