"""`docsan ask` as a library call: extract, the shared request path (docsan.runner.request), run or defer.

Split in two so ``--dry-run`` shares every step but the last: :func:`prepare` builds the
prompt and the routing decision without touching an engine; :func:`execute` runs it or
puts it on the deferred queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docsan.config import Config
from docsan.extract import load
from docsan.runner.backends.base import Backend, Generation, GenerationRequest, OnText
from docsan.runner.modelinfo import load_model_info
from docsan.runner.queue import DeferredQueue
from docsan.runner.request import Prepared, RequestOptions, RequestPath, model_limits_for


@dataclass(frozen=True, slots=True)
class Answer:
    prepared: Prepared
    generation: Generation | None
    # Set instead of a generation when the request went to the deferred queue.
    job_id: str | None
    backend: str


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
    coerce: bool | None = None,
    model_dir: str | Path | None = None,
    on_convert: Callable[[str], None] | None = None,
) -> Prepared:
    """Everything up to the engine: raises GuardError/InputError/RunnerError for what cannot be asked, ConfigError
    (before the file is read) for a budget of 0 or one the chat template and the question fill alone."""
    path_ = RequestPath(config, model_dir=model_dir, on_convert=on_convert)
    # The embedded engine serves every tier with one model: its position limit caps every tier.
    limit = None
    if backend == "embedded":
        limit = config.runner.embedded.max_model_len or load_model_info(path_.model_dir).max_position_embeddings
    options = RequestOptions(
        max_tokens=max_tokens,
        priority=priority,
        tier=tier,
        coerce=coerce,
        budget_tokens=budget_tokens,
        model_limits=model_limits_for(path_.tiers, limit),
    )
    path_.check_document_budget(question, options)  # a bad budget is refused before the file is read
    return path_.document(load(path, config.extract), question, options)


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
        return Answer(prepared, None, job_id, backend.name)
    request = GenerationRequest(messages=prepared.messages, prompt_ids=prepared.prompt_ids, max_tokens=d.max_tokens)
    return Answer(prepared, backend.generate(prepared.tiers[d.tier], request, on_text), None, backend.name)


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
