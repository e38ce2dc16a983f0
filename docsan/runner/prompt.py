"""The prompt `docsan ask` sends: messages, their exact token count, and fitting the document into a budget.

Counting uses the served model's own tokenizer with its chat template applied
(``add_generation_prompt=True``), so the count includes the template's special
tokens and is exactly the token sequence the local engines receive.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from docsan.model import Document
from docsan.render import render_text
from docsan.runner.errors import RunnerError

Messages = list[dict[str, str]]


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


class ChatTokenizer:
    """The served model's tokenizer (Hugging Face folder) with its chat template."""

    def __init__(self, hf_tokenizer: Any, name: str) -> None:
        if not getattr(hf_tokenizer, "chat_template", None):
            raise RunnerError(f"{name}: the tokenizer has no chat template; cannot build a chat prompt")
        self._tok = hf_tokenizer
        self.name = name

    @classmethod
    def load(cls, model_dir: str | Path) -> ChatTokenizer:
        return _load(str(model_dir))

    def prompt_ids(self, messages: Messages) -> list[int]:
        """Token ids of the full prompt: chat template, special tokens and the assistant header."""
        return list(
            self._tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        )

    def count(self, text: str) -> int:
        """Tokens of plain text, without special tokens."""
        return len(self._tok(text, add_special_tokens=False)["input_ids"])

    def count_batch(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(ids) for ids in self._tok(texts, add_special_tokens=False)["input_ids"]]

    def head(self, text: str, n_tokens: int) -> str:
        """The first ``n_tokens`` tokens of ``text``, decoded."""
        ids = self._tok(text, add_special_tokens=False)["input_ids"][: max(0, n_tokens)]
        return str(self._tok.decode(ids))


@lru_cache(maxsize=4)
def _load(model_dir: str) -> ChatTokenizer:
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise RunnerError("counting prompt tokens needs transformers (the 'engine' extra)") from None
    try:
        return ChatTokenizer(AutoTokenizer.from_pretrained(model_dir), Path(model_dir).name)
    except OSError as err:
        raise RunnerError(f"{model_dir}: cannot load the tokenizer: {err}") from None


@dataclass(frozen=True, slots=True)
class FittedContext:
    text: str
    # Document tokens removed to meet the budget (0 when everything fitted).
    tokens_removed: int


def fit_context(doc: Document, question: str, budget_tokens: int | None, tokenizer: ChatTokenizer) -> FittedContext:
    """Fit the cleaned document into a prompt of at most ``budget_tokens`` tokens (template included).

    SEAM: this is where the budget package's query-aware ``fit_document`` plugs in. Until it
    is wired, this keeps whole paragraphs from the start of the document (head truncation)
    and cuts the first paragraph that does not fit at a token boundary.
    """
    text = render_text(doc)
    if budget_tokens is None:
        return FittedContext(text, 0)
    overhead = len(tokenizer.prompt_ids(build_messages("", question)))
    room = budget_tokens - overhead
    if room <= 0:
        raise RunnerError(
            f"budget {budget_tokens} tokens is smaller than the prompt without the document ({overhead} tokens)"
        )
    paragraphs = text.split("\n\n")
    counts = tokenizer.count_batch(paragraphs)
    total = tokenizer.count(text)
    kept: list[str] = []
    used = 0
    for para, n in zip(paragraphs, counts, strict=True):
        if used + n > room:
            if not kept:  # the first paragraph alone is too long: keep its head
                kept.append(tokenizer.head(para, room))
            break
        kept.append(para)
        used += n + 1  # the blank line joining paragraphs is about one token
    # Per-paragraph counts can differ slightly from the joined text's; drop paragraphs until the real prompt fits.
    while len(kept) > 1 and len(tokenizer.prompt_ids(build_messages("\n\n".join(kept), question))) > budget_tokens:
        kept.pop()
    fitted = "\n\n".join(kept)
    return FittedContext(fitted, max(0, total - tokenizer.count(fitted)))
