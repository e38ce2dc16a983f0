"""The prompt `docsan ask` sends: the question and the document as messages, fitted into a budget.

Counting uses the served model's own tokenizer with its chat template applied
(:mod:`docsan.runner.chat_template`), so the count includes the template's special
tokens and is exactly the token sequence the engines receive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from docsan.budget import fit_document
from docsan.errors import ConfigError
from docsan.model import Document
from docsan.render import render_text
from docsan.report import Change
from docsan.runner.chat_template import ChatTokenizer

Messages = list[dict[str, Any]]


def build_messages(context: str, question: str) -> Messages:
    """One user message: the question, the document, the question again.

    Asking before and after the document is what made the bundled 135M model answer
    instead of copying the document's first lines (tried on fixtures/bilingual_report.pdf:
    a system prompt + "Document: … Question: …" layout copied the running header).
    No system message, so the model's chat template adds its own default one.
    """
    return [
        {
            "role": "user",
            "content": f"Read the document and answer the question.\n\nQuestion: {question}\n\n"
            f"Document:\n{context}\n\nQuestion: {question}\nAnswer in one sentence.",
        }
    ]


# Tokens left for the joins between the template and the document (see fit_context).
SEAM_TOKENS = 4


@dataclass(frozen=True, slots=True)
class FittedContext:
    text: str
    # Document tokens removed to meet the budget (0 when everything fitted); the
    # document's count is the sum of its paragraphs' counts, off by a few tokens at the joins.
    tokens_removed: int
    # What the budget dropped or cut, for the report.
    changes: tuple[Change, ...] = ()


def document_room(question: str, budget_tokens: int, tokenizer: ChatTokenizer) -> tuple[int, int]:
    """What a prompt of ``budget_tokens`` leaves the document, and what the template and question take.

    A budget they fill alone is refused (:class:`ConfigError`): it is a bad argument whatever the
    document holds, so :func:`docsan.runner.ask.prepare` asks this before reading the file.
    """
    overhead = len(tokenizer.prompt_ids(build_messages("", question)))
    # The seams usually cost a token or two: leaving them from the start saves
    # a second fit (each fit tokenizes the whole document once).
    room = budget_tokens - overhead - SEAM_TOKENS
    if room <= 0:
        raise ConfigError(
            f"budget {budget_tokens} tokens is below the {overhead + SEAM_TOKENS + 1} the prompt needs before any of "
            f"the document (the chat template and the question: {overhead}, the joins: {SEAM_TOKENS})"
        )
    return room, overhead


def fit_context(
    doc: Document,
    question: str,
    budget_tokens: int | None,
    tokenizer: ChatTokenizer,
) -> FittedContext:
    """Fit the cleaned document into a prompt of at most ``budget_tokens`` tokens, template included.

    The document gets what the prompt leaves (``budget - template and question``),
    filled by the budget package's query strategy: the paragraphs most relevant
    to the question, back in document order. Text joined into the template can
    tokenize a little differently at the seams, so the real prompt is counted
    and the room shrunk by the excess until it fits.
    """
    if budget_tokens is None:
        return FittedContext(render_text(doc), 0)
    room, overhead = document_room(question, budget_tokens, tokenizer)
    counter = tokenizer.tokenizer
    while True:
        if room <= 0:  # the joins took what the budget had left for the document
            raise ConfigError(
                f"budget {budget_tokens} tokens leaves no room for the document once it is joined to the chat "
                f"template and the question ({overhead} tokens without it)"
            )
        result = fit_document(doc, room, counter, strategy="query", query=question)
        fitted = render_text(result.document)
        excess = len(tokenizer.prompt_ids(build_messages(fitted, question))) - budget_tokens
        if excess <= 0:
            # The document's tokens, as fit_document counted them: no extra pass over it.
            removed = int(result.stats["tokens_in"]) - int(result.stats["tokens"])
            return FittedContext(fitted, max(0, removed), tuple(result.changes))
        room -= excess
