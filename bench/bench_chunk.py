"""Chunking the cleaned corpus: docsan's chunker against LangChain's RecursiveCharacterTextSplitter and Docling's
HybridChunker.

All three get the same cleaned documents of every born-digital corpus file and
the same limit, counted with the same tokenizer (DeepSeek-V4): LangChain's
splitter with ``length_function`` set to the exact count, so it is not
handicapped by a character estimate; Docling's chunker with that tokenizer
file and its tables as Markdown with the header repeated (it runs in its own
venv, .venv-docling/, built by bench/setup_docling.sh, on the documents as
``Document.to_dict()`` JSON). What is measured is the text each would embed
(Docling's ``contextualize``: headings, then the chunk).

Per limit: chunks, chunks over the limit (exact count), table rows cut
inside (no chunk has a Markdown line of exactly the row's cells), table
pieces without the table's header (a chunk holding a row of one table but
not its header line), the mean fill (tokens / limit), and seconds.

Run: ``python bench/bench_chunk.py`` (also part of ``make bench``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import docsan  # noqa: E402
from bench.common import corpus_dir, text_layer_files  # noqa: E402
from docsan.budget.tokenizer import Tokenizer, default_tokenizer_dir  # noqa: E402
from docsan.chunking.pieces import heading_levels  # noqa: E402
from docsan.model import Document  # noqa: E402
from docsan.render import render_text, table_to_markdown  # noqa: E402

LIMITS = (128, 512)
DOCLING_VENV = ROOT / ".venv-docling"

Row = list[str]


def _norm(text: str) -> str:
    return " ".join(text.replace("\\|", "|").split())


def _tables(doc: Document) -> list[tuple[Row, list[Row]]]:
    """(first header row's cells, body rows' cells) of every table: non-empty, uncovered cell texts."""
    out = []
    for _, block in doc.blocks():
        if block.table is None or not block.table.n_rows:
            continue
        rows = [[_norm(c.text) for c in row if not c.covered and c.text.strip()] for row in block.table.rows]
        # The first header row is the one a Markdown table keeps as its header line.
        header = rows[0] if block.table.header_rows else []
        out.append((header, [r for r in rows[block.table.header_rows :] if r]))
    return out


def _cells(line: str) -> tuple[str, ...]:
    """The non-empty cells of a Markdown table line (any padding), normalised as :func:`_tables` does."""
    line = line.strip()
    if not line.startswith("|"):
        return ()
    cells = [_norm(p.replace("\0", "|")) for p in line.replace("\\|", "\0").strip("|").split("|")]
    if all(set(c) <= set("-: ") for c in cells):
        return ()  # the |---|---| line under a header
    return tuple(c for c in cells if c)


def _score(chunks: list[str], tables: list[tuple[Row, list[Row]]], limit: int, tok: Tokenizer) -> dict[str, float]:
    counts = tok.count_batch(chunks)
    # Every chunker here writes a table row as one Markdown line. A chunk holds a row when one of its
    # lines has all of the row's cells and no cell foreign to the table: Docling repeats a spanned
    # cell's text where docsan leaves the covered positions blank, and either must count.
    lines = [[set(cells) for line in c.splitlines() if (cells := _cells(line))] for c in chunks]
    # A row that also occurs in another table (an empty row, a repeated label) tells nothing about
    # which table a chunk holds; headerless pieces are judged on rows of one table only.
    seen = Counter(tuple(r) for _, body in tables for r in {tuple(r) for r in body})
    cut = headless = 0
    for header, body in tables:
        known = set(header).union(*body)

        def holding(cells: Row, known: set[str] = known) -> set[int]:
            want = set(cells)
            return {i for i, ls in enumerate(lines) if any(want <= line <= known for line in ls)}

        holders = [holding(row) for row in body]
        cut += sum(1 for h in holders if not h)
        if not header:
            continue
        own = [seen[tuple(row)] == 1 and row != header for row in body]
        pieces = set().union(*(h for mine, h in zip(own, holders, strict=True) if mine))
        headless += len(pieces - holding(header))
    return {
        "chunks": len(chunks),
        "over_limit": sum(1 for n in counts if n > limit),
        "max_tokens": max(counts, default=0),
        "table_rows_cut": cut,
        "table_pieces_without_header": headless,
        "fill_sum": sum(counts) / limit,
    }


def _docling(results: list[docsan.CleanResult], limit: int) -> tuple[list[list[str]], float] | None:
    python = DOCLING_VENV / "bin" / "python"
    if not (DOCLING_VENV / ".ready").is_file() or not python.is_file():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        docs = []
        for r in results:
            data = r.document.to_dict()
            levels = heading_levels(r.document)
            for pi, page in enumerate(data["pages"]):
                for bi, block in enumerate(page["blocks"]):
                    if block.get("kind") == "heading":
                        block["level"] = levels.get((pi, bi), 1)
            docs.append(data)
        (Path(tmp) / "docs.json").write_text(json.dumps(docs, ensure_ascii=False), encoding="utf-8")
        t0 = time.perf_counter()
        subprocess.run(
            [str(python), str(ROOT / "bench" / "docling_chunks.py"), str(Path(tmp) / "docs.json"),
             str(default_tokenizer_dir() / "tokenizer.json"), str(limit), str(Path(tmp) / "out.json")],
            check=True, capture_output=True, timeout=1800,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
        return json.loads((Path(tmp) / "out.json").read_text(encoding="utf-8")), seconds


def run() -> dict:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    corpus = corpus_dir()
    if corpus is None:
        return {"status": "shared corpus not found"}
    tok = Tokenizer.load()
    config = docsan.Config().with_overrides(extract={"ocr": "never"})
    results = []
    for f in text_layer_files(corpus):
        try:
            results.append(docsan.clean_file(f.path, config))
        except docsan.InputError:
            continue
    tables = [_tables(r.document) for r in results]
    out: dict = {
        "files": len(results),
        "tables": sum(len(t) for t in tables),
        "table_rows": sum(len(body) for ts in tables for _, body in ts),
        "docling": "not run: .venv-docling/ missing (bench/setup_docling.sh)",
    }
    rendered = [
        table_to_markdown(b.table).splitlines()
        for r in results
        for _, b in r.document.blocks()
        if b.table and b.table.n_rows
    ]
    for limit in LIMITS:
        # Rows that cannot sit under their header line within the limit: no chunker can give them a header.
        out[f"rows_wider_than_limit_with_header_{limit}"] = sum(
            1
            for lines in rendered
            for n in tok.count_batch(["\n".join([*lines[:2], row]) for row in lines[2:]])
            if n > limit
        )
        splitter = RecursiveCharacterTextSplitter(chunk_size=limit, chunk_overlap=0, length_function=tok.count)
        runs: dict[str, tuple[list[list[str]], float]] = {}
        timed: list[tuple[str, Callable[[docsan.CleanResult], list[str]]]] = [
            ("docsan", lambda r, lim=limit: [c.text for c in docsan.chunk(r, lim, tokenizer=tok)]),
            ("langchain", lambda r, s=splitter: s.split_text(render_text(r.document))),
        ]
        for name, fn in timed:
            t0 = time.perf_counter()
            pieces = [fn(r) for r in results]
            runs[name] = (pieces, time.perf_counter() - t0)
        docling = _docling(results, limit)
        if docling is not None:
            runs["docling"] = docling
            out["docling"] = "docling-core HybridChunker, Markdown tables, repeat_table_header"
        row: dict[str, dict] = {}
        for name, (pieces, seconds) in runs.items():
            totals: dict[str, float] = {}
            for chunks, ts in zip(pieces, tables, strict=True):
                for key, value in _score(chunks, ts, limit, tok).items():
                    totals[key] = max(totals.get(key, 0), value) if key == "max_tokens" else totals.get(key, 0) + value
            totals["mean_fill"] = round(totals.pop("fill_sum") / max(totals["chunks"], 1), 3)
            totals["seconds"] = round(seconds, 2)
            row[name] = totals
        out[f"limit_{limit}"] = row
    return out


def markdown(result: dict) -> str:
    lines = [
        f"{result['files']} born-digital corpus files, cleaned (no OCR); {result['tables']} tables, "
        f"{result['table_rows']} table body rows. Same documents, same limit, same tokenizer (exact counts). "
        f"Docling: {result['docling']}.",
        "",
        "| limit | chunker | chunks | over the limit | largest | table rows cut inside | table pieces without header "
        "| mean fill | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    wide = [f"{result[f'rows_wider_than_limit_with_header_{n}']} at {n}" for n in LIMITS]
    lines[1:1] = [f"Rows that do not fit under their header line within the limit: {', '.join(wide)}.", ""]
    for limit in LIMITS:
        for name, r in result[f"limit_{limit}"].items():
            lines.append(
                f"| {limit} | {name} | {r['chunks']} | {r['over_limit']} | {r['max_tokens']} | {r['table_rows_cut']} "
                f"| {r['table_pieces_without_header']} | {r['mean_fill']} | {r['seconds']} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    res = run()
    print(json.dumps(res, indent=2))
    print(markdown(res))
