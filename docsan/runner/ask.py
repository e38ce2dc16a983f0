"""`docsan ask` as a library call: extract → clean → budget → guard → route → run (or defer).

Split in two so ``--dry-run`` shares every step but the last: :func:`prepare` builds the
prompt and the routing decision without touching an engine; :func:`execute` runs it or
puts it on the deferred queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docsan.api import clean_file
from docsan.budget import Tokenizer, neutralise
from docsan.config import Config
from docsan.render import render_text
from docsan.runner.backends.base import Backend, Generation, GenerationRequest, OnText
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.errors import RunnerError
from docsan.runner.modelinfo import load_model_info
from docsan.runner.prompt import ChatTokenizer, Messages, build_messages, fit_context, guard_special_tokens
from docsan.runner.queue import DeferredQueue
from docsan.runner.router import Decision, route
from docsan.runner.tiers import Tier, build_tiers


@dataclass(frozen=True, slots=True)
class Prepared:
    source: str
    question: str
    messages: Messages
    prompt_ids: list[int]
    decision: Decision
    tiers: dict[str, Tier]
    tokens_removed_by_cleaning: int
    tokens_removed_by_budget: int
    backend: str


@dataclass(frozen=True, slots=True)
class Answer:
    prepared: Prepared
    generation: Generation | None
    # Set instead of a generation when the request went to the deferred queue.
    job_id: str | None


def prepare(
    path: str | Path,
    question: str,
    config: Config,
    *,
    backend: str,
    tier: str | None = None,
    budget_tokens: int | None = None,
    max_tokens: object = None,
    priority: bool = False,
    coerce: bool = False,
    model_dir: str | Path | None = None,
    on_convert: Callable[[str], None] | None = None,
) -> Prepared:
    """Everything up to the engine: raises GuardError/InputError/RunnerError for what cannot be asked."""
    runner = config.runner
    tiers = build_tiers(runner.tiers)
    # Counting needs the served model's tokenizer: --model, else the bundled SmolLM2 (what the embedded engine runs).
    model = Path(model_dir) if model_dir else _bundled_tokenizer(backend, on_convert)
    tokenizer = ChatTokenizer.load(model)
    cleaned = clean_file(path, config)  # Pipeline.from_config(config): the configured stages
    guarded = guard_special_tokens(cleaned.document, model)
    question, _ = neutralise(question, Tokenizer.load(model))  # the question is user text too
    fitted = fit_context(guarded.document, question, budget_tokens or runner.budget_tokens, tokenizer, model)
    messages = build_messages(fitted.text, question)
    prompt_ids = tokenizer.prompt_ids(messages)
    # The embedded engine serves every tier with one model: its position limit caps every tier.
    model_limit = None
    if backend == "embedded":
        model_limit = runner.embedded.max_model_len or load_model_info(model).max_position_embeddings
    decision = route(
        len(prompt_ids),
        max_tokens,
        tiers,
        forced=tier,
        priority=priority,
        coerce=coerce,
        hard_limit=runner.hard_limit,
        model_limit=model_limit,
    )
    removed_by_cleaning = tokenizer.count(render_text(cleaned.original)) - tokenizer.count(
        render_text(cleaned.document)
    )
    return Prepared(
        source=str(path),
        question=question,
        messages=messages,
        prompt_ids=prompt_ids,
        decision=decision,
        tiers=tiers,
        tokens_removed_by_cleaning=removed_by_cleaning,
        tokens_removed_by_budget=fitted.tokens_removed,
        backend=backend,
    )


def _bundled_tokenizer(backend: str, on_convert: Callable[[str], None] | None) -> Path:
    """The bundled model's folder; for another backend, say that the served model's tokenizer is the usual choice."""
    try:
        return embedded_model_dir(on_convert=on_convert)
    except RunnerError as err:
        if backend == "embedded":
            raise
        raise RunnerError(f"{err}; or pass --tokenizer PATH, the served model's tokenizer folder") from None


def execute(prepared: Prepared, backend: Backend, queue: DeferredQueue, on_text: OnText | None = None) -> Answer:
    """Run a prepared request, or queue it when the router deferred it."""
    d = prepared.decision
    if d.deferred:
        job_id = queue.submit(
            tier=d.tier,
            prompt_tokens=d.prompt_tokens,
            max_tokens=d.max_tokens,
            source=prepared.source,
            question=prepared.question,
            messages=prepared.messages,
            prompt_ids=prepared.prompt_ids,
        )
        return Answer(prepared, None, job_id)
    request = GenerationRequest(messages=prepared.messages, prompt_ids=prepared.prompt_ids, max_tokens=d.max_tokens)
    return Answer(prepared, backend.generate(prepared.tiers[d.tier], request, on_text), None)


def ask(
    path: str | Path,
    question: str,
    config: Config,
    backend: Backend,
    queue: DeferredQueue,
    *,
    on_text: OnText | None = None,
    **options: object,
) -> Answer:
    """:func:`prepare` then :func:`execute`; a refused request raises before ``backend`` is touched."""
    prepared = prepare(path, question, config, backend=backend.name, **options)  # type: ignore[arg-type]
    return execute(prepared, backend, queue, on_text)
