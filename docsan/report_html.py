"""The audit as a page people read: ``docsan clean --html-report FILE``.

One self-contained HTML file (no network, no CDN: inline CSS and a few lines
of plain JavaScript) for one document or a batch, with an index. For each
page, the extracted text beside the cleaned text; every removal highlighted
in the original and labelled with its stage and reason (hover, or the
legend's switches per stage); hidden characters shown as badges
(``U+202E``); per-stage token bars; the extraction notes.

Where a removal is in the original is found by searching the text the stage
recorded; later stages saw text earlier ones had changed, so the search
ignores whitespace and invisible characters. A change that still cannot be
placed is listed under its page, never dropped.
"""

from __future__ import annotations

import difflib
import html
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import regex

from docsan.model import ChangeKind, Document, Page
from docsan.pipeline import CleanResult
from docsan.render import render_block
from docsan.report import Change

# One colour per stage, in pipeline order; a stage not listed gets a hue from its name.
STAGE_COLOURS = {
    "extract": "#9e9e9e",
    "normalize": "#e53935",
    "furniture": "#8e24aa",
    "tables": "#3949ab",
    "repeats": "#fb8c00",
    "reflow": "#00897b",
    "neardup": "#c0ca33",
    "special_tokens": "#d81b60",
    "budget": "#6d4c41",
}
# Longer rewrites are marked whole instead of diffed: difflib is quadratic at worst.
MAX_DIFF_CHARS = 20_000
_CODEPOINT = regex.compile(r"U\+([0-9A-F]{4,6})")


def is_hidden(ch: str) -> bool:
    """A character a reader cannot see: format (Cf), control (Cc) other than line breaks, private use, unassigned."""
    if ch in "\n\t":
        return False
    return unicodedata.category(ch) in ("Cf", "Cc", "Co", "Cn") or ch == "\ufffd"


def colour(stage: str) -> str:
    if stage in STAGE_COLOURS:
        return STAGE_COLOURS[stage]
    return f"hsl({sum(map(ord, stage)) * 47 % 360}, 60%, 45%)"


@dataclass(frozen=True, slots=True)
class _Placed:
    """Character spans of one page's original text that a change removed or rewrote."""

    change: Change
    spans: list[tuple[int, int]]


def _removed_spans(change: Change) -> list[tuple[int, int]]:
    """Spans of ``change.text`` that the change removed or replaced (the whole text for a removal)."""
    old, new = change.text, change.replacement
    if not new:
        return [(0, len(old))]
    if len(old) > MAX_DIFF_CHARS:
        return [(0, len(old))]
    ops = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    spans = [(i1, i2) for tag, i1, i2, _, _ in ops if tag in ("delete", "replace") and i2 > i1]
    # A change naming the code points it removed (normalize) marks only those, so that
    # each character class of one block gets its own label.
    named = {chr(int(h, 16)) for h in _CODEPOINT.findall(change.reason)}
    if named:
        spans = [(i, i + 1) for a, b in spans for i in range(a, b) if old[i] in named]
    return spans


