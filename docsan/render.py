"""Turn a cleaned document into what a prompt or a file needs: text, Markdown, JSON."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from docsan.extract.chat import TEXT_PART, message_page
from docsan.model import Block, BlockKind, Document, Page, Table


def table_to_markdown(table: Table) -> str:
    """GitHub-style pipe table. A pipe inside a cell is escaped so the grid stays intact."""
    rows = table.text_rows()
    if not rows:
        return ""
    width = table.n_cols

    def line(cells: list[str]) -> str:
        cells = [c.replace("\n", " ").replace("|", "\\|") for c in cells]
        cells += [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    head = rows[0] if table.header_rows else [""] * width
    body = rows[1:] if table.header_rows else rows
    out = [line(head), "|" + "|".join(["---"] * width) + "|"]
    out += [line(r) for r in body]
    return "\n".join(out)


def table_to_html(table: Table) -> str:
    """HTML table with rowspan/colspan, for spans that a pipe table cannot show."""
    out = ["<table>"]
    for i, row in enumerate(table.rows):
        tag = "th" if i < table.header_rows else "td"
        cells = []
        for cell in row:
            if cell.covered:
                continue
            attrs = ""
            if cell.rowspan > 1:
                attrs += f' rowspan="{cell.rowspan}"'
            if cell.colspan > 1:
                attrs += f' colspan="{cell.colspan}"'
            cells.append(f"<{tag}{attrs}>{html.escape(cell.text)}</{tag}>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _has_spans(table: Table) -> bool:
    return any(c.covered for r in table.rows for c in r)


def render_block(block: Block, *, markdown: bool = False, table_html: bool = False) -> str:
    if block.kind is BlockKind.TABLE and block.table is not None:
        if table_html and _has_spans(block.table):
            return table_to_html(block.table)
        return table_to_markdown(block.table)
    if markdown and block.kind is BlockKind.HEADING:
        line = block.text.replace("\n", " ")
        # A Markdown input's heading already carries its level.
        return line if line.startswith("#") else "## " + line
    return block.text


def render_text(doc: Document, *, markdown: bool = False, table_html: bool = False) -> str:
    """Blocks separated by blank lines; pages too (a page break is just a paragraph break)."""
    parts = [
        render_block(b, markdown=markdown, table_html=table_html)
        for _, b in doc.blocks()
        if b.kind is not BlockKind.FURNITURE
    ]
    return "\n\n".join(p for p in parts if p.strip())


def render_messages(doc: Document) -> list[dict[str, Any]]:
    """A chat document back to its ``messages``: each kept message in the shape it came in, only its text cleaned.

    A message no stage touched is the very dict that was given, so its bytes
    (and the engine's prefix cache) do not change. A document built without
    its request (``doc.chat`` None) gives plain ``{"role", "content"}`` messages.
    """
    if doc.chat is None:
        return [{"role": page.role or "user", "content": _part_texts(page).get(None, "")} for page in doc.pages]
    out: list[dict[str, Any]] = []
    for page in doc.pages:
        original = doc.chat.messages[page.number - 1]
        if page == message_page(original, page.number):
            out.append(original)
        else:
            out.append(with_texts(original, _part_texts(page)))
    return out


def render_chat(doc: Document) -> list[dict[str, Any]] | dict[str, Any]:
    """The whole request back: its other fields (``model``, ``max_tokens``...) in their order, or the bare list."""
    messages = render_messages(doc)
    if doc.chat is None or doc.chat.fields is None:
        return messages
    return {key: (messages if key == "messages" else value) for key, value in doc.chat.fields.items()}


def _part_texts(page: Page) -> dict[int | None, str]:
    """The page's text per content part (None: string content), blocks joined as render_text joins them."""
    texts: dict[int | None, list[str]] = {}
    for block in page.blocks:
        text = render_block(block)
        if text.strip():
            texts.setdefault(block.part, []).append(text)
    return {part: "\n\n".join(t) for part, t in texts.items()}


def with_texts(message: Mapping[str, Any], texts: Mapping[int | None, str]) -> dict[str, Any]:
    """A copy of ``message`` with its text replaced: ``texts[None]`` for string content, ``texts[i]`` for part i.

    A text part left without text is taken out of the list (its image or
    other parts stay). A message with ``tool_calls`` whose text all went gets
    ``content: null``, OpenAI's form for a pure tool call, never ``""``.
    """
    content = message.get("content")
    new: Any
    if isinstance(content, list):
        new = []
        for i, part in enumerate(content):
            if isinstance(part, dict) and part.get("type") == TEXT_PART and isinstance(part.get("text"), str):
                text = texts.get(i, "")
                if text:
                    new.append(part if text == part["text"] else {**part, "text": text})
            else:
                new.append(part)
    else:
        new = texts.get(None, "")
    if not new and message.get("tool_calls"):
        new = None
    return {**message, "content": new}


def render_json(doc: Document, report: dict[str, Any] | None = None) -> str:
    payload: dict[str, Any] = {"source": doc.name, "kind": str(doc.kind)}
    if doc.is_chat:
        payload["messages"] = render_messages(doc)
    else:
        payload["text"] = render_text(doc)
    if report is not None:
        payload["report"] = report
    return json.dumps(payload, ensure_ascii=False, indent=2)
