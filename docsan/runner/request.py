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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from docsan.api import ChatCleaner
from docsan.budget import ChatFit, fit_messages
from docsan.config import Config
from docsan.config.token_budget import check_budget
from docsan.errors import ConfigError
from docsan.model import Document
from docsan.pipeline import Pipeline
from docsan.render import render_text
from docsan.report import Change, Report, StageReport
from docsan.runner.chat_template import ChatTokenizer, Message, content_text
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.errors import GuardError
from docsan.runner.prompt import build_messages, document_room, fit_context
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
        # times and reports it like any stage. A budget stage in the list is left out: the budget is applied
        # after cleaning, with the exact count of the chat template.
        stages = [name for name in config.stages if name not in ("budget", SpecialTokens.name)]
        cleaning = config.with_overrides(
            stages=(*stages, SpecialTokens.name), options={SpecialTokens.name: {"tokenizer": str(self.model_dir)}}
        )
        self.pipeline = Pipeline.from_config(cleaning)
        # The request's tools and ``ask``'s question are guarded by the same stage as the messages.
        self.special_tokens = next(s for s in self.pipeline.stages if isinstance(s, SpecialTokens))
        # Chats keep their OpenAI shape through the same stages (docs/chat.md).
        self.cleaner = ChatCleaner(cleaning, tokenizer=self.tokenizer)

    def warm(self) -> None:
        """Pay the one-time costs now (the template's compilation and its renderer's import, the stages' first
        run) instead of in the first request: a gateway calls this before it reports ready."""
        sample = [{"role": "user", "content": "Warm-up: is the pipeline ready?"}]
        self.chat_tokenizer.prompt_ids(sample)
        self.cleaner.clean(sample, name="<warm-up>")

    def chat(self, messages: Sequence[Message], options: RequestOptions, source: str = "<request>") -> Prepared:
        """An OpenAI messages list: each message keeps its shape; only text that a step changed is replaced."""
        t0 = time.perf_counter()
        # The tools are rendered into the prompt too (names and tool calls are guarded by the pipeline's
        # special_tokens stage): their control-token spellings go first, so the budget below counts what is sent.
        tools, tool_changes = (
            self.special_tokens.neutralise_value(options.tools, 0, "tools") if options.tools is not None else (None, [])
        )
        cleaned = self.cleaner.clean(messages, name=source)
        report = cleaned.report
        report.stage(SpecialTokens.name).changes.extend(tool_changes)
        sanitized = cleaned.messages
        # The position each kept message had in the request (a message left empty by cleaning is dropped).
        numbers = [p.number for p in cleaned.document.pages]
        removed_by_cleaning = self._removed(messages, sanitized, numbers)
        t1 = time.perf_counter()
        budget = self._budget(options)
        fitted, budget_changes, stats = self._fit_chat(sanitized, tools, budget, numbers)
        removed_by_budget = 0
        if budget is not None:
            removed_by_budget = self._removed(sanitized, fitted.messages, fitted.indices)
        report.stages.append(
            _budget_report(sanitized, fitted.messages, budget_changes, stats, time.perf_counter() - t1)
        )
        return self._finish(
            source, fitted.messages, tools, report, options, removed_by_cleaning, removed_by_budget, t0=t0
        )

    def _removed(self, before: Sequence[Message], after: Sequence[Message], positions: Sequence[int]) -> int:
        """Content tokens of ``before`` that ``after`` no longer has; ``positions`` place each of ``after`` in
        ``before`` (1-based). Only changed or dropped messages are counted: an untouched one is the same object."""
        kept = dict(zip(positions, after, strict=True))
        gone = [m for i, m in enumerate(before, start=1) if kept.get(i) is not m]
        changed = [m for i, m in kept.items() if m is not before[i - 1]]
        return max(0, self._content_tokens(gone) - self._content_tokens(changed))

    def _content_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self.tokenizer.count_batch([content_text(m.get("content")) for m in messages]))

    def check_document_budget(self, question: str, options: RequestOptions) -> None:
        """Refuse a budget that the chat template and ``question`` fill alone, before any document is read."""
        budget = self._budget(options)
        if budget is not None:
            document_room(self.special_tokens.neutralise_value(question, 0, "question")[0], budget, self.chat_tokenizer)

    def document(self, doc: Document, question: str, options: RequestOptions) -> Prepared:
        """``docsan ask``: a cleaned document and a question in one user message, the document fitted to the budget."""
        t0 = time.perf_counter()
        cleaned = self.pipeline.run(doc)
        report = cleaned.report
        question, found = self.special_tokens.neutralise_value(question, 0, "question")  # user text too
        report.stage(SpecialTokens.name).changes.extend(found)
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
        if options.budget_tokens is None:
            return self.config.runner.budget_tokens
        # 0 is refused as the configuration refuses it, not taken for "none given".
        return check_budget(options.budget_tokens, "budget_tokens")

    def _fit_chat(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, budget: int | None, numbers: list[int]
    ) -> tuple[ChatFit, list[Change], dict[str, int | float]]:
        """Trim the history to ``budget`` prompt tokens, counted exactly with the chat template (names, tool
        calls and the request's tools included); the changes name the request's own message positions."""
        if budget is None:
            return ChatFit(list(messages), list(range(1, len(messages) + 1)), [], 0, {}), [], {}

        def count(shaped: list[dict[str, Any]]) -> int:
            return self.chat_tokenizer.count_messages(shaped, tools)

        try:
            fit = fit_messages(messages, budget, self.tokenizer, count_messages=count)
        except ConfigError as err:
            raise GuardError(f"budget {budget} tokens: {err}", param="messages") from None
        changes = [replace(c, page=numbers[c.page - 1]) if c.page else c for c in fit.changes]
        # fit_messages' indices are 0-based positions in ``messages``; the caller wants 1-based ones.
        fitted = ChatFit(fit.messages, [i + 1 for i in fit.indices], fit.changes, fit.tokens, fit.stats)
        return fitted, changes, dict(fit.stats)

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


def _budget_report(
    before: list[Message], after: list[Message], changes: list[Change], stats: dict[str, int | float], seconds: float
) -> StageReport:
    chars = [sum(len(content_text(m.get("content"))) for m in ms) for ms in (before, after)]
    return StageReport(BUDGET_STAGE, chars[0], chars[1], seconds, stats, changes)


def model_limits_for(tiers: Mapping[str, Tier], limit: int | None) -> dict[str, int] | None:
    """One engine serving every tier (the embedded one): its position limit caps them all."""
    if limit is None:
        return None
    return {name: limit for name in tiers}
