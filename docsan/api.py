"""The library entry points: clean a file, a string, an already extracted document, or a chat request."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsan.budget.chat_trim import ChatStrategy, CountMessages, fit_chat
from docsan.budget.tokenizer import Tokenizer
from docsan.chat.shape import render_chat
from docsan.config import Config
from docsan.extract import load
from docsan.extract.chat import chat_request, request_document
from docsan.extract.text import text_document
from docsan.model import ChatRequest, Document
from docsan.pipeline import CleanResult, Pipeline
from docsan.report import Report, StageReport


def clean_document(doc: Document, config: Config | None = None) -> CleanResult:
    """Run the configured stages over ``doc``; ``doc`` itself is left untouched."""
    return Pipeline.from_config(config or Config()).run(doc)


def clean_file(path: str | Path, config: Config | None = None) -> CleanResult:
    """Extract ``path`` (PDF, text, Markdown, chat JSON; ``"-"`` for stdin) and clean it.

    Raises :class:`docsan.errors.InputError` when the file cannot be read.
    """
    config = config or Config()
    return clean_document(load(path, config.extract), config)


def clean_text(text: str, config: Config | None = None, *, name: str = "<text>") -> CleanResult:
    """Clean a string as a plain-text document (form feeds are page breaks)."""
    # A str can hold lone surrogates (from JSON escapes, say) that UTF-8
    # cannot encode: they arrive as U+FFFD, which normalize removes and reports.
    data = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    return clean_document(text_document(data, name, (config or Config()).extract), config)


@dataclass(slots=True)
class ChatResult:
    """The outcome of cleaning one chat request.

    ``request`` has the shape that was given (the request object with every
    field, or the bare list) with the cleaned ``messages``; ``messages`` is
    that list; ``document`` the cleaned chat document (one page per kept
    message, ``page.number`` its position in the input); ``report`` every
    change, the budget's included; ``tokens`` is ``count_messages`` of
    ``messages`` when a budget was applied, else None.
    """

    original: ChatRequest
    document: Document
    request: list[dict[str, Any]] | dict[str, Any]
    messages: list[dict[str, Any]]
    report: Report
    tokens: int | None


class ChatCleaner:
    """Cleans chat requests with one configuration; build it once, call :meth:`clean` per request.

    ``config.stages`` run on the messages (a ``budget`` stage there is left
    out: :meth:`clean`'s ``budget`` trims with the caller's own count).
    ``tokenizer`` (a :class:`~docsan.budget.Tokenizer` or its path; default
    DeepSeek-V4) counts when no ``count_messages`` is given and cuts text.
    """

    def __init__(self, config: Config | None = None, *, tokenizer: Tokenizer | str | None = None) -> None:
        config = config or Config()
        self.pipeline = Pipeline.from_config(config.with_overrides(stages=[s for s in config.stages if s != "budget"]))
        self._tokenizer = tokenizer

    @property
    def tokenizer(self) -> Tokenizer:
        if not isinstance(self._tokenizer, Tokenizer):
            self._tokenizer = Tokenizer.load(self._tokenizer)
        return self._tokenizer

    def clean(
        self,
        request: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        budget: int | None = None,
        count_messages: CountMessages | None = None,
        strategy: ChatStrategy | None = None,
        query: str | None = None,
        name: str = "<request>",
    ) -> ChatResult:
        """Sanitize ``request`` (an OpenAI request dict or its messages list), then trim it to ``budget`` tokens.

        Raises :class:`~docsan.errors.InputError` (naming ``name``) for a
        request that is not a chat history or whose latest turn has nothing
        left after cleaning, :class:`~docsan.errors.ConfigError` for a budget
        too small for its system messages and latest turn.
        """
        original = chat_request(request, name)
        result = self.pipeline.run(request_document(original, name))
        doc, report, tokens = result.document, result.report, None
        if budget is not None:
            t0 = time.perf_counter()
            fitted = fit_chat(
                doc, budget, self.tokenizer, count_messages=count_messages, strategy=strategy, query=query
            )
            seconds = time.perf_counter() - t0
            report.stages.append(
                StageReport("budget", len(doc.text), len(fitted.document.text), seconds, fitted.stats, fitted.changes)
            )
            doc = fitted.document
            tokens = int(fitted.stats["tokens"])
        out = render_chat(doc)
        messages = out["messages"] if isinstance(out, dict) else out
        return ChatResult(original, doc, out, messages, report, tokens)


def clean_chat(
    request: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    config: Config | None = None,
    **options: Any,
) -> ChatResult:
    """``ChatCleaner(config).clean(request, **options)``: for one request; a server keeps one ChatCleaner."""
    return ChatCleaner(config).clean(request, **options)
