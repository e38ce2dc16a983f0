"""Turn a cleaned document into what a prompt or a file needs: text, Markdown, HTML (JSON: docsan.batch)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any, Literal

import regex

from docsan.model import Block, BlockKind, Document, Table

# What a cleaned document is written as: plain text, Markdown (headings, pipe tables), JSON with the
# structure and the report (docsan.batch.clean_output), or HTML.
OutputFormat = Literal["text", "markdown", "json", "html"]


def table_row_text(cells: Iterable[str]) -> str:
    """One table row as text, ``| a | b |``: how a table's rows read everywhere (block text, reports, Markdown).

    The outer pipes keep an empty first or last cell visible.
    """
    return "| " + " | ".join(cells) + " |"


def table_text(table: Table) -> str:
    """A table block's plain text (``Block.text``): one :func:`table_row_text` line per row, no header rule.

    Spanned positions count as empty cells, as in the Markdown rendering, so
    the text is the same whether the extractor or the tables stage built the grid.
    """
    return "\n".join(table_row_text(row) for row in table.text_rows())


def table_to_markdown(table: Table) -> str:
    """GitHub-style pipe table. A pipe inside a cell is escaped so the grid stays intact.

    A header of several rows (group names over column names) becomes one
    header line, each column named by its header cells top to bottom
    ("Pre-Pawn Handgun"), since a pipe table has one header row; a first row
    that is one cell across the whole table is its title, written above it.
    """
    rows = table.text_rows()
    if not rows:
        return ""
    width = table.n_cols

    def line(cells: list[str]) -> str:
        cells = [c.replace("\n", " ").replace("|", "\\|") for c in cells]
        return table_row_text(cells + [""] * (width - len(cells)))

    title = ""
    if table.header_rows > 1:
        title, head = _flat_header(table)
        body = rows[table.header_rows :]
    else:
        head = rows[0] if table.header_rows else [""] * width
        body = rows[1:] if table.header_rows else rows
    out = [line(head), "|" + "|".join(["---"] * width) + "|"]
    out += [line(r) for r in body]
    return (title + "\n\n" if title else "") + "\n".join(out)


def _flat_header(table: Table) -> tuple[str, list[str]]:
    """(title, one name per column) of a header of several rows; the title is "" when there is none."""
    width = table.n_cols
    # The text each header position shows: a spanned cell's own text at every position it covers.
    shown = [[""] * width for _ in range(table.header_rows)]
    for r, row in enumerate(table.rows[: table.header_rows]):
        for c, cell in enumerate(row):
            if cell.covered:
                continue
            for rr in range(r, min(r + cell.rowspan, table.header_rows)):
                for cc in range(c, min(c + cell.colspan, width)):
                    shown[rr][cc] = cell.text
    first = shown[0]
    title = first[0] if width > 1 and first[0] and all(t == first[0] for t in first) else ""
    names = []
    for c in range(width):
        parts: list[str] = []
        for r in range(1 if title else 0, table.header_rows):
            text = shown[r][c]
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        names.append(" ".join(parts))
    return title, names


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
    parts = [render_block(b, markdown=markdown, table_html=table_html) for _, b in doc.blocks()]
    return "\n\n".join(p for p in parts if p.strip())


# dumps' indent, which dumps_list repeats to nest items written on their own.
_JSON_INDENT = "  "
# A lone surrogate (from a JSON "\\ud800" escape) cannot be written as UTF-8.
_SURROGATE = regex.compile(r"[\ud800-\udfff]")


def dumps(obj: Any) -> str:
    """JSON for a file or a terminal: readable UTF-8, with lone surrogates kept as ``\\uXXXX`` escapes.

    ``ensure_ascii=False`` keeps Chinese readable but leaves a lone surrogate
    as a raw code point, which no UTF-8 writer accepts (the report of a chat
    file holding one was a traceback); written as an escape it is valid JSON
    that reads back as the same string.
    """
    text = json.dumps(obj, ensure_ascii=False, indent=_JSON_INDENT)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _SURROGATE.search(text) else text


def dumps_list(items: list[str]) -> str:
    """The JSON list of values each already written by :func:`dumps`: the text ``dumps`` gives for the list itself.

    Why: ``clean --report`` writes one list of per-document reports. Written
    item by item as the results come in, while ``--jobs`` workers still run,
    the end of the run (when every core but one is idle) only joins them:
    0.06 s for the 19 corpus files. JSON text holds a line break only between
    tokens (one inside a string is the escape ``\\n``), so indenting every
    line of an item by one level nests it as ``dumps`` would.
    """
    if not items:
        return "[]"
    pad = _JSON_INDENT
    return f"[\n{pad}" + f",\n{pad}".join(item.replace("\n", "\n" + pad) for item in items) + "\n]"


def render_html(doc: Document) -> str:
    """The cleaned document as a standalone HTML page: headings, paragraphs, tables with their spans.

    Every piece of input text is escaped, quotes included, so markup in a
    document (``<script>``, ``<img onerror=…>``) arrives as text, never as markup.
    """
    body = []
    for page in doc.pages:
        label = f' data-role="{html.escape(page.role)}"' if page.role else ""
        parts = [_block_html(b) for b in page.blocks if b.text.strip()]
        if parts:
            body.append(f'<section data-page="{page.number}"{label}>\n' + "\n".join(parts) + "\n</section>")
    title = html.escape(doc.name)
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n</head>\n<body>\n<article>\n" + "\n".join(body) + "\n</article>\n</body>\n</html>"
    )


def _block_html(block: Block) -> str:
    if block.kind is BlockKind.TABLE and block.table is not None:
        return table_to_html(block.table)
    if block.kind is BlockKind.HEADING:
        text = block.text.replace("\n", " ")
        hashes = len(text) - len(text.lstrip("#"))
        # A Markdown input's heading carries its level ("## Title"); a PDF's does not.
        marked = 0 < hashes <= 6 and text[hashes : hashes + 1] == " "
        level = hashes if marked else 2
        text = text[hashes:].strip() if marked else text
        return f"<h{level}>{html.escape(text)}</h{level}>"
    return "<p>" + "<br>\n".join(html.escape(line) for line in block.text.split("\n")) + "</p>"
