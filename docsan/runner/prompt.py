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

    A budget that passes :func:`document_room` can still be too small for every
    paragraph of this document (its pieces are whole paragraphs, or cuts of at
    least one sentence or token after its heading): then nothing of it would
    reach the model, and the answer would come from the question alone. That is
    refused like a budget the template fills (:class:`ConfigError`), naming the
    least budget that keeps some of the document, found by fitting it.
    """
    if budget_tokens is None:
        return FittedContext(render_text(doc), 0)
    _, overhead = document_room(question, budget_tokens, tokenizer)
    fitted = _fit(doc, question, budget_tokens, tokenizer, overhead)
    if (fitted is None or not fitted.text.strip()) and render_text(doc).strip():
        least = _least_budget(doc, question, budget_tokens, tokenizer, overhead)
        raise ConfigError(
            f"{doc.name}: budget {budget_tokens} tokens leaves no room for any of the document; the least that keeps "
            f"some of it is {least} (the chat template and the question: {overhead}, the joins: {SEAM_TOKENS})"
        )
    return fitted or FittedContext("", 0)


def _fit(
    doc: Document, question: str, budget_tokens: int, tokenizer: ChatTokenizer, overhead: int
) -> FittedContext | None:
    """:func:`fit_context`'s fitting; None when the joins take all the room the budget left the document."""
    room = budget_tokens - overhead - SEAM_TOKENS
    counter = tokenizer.tokenizer
    while room > 0:
        result = fit_document(doc, room, counter, strategy="query", query=question)
        fitted = render_text(result.document)
        excess = len(tokenizer.prompt_ids(build_messages(fitted, question))) - budget_tokens
        if excess <= 0:
            # The document's tokens, as fit_document counted them: no extra pass over it.
            removed = int(result.stats["tokens_in"]) - int(result.stats["tokens"])
            return FittedContext(fitted, max(0, removed), tuple(result.changes))
        room -= excess
    return None


def _least_budget(doc: Document, question: str, failed: int, tokenizer: ChatTokenizer, overhead: int) -> int:
    """The least budget above ``failed`` whose fit keeps some of ``doc``'s text: steps doubling, then halving.

    Found by fitting, not estimated from paragraph counts: which pieces a budget
    keeps depends on the cut rules and the joins. The answer is exact where it
    stops (it keeps text, one token less does not); it costs about twice the
    log2 of the distance in fits, and only on this error path.
    """

    def keeps(budget: int) -> bool:
        fitted = _fit(doc, question, budget, tokenizer, overhead)
        return fitted is not None and bool(fitted.text.strip())

    lo, step = failed, 1
    while not keeps(lo + step):  # the whole document fits at some budget, so this ends
        lo, step = lo + step, step * 2
    hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if keeps(mid) else (mid, hi)
    return hi
