"""The prompt `docsan ask` sends: messages, their exact token count, and fitting the document into a budget.

Counting uses the served model's own tokenizer with its chat template applied
(``add_generation_prompt=True``), so the count includes the template's special
tokens and is exactly the token sequence the local engines receive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from docsan.budget import Tokenizer, fit_document
from docsan.model import Document
from docsan.render import render_text
from docsan.report import Change, StageResult
from docsan.runner.errors import RunnerError
from docsan.stages.special_tokens import SpecialTokens

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

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """Token ids of the full prompt: chat template, special tokens and the assistant header.

        ``messages`` in any OpenAI shape; they reach the template as vLLM
        passes them (:func:`template_messages`).
        """
        return list(
            self._tok.apply_chat_template(
                template_messages(messages), add_generation_prompt=True, tokenize=True, return_dict=False
            )
        )

    def count_messages(self, messages: list[dict[str, Any]]) -> int:
        """The exact prompt length of ``messages``: a ``count_messages`` for :func:`docsan.budget.fit_messages`."""
        return len(self.prompt_ids(messages))

    def count(self, text: str) -> int:
        """Tokens of plain text, without special tokens."""
        return len(self._tok(text, add_special_tokens=False)["input_ids"])


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages as vLLM hands them to a text model's chat template ("string" content format).

    Content parts become their texts joined by a newline, a null content the
    empty string, and tool-call arguments (a JSON string in the OpenAI form)
    a dict, as transformers' tool-use templates expect (vLLM's
    ``_parse_chat_message_content`` and ``_postprocess_messages``). Plain
    ``{"role", "content": str}`` messages pass through unchanged.
    """
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str) and not m.get("tool_calls"):
            out.append(m)
            continue
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        converted = {**m, "content": content or ""}
        if m.get("tool_calls"):
            converted["tool_calls"] = [_call_with_dict_arguments(c) for c in m["tool_calls"]]
        out.append(converted)
    return out


def _call_with_dict_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return call  # vLLM leaves arguments it cannot parse as they are
        return {**call, "function": {**function, "arguments": arguments}}
    return call


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


def guard_special_tokens(doc: Document, model_dir: str | Path) -> StageResult:
    """Escape text that would encode as the served model's control tokens (``<|im_start|>``…).

    vLLM turns such text into real control tokens; a document could otherwise
    close the user turn and speak as the assistant.
    """
    return SpecialTokens(tokenizer=str(model_dir))(doc)


def fit_context(
    doc: Document,
    question: str,
    budget_tokens: int | None,
    tokenizer: ChatTokenizer,
    model_dir: str | Path,
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
    overhead = len(tokenizer.prompt_ids(build_messages("", question)))
    # The seams usually cost a token or two: leaving them from the start saves
    # a second fit (each fit tokenizes the whole document once).
    room = budget_tokens - overhead - SEAM_TOKENS
    counter = Tokenizer.load(model_dir)
    while True:
        if room <= 0:
            raise RunnerError(
                f"budget {budget_tokens} tokens is smaller than the prompt without the document ({overhead} tokens)"
            )
        result = fit_document(doc, room, counter, strategy="query", query=question)
        fitted = render_text(result.document)
        excess = len(tokenizer.prompt_ids(build_messages(fitted, question))) - budget_tokens
        if excess <= 0:
            # The document's tokens, as fit_document counted them: no extra pass over it.
            removed = int(result.stats["tokens_in"]) - int(result.stats["tokens"])
            return FittedContext(fitted, max(0, removed), tuple(result.changes))
        room -= excess
