"""The ``special_tokens`` stage: neutralise control-token spellings in every block and table cell.

The guard itself (which strings are control tokens, how each is escaped) is
:mod:`docsan.budget.control_tokens`; this stage applies it to a document and
reports every occurrence. A chat document's request is guarded too, in what
the template renders beside the text: each message's ``name`` and
``tool_calls`` (their arguments kept valid JSON) and the request's ``tools``
(:mod:`docsan.budget.control_fields`). ``docsan clean`` on a chat file and
the gateway run this one stage, so both escape the same strings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar

from pydantic import ConfigDict, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from docsan.budget.control_fields import neutralise_json, neutralise_message_fields
from docsan.budget.control_tokens import DEFAULT_FAMILIES, Action, Guard, guard_for_spec, neutralise_with
from docsan.budget.template_markers import check_families
from docsan.budget.tokenizer import resolve_tokenizer_file
from docsan.model import Block, Cell, ChangeKind, ChatRequest, Document, Page
from docsan.render import table_text
from docsan.report import Change, ChangeCode, StageResult

ESCAPED = ChangeCode(
    "special_tokens.escaped",
    ChangeKind.REWRITTEN,
    "text spelling a control token of the served model or a well-known chat template, escaped",
)
REMOVED = ChangeCode(
    "special_tokens.removed",
    ChangeKind.REMOVED,
    "text spelling a control token of the served model or a well-known chat template, removed",
)


def token_changes(found: list[str], page: int, guard: Guard, action: Action, where: str = "") -> list[Change]:
    """One change per control-token spelling found; the reason names a template marker's family and, when
    the text was not a message's text, the request field (``where``) it was in."""
    at = f" in {where}" if where else ""
    out = []
    for token in found:
        family = guard.families.get(token)
        what = f"{family} control token" if family else "control token"
        if action == "remove":
            out.append(REMOVED.change(f"{what} removed{at}", page, token))
        else:
            out.append(ESCAPED.change(f"{what} escaped{at}", page, token, replacement=guard.escaped[token]))
    return out


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
    # The chat templates whose control markers are guarded beside the tokenizer's own (the table in
    # docsan/budget/template_markers.py): a cleaned text can reach another model than the tokenizer's.
    # Empty: the tokenizer's own tokens only.
    template_markers: tuple[str, ...] = DEFAULT_FAMILIES

    @field_validator("template_markers")
    @classmethod
    def _known_families(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return check_families(value)

    def __post_init__(self) -> None:
        resolve_tokenizer_file(self.tokenizer)  # a bad path fails when the pipeline is built, not per file

    @property
    def guard(self) -> Guard:
        """The guard this stage applies (the gateway guards a request's ``tools`` and a question with it too)."""
        return guard_for_spec(self.tokenizer, self.template_markers)

    def __call__(self, doc: Document) -> StageResult:
        guard = self.guard
        changes: list[Change] = []
        pages = []
        for page in doc.pages:
            if not guard.may_match("".join(_searched_texts(page))):
                # Nothing on the page holds a token's first character, so no block would change: one test
                # of the page's text, not a call per block and per table cell (a table has hundreds).
                pages.append(page)
                continue
            blocks = [self._block(b, page.number, guard, changes) for b in page.blocks]
            same = all(a is b for a, b in zip(blocks, page.blocks, strict=True))
            pages.append(page if same else page.with_blocks(blocks))
        out = replace(doc, pages=tuple(pages)) if changes else doc
        if doc.chat is not None:
            chat = self._request(doc, guard, changes)
            if chat is not doc.chat:
                out = replace(out, chat=chat)
        return StageResult(out, changes, {"tokens_neutralised": len(changes)})

    def _request(self, doc: Document, guard: Guard, changes: list[Change]) -> ChatRequest:
        """The chat request with its kept messages' other fields and its ``tools`` guarded (page 0: the request)."""
        assert doc.chat is not None
        messages = list(doc.chat.messages)
        for page in doc.pages:
            messages[page.number - 1], found = neutralise_message_fields(messages[page.number - 1], guard, self.action)
            for key, token in found:
                self._record([token], page.number, guard, changes, key)
        fields = doc.chat.fields
        if fields is not None and "tools" in fields:
            tools, found_in_tools = self.neutralise_value(fields["tools"], 0, "tools")
            changes.extend(found_in_tools)
            if found_in_tools:
                fields = {**fields, "tools": tools}
        same = fields is doc.chat.fields and all(a is b for a, b in zip(messages, doc.chat.messages, strict=True))
        return doc.chat if same else ChatRequest(tuple(messages), fields)

    def neutralise_value(self, value: Any, page: int, where: str) -> tuple[Any, list[Change]]:
        """A JSON value from outside the messages (the request's ``tools``, ``docsan ask``'s question) guarded
        as this stage guards a document, with its changes; ``value`` itself when nothing was found."""
        guard = self.guard
        clean, found = neutralise_json(value, guard, self.action)
        return clean, token_changes(found, page, guard, self.action, where)

    def _record(self, found: list[str], page: int, guard: Guard, changes: list[Change], where: str = "") -> None:
        changes.extend(token_changes(found, page, guard, self.action, where))

    def _block(self, block: Block, page: int, guard: Guard, changes: list[Change]) -> Block:
        table = block.table
        if table is None:
            text, found = neutralise_with(block.text, guard, self.action)
        else:
            # A table renders from its cells: their hits are the ones to report,
            # and the block's plain text is rebuilt from them.
            found = []
            rows = tuple(tuple(self._cell(c, guard, found) for c in row) for row in table.rows)
            if not found:
                return block
            table = replace(table, rows=rows)
            text = table_text(table)
        if not found:
            return block
        self._record(found, page, guard, changes)
        return replace(block, text=text, table=table)

    def _cell(self, cell: Cell, guard: Guard, found: list[str]) -> Cell:
        text, hits = neutralise_with(cell.text, guard, self.action)
        found.extend(hits)
        return replace(cell, text=text) if hits else cell


def _searched_texts(page: Page) -> Iterator[str]:
    """The texts of a page that :meth:`SpecialTokens._block` searches: each text block's, each table's cells'."""
    for block in page.blocks:
        if block.table is None:
            yield block.text
        else:
            yield from (cell.text for row in block.table.rows for cell in row)
