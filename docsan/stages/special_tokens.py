"""The ``special_tokens`` stage: neutralise control-token spellings in every block and table cell.

The guard itself (which strings are control tokens, how each is escaped) is
:mod:`docsan.budget.control_tokens`; this stage applies it to a document and
reports every occurrence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.budget.control_tokens import Action, Guard, guard_for_spec, neutralise_with
from docsan.budget.tokenizer import resolve_tokenizer_file
from docsan.model import Block, Cell, ChangeKind, Document
from docsan.render import table_text
from docsan.report import Change, ChangeCode, StageResult

ESCAPED = ChangeCode(
    "special_tokens.escaped", ChangeKind.REWRITTEN, "text spelling a control token of the served model, escaped"
)
REMOVED = ChangeCode(
    "special_tokens.removed", ChangeKind.REMOVED, "text spelling a control token of the served model, removed"
)


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True)
class SpecialTokens:
    """Pipeline stage: neutralise control-token spellings in every block and table cell."""

    name: ClassVar[str] = "special_tokens"
    # None = the default DeepSeek-V4 tokenizer; must be the tokenizer of the
    # model that will serve the prompt, since each model has its own tokens.
    tokenizer: str | None = None
    # escape keeps the text readable (a pasted chat log stays a chat log);
    # remove gives the model nothing that looks like a control token.
    action: Action = "escape"

    def __post_init__(self) -> None:
        resolve_tokenizer_file(self.tokenizer)  # a bad path fails when the pipeline is built, not per file

    def __call__(self, doc: Document) -> StageResult:
        guard = guard_for_spec(self.tokenizer)
        changes: list[Change] = []
        pages = []
        for page in doc.pages:
            blocks = [self._block(b, page.number, guard, changes) for b in page.blocks]
            same = all(a is b for a, b in zip(blocks, page.blocks, strict=True))
            pages.append(page if same else page.with_blocks(blocks))
        out = replace(doc, pages=tuple(pages)) if changes else doc
        return StageResult(out, changes, {"tokens_neutralised": len(changes)})

    def _block(self, block: Block, page: int, guard: Guard, changes: list[Change]) -> Block:
        table = block.table
        if table is None:
            text, found = neutralise_with(block.text, guard, self.action)
        else:
            # A table renders from its cells: their hits are the ones to report,
            # and the block's plain text is rebuilt from them.
            found = []
            rows = tuple(tuple(self._cell(c, guard, found) for c in row) for row in table.rows)
            table = replace(table, rows=rows)
            text = table_text(table)
        if not found:
            return block
        escaped = guard.escaped
        for token in found:
            if self.action == "remove":
                changes.append(REMOVED.change("control token removed", page, token))
            else:
                changes.append(ESCAPED.change("control token escaped", page, token, replacement=escaped[token]))
        return replace(block, text=text, table=table)

    def _cell(self, cell: Cell, guard: Guard, found: list[str]) -> Cell:
        text, hits = neutralise_with(cell.text, guard, self.action)
        found.extend(hits)
        return replace(cell, text=text) if hits else cell