def _skeleton(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace and hidden characters, and the original index of each kept character."""
    keep = [i for i, ch in enumerate(text) if not ch.isspace() and not is_hidden(ch)]
    return "".join(text[i] for i in keep), keep


def _find(text: str, needle: str, taken: list[bool]) -> int:
    """Where ``needle`` stands in ``text``: a whole-line occurrence not yet marked first, then any free one.

    A running footer's words may also occur in the body; the footer is the line that is nothing else.
    """
    hits, at = [], text.find(needle)
    while at >= 0 and len(hits) < 64:
        hits.append(at)
        at = text.find(needle, at + 1)
    if not hits:
        return -1

    def whole_line(i: int) -> bool:
        end = i + len(needle)
        return (i == 0 or text[i - 1] == "\n") and (end == len(text) or text[end] == "\n")

    def free(i: int) -> bool:
        return not any(taken[i : i + len(needle)])

    for ok in (lambda i: whole_line(i) and free(i), free, whole_line):
        for i in hits:
            if ok(i):
                return i
    return hits[0]


def _place(page_text: str, changes: Sequence[Change]) -> tuple[list[_Placed], list[Change], int]:
    """Find each change in the page's original text: the placed ones, the ones not found, and the layout-only count.

    A rewrite that only changed whitespace (lines joined, spaces between CJK
    characters, paragraph breaks) removed nothing a reader sees: it is counted, not highlighted.
    """
    placed, lost, layout = [], [], 0
    taken = [False] * len(page_text)
    skeleton, index = _skeleton(page_text)
    for change in changes:
        spans = _removed_spans(change)
        if not spans:
            continue
        if change.replacement and all(change.text[a:b].isspace() for a, b in spans):
            layout += 1
            continue
        at = _find(page_text, change.text, taken)
        if at >= 0:
            out = [(at + a, at + b) for a, b in spans]
        else:
            probe, probe_index = _skeleton(change.text)
            k = skeleton.find(probe) if probe else -1
            # Each removed span maps through the skeletons: its first and last visible character.
            out = []
            for a, b in spans if k >= 0 else []:
                first, last = bisect_left(probe_index, a), bisect_left(probe_index, b) - 1
                if first <= last:
                    out.append((index[k + first], index[k + last] + 1))
        if not out:
            lost.append(change)
            continue
        for a, b in out:
            taken[a:b] = [True] * (b - a)
        placed.append(_Placed(change, out))
    return placed, lost, layout


def _page_original(page: Page) -> str:
    return "\n\n".join(b.text for b in page.blocks if b.text)


def _page_cleaned(page: Page) -> str:
    parts = [render_block(b) for b in page.blocks]
    return "\n\n".join(p for p in parts if p.strip())


def _char_html(ch: str) -> str:
    if is_hidden(ch):
        name = unicodedata.name(ch, "unnamed character")
        return f'<span class="badge" title="{html.escape(name)}">U+{ord(ch):04X}</span>'
    return html.escape(ch)


def _marked(text: str, placed: list[_Placed], ids: dict[int, str]) -> str:
    """The original text with each removal wrapped in a labelled ``<mark>``; earlier stages win overlaps."""
    owner: list[int] = [-1] * len(text)
    for n, p in enumerate(placed):
        for a, b in p.spans:
            for i in range(a, min(b, len(text))):
                if owner[i] < 0:
                    owner[i] = n
    out: list[str] = []
    i = 0
    while i < len(text):
        n = owner[i]
        j = i
        while j < len(text) and owner[j] == n:
            j += 1
        body = "".join(_char_html(ch) for ch in text[i:j])
        if n < 0:
            out.append(body)
        else:
            c = placed[n].change
            label = html.escape(f"{c.stage}: {c.reason} [{c.code}]", quote=True)
            out.append(
                f'<mark class="rm" data-stage="{html.escape(c.stage)}" data-code="{html.escape(c.code)}" '
                f'data-change="{ids[n]}" '
                f'style="--c:{colour(c.stage)}" title="{label}">{body}</mark>'
            )
        i = j
    return "".join(out)


def _token_bars(result: CleanResult) -> str:
    rows = [s for s in result.report.stages if s.tokens_before is not None and s.tokens_after is not None]
    if not rows:
        return ""
    top = max(s.tokens_before or 0 for s in rows) or 1
    out = ['<table class="bars"><tr><th>stage</th><th>tokens before → after</th><th>removed</th><th></th></tr>']
    for s in rows:
        before, after = s.tokens_before or 0, s.tokens_after or 0
        kept_w, gone_w = 100 * after / top, 100 * max(before - after, 0) / top
        out.append(
            f'<tr data-stage="{html.escape(s.stage)}"><td>{html.escape(s.stage)}</td><td>{before:,} → {after:,}</td>'
            f"<td>{before - after:,}</td>"
            f'<td class="bar"><span class="kept" style="width:{kept_w:.2f}%"></span>'
            f'<span class="gone" style="width:{gone_w:.2f}%;background:{colour(s.stage)}"></span></td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def _notes(result: CleanResult) -> str:
    """The extraction's notes, the pages OCR read, and what the extraction left out, with its text.

    What the extraction dropped (hidden or white text, a text layer set
    aside for OCR) never reached the extracted pages, so it is listed here
    rather than highlighted in them.
    """
    items = [html.escape(n) for n in result.report.notes]
    ocr = [p.number for p in result.original.pages if p.ocr]
    if ocr:
        items.insert(0, f"pages read by OCR: {', '.join(map(str, ocr))}")
    for c in result.report.extraction:
        shown = "".join(_char_html(ch) for ch in c.text[:500])
        items.append(
            f'<span class="swatch" style="background:{colour(c.stage)}"></span>page {c.page}: '
            f"{html.escape(c.reason)} <code>{html.escape(c.code)}</code>: <q>{shown}</q>"
        )
    if not items:
        return '<p class="none">No extraction notes.</p>'
    return '<ul class="notes">' + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def _document_section(result: CleanResult, n: int) -> str:
    doc: Document = result.document
    # The stages' changes are found in the pages; findings changed nothing, the extraction's are notes.
    by_page: dict[int, list[Change]] = {}
    for c in (c for s in result.report.stages for c in s.changes):
        if c.kind is not ChangeKind.FINDING:
            by_page.setdefault(c.page, []).append(c)
    findings = [c for c in result.report.changes if c.kind is ChangeKind.FINDING]
    cleaned = {p.number: p for p in doc.pages}
    pages = []
    total_lost = 0
    for page in result.original.pages:
        text = _page_original(page)
        placed, lost, layout = _place(text, by_page.get(page.number, []))
        total_lost += len(lost)
        ids = {k: f"d{n}-p{page.number}-c{k}" for k in range(len(placed))}
        after = cleaned.get(page.number)
        lost_html = ""
        if lost:
            items = "".join(
                f'<li data-stage="{html.escape(c.stage)}"><b style="color:{colour(c.stage)}">{html.escape(c.stage)}</b>'
                f": {html.escape(c.reason)}: <q>{''.join(_char_html(ch) for ch in c.text[:500])}</q></li>"
                for c in lost
            )
            lost_html = (
                f'<details class="lost"><summary>{len(lost)} change(s) not placed in the text</summary>'
                f"<ul>{items}</ul></details>"
            )
        if layout:
            lost_html += f'<p class="none">{layout} layout change(s) (lines joined, spacing) not highlighted.</p>'
        label = f"page {page.number}" + (f" · {html.escape(page.role)}" if page.role else "")
        label += " · OCR" if page.ocr else ""
        pages.append(
            f'<section class="page" id="d{n}-p{page.number}"><h3>{label}</h3>'
            f'<div class="cols"><div class="col orig"><h4>original</h4><pre>{_marked(text, placed, ids)}</pre></div>'
            f'<div class="col clean"><h4>cleaned</h4><pre>{html.escape(_page_cleaned(after) if after else "")}</pre>'
            f"</div></div>{lost_html}</section>"
        )
    counts: dict[str, int] = {}
    for c in result.report.changes:
        counts[c.stage] = counts.get(c.stage, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"
    bars = _token_bars(result) or '<p class="none">Not counted.</p>'
    return (
        f'<article class="doc" id="d{n}"><h2>{html.escape(doc.name)}</h2>'
        f'<p class="meta">{len(result.original.pages)} page(s) · changes: {html.escape(summary)}'
        f"{f' · {total_lost} not placed' if total_lost else ''}</p>"
        f"<h3>Extraction notes</h3>{_notes(result)}{_findings(findings)}"
        f"<h3>Tokens per stage</h3>{bars}" + "".join(pages) + "</article>"
    )


def _findings(findings: list[Change]) -> str:
    """What a stage noticed but did not change (a table left as the extractor gave it)."""
    if not findings:
        return ""
    items = "".join(
        f"<li>page {c.page}: {html.escape(c.reason)} <code>{html.escape(c.code)}</code></li>" for c in findings
    )
    return f'<h3>Findings (nothing changed)</h3><ul class="findings">{items}</ul>'


def _legend(results: Sequence[CleanResult]) -> str:
    stages = list(dict.fromkeys(c.stage for r in results for c in r.report.changes))
    if not stages:
        return '<p class="none">Nothing was removed or changed.</p>'
    items = "".join(
        f'<label><input type="checkbox" checked data-toggle="{html.escape(s)}">'
        f'<span class="swatch" style="background:{colour(s)}"></span>{html.escape(s)}</label>'
        for s in stages
    )
    return f'<div class="legend">{items}</div>'


def _index(results: Sequence[CleanResult]) -> str:
    if len(results) < 2:
        return ""
    rows = "".join(
        f'<tr><td><a href="#d{n}">{html.escape(r.document.name)}</a></td><td>{len(r.original.pages)}</td>'
        f"<td>{len(r.report.changes)}</td></tr>"
        for n, r in enumerate(results)
    )
    return (
        f'<nav class="index"><h2>Documents</h2><table><tr><th>file</th><th>pages</th><th>changes</th></tr>'
        f"{rows}</table></nav>"
    )


@cache
def _asset(name: str) -> str:
    """The style sheet or script (docsan/assets/), inlined so that the page is one self-contained file."""
    return (files("docsan") / "assets" / name).read_text(encoding="utf-8")


def render_report_html(results: Sequence[CleanResult], title: str = "docsan report") -> str:
    """The report page for ``results`` (one or more cleaned inputs)."""
    body = "".join(_document_section(r, n) for n, r in enumerate(results))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{_legend(results)}{_index(results)}{body}"
        f'<div id="detail" role="status"></div><script>{_asset("report.js")}</script></body></html>\n'
    )
