"""The ``budget`` pipeline stage: fit a document or a chat history into N tokens.

Not a default stage: ``docsan clean --budget N`` appends it (after
``special_tokens``), and a TOML ``[budget]`` table configures it.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.budget.chat_trim import fit_chat
from docsan.budget.tokenizer import Tokenizer
from docsan.budget.truncate import fit_document, resolve_strategy
from docsan.config import BudgetStrategy
from docsan.config.token_budget import BudgetTokens
from docsan.model import Document
from docsan.report import StageResult


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True)
class Budget:
    """Keep at most ``budget`` tokens (exact count with ``tokenizer``) of whole paragraphs."""

    name: ClassVar[str] = "budget"
    # Required: there is no sensible default size for a prompt. At least 1 token, as runner.budget_tokens.
    budget: BudgetTokens
    # Documents: None is "query" when a query is given, else "head" (document
    # order). Chat histories: "recent" keeps the newest older turns; anything
    # else keeps those that matter most to the query (docsan.budget.chat_trim).
    strategy: BudgetStrategy | None = None
    # The user's question, for the query strategy (BM25 over paragraphs);
    # a chat history's default query is its latest user message.
    query: str | None = None
    # None = the default DeepSeek-V4 tokenizer; set it to the served model's.
    tokenizer: str | None = None
    # The count is taken on the text as it will be rendered: the CLI sets
    # this to match --format markdown.
    markdown: bool = False
    # Likewise for the tables stage's html policy (spanned tables rendered as HTML).
    table_html: bool = False
    # Text written after the document and counted with it: the CLI ends its
    # output with a newline, and the file as written is what must fit.
    suffix: str = ""

    def __post_init__(self) -> None:
        # Fail when the pipeline is built (one error line), not once per file.
        Tokenizer.load(self.tokenizer)
        if self.strategy != "recent":  # a chat strategy: refused per document, not at build
            resolve_strategy(self.strategy, self.query)

    def __call__(self, doc: Document) -> StageResult:
        tok = Tokenizer.load(self.tokenizer)
        if doc.is_chat:
            strategy = "recent" if self.strategy == "recent" else "query"
            return fit_chat(doc, self.budget, tok, strategy=strategy, query=self.query)
        return fit_document(
            doc,
            self.budget,
            tok,
            strategy=self.strategy,
            query=self.query,
            markdown=self.markdown,
            table_html=self.table_html,
            suffix=self.suffix,
        )
