"""Chunking the cleaned corpus: docsan's chunker against LangChain's RecursiveCharacterTextSplitter.

Both get the same cleaned text of every born-digital corpus file and the same
limit, counted with the same tokenizer (DeepSeek-V4): LangChain's splitter
with ``length_function`` set to the exact count, so neither is handicapped by
a character estimate. Measured per limit: chunks, chunks over the limit
(exact count of the chunk's text), table rows cut inside a row, table pieces
without the table's header row, and the mean fill (tokens / limit).

Run: ``python bench/bench_chunk.py`` (also part of ``make bench``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import docsan  # noqa: E402
from bench.common import corpus_dir, text_layer_files  # noqa: E402
from docsan.budget.tokenizer import Tokenizer  # noqa: E402
from docsan.render import render_text, table_to_markdown  # noqa: E402

LIMITS = (128, 512)


def _tables(result: docsan.CleanResult) -> list[tuple[str, list[str]]]:
    """(header line and separator line, body lines) of every table as rendered in the text."""
    out = []
    for _, block in result.document.blocks():
        if block.table is not None and block.table.n_rows:
            lines = table_to_markdown(block.table).splitlines()
            out.append(("\n".join(lines[:2]), lines[2:]))
    return out


def _score(chunks: list[str], tables: list[tuple[str, list[str]]], limit: int, tok: Tokenizer) -> dict[str, float]:
    counts = tok.count_batch(chunks)
    chunk_lines = [set(c.splitlines()) for c in chunks]
    cut_rows = headless = 0
    # A row line that also occurs in another table (an empty row, a repeated label) tells nothing
    # about which table a chunk holds; only rows of one table, other than headers, are looked for.
    seen_in = Counter(row for _, body in tables for row in set(body))
    headers = {header.split("\n")[0] for header, _ in tables}
    for header, body in tables:
        # A row is cut when no chunk holds it as a whole line.
        cut_rows += sum(1 for row in body if not any(row in lines for lines in chunk_lines))
        # A piece is headless when a chunk holds rows of the table but not its header line.
        first = header.split("\n")[0]
        own = [row for row in body if seen_in[row] == 1 and row not in headers]
        headless += sum(1 for lines in chunk_lines if first not in lines and any(row in lines for row in own))
    return {
        "chunks": len(chunks),
        "over_limit": sum(1 for n in counts if n > limit),
        "max_tokens": max(counts, default=0),
        "table_rows_cut": cut_rows,
        "table_pieces_without_header": headless,
        "mean_fill": round(sum(counts) / (len(counts) * limit), 3) if counts else 0.0,
    }


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
    tables = [_tables(r) for r in results]
    table_rows = sum(len(body) for ts in tables for _, body in ts)
    out: dict = {"files": len(results), "tables": sum(len(t) for t in tables), "table_rows": table_rows}
    for limit in LIMITS:
        # Rows that cannot sit under their header line within the limit: no chunker can give them a header.
        out[f"rows_wider_than_limit_with_header_{limit}"] = sum(
            1
            for ts in tables
            for header, body in ts
            for n in tok.count_batch([f"{header}\n{row}" for row in body])
            if n > limit
        )
        splitter = RecursiveCharacterTextSplitter(chunk_size=limit, chunk_overlap=0, length_function=tok.count)
        row: dict[str, dict] = {}
        for name, fn in (
            ("docsan", lambda r, lim=limit: [c.text for c in docsan.chunk(r, lim, tokenizer=tok)]),
            ("langchain", lambda r, s=splitter: s.split_text(render_text(r.document))),
        ):
            t0 = time.perf_counter()
            pieces = [fn(r) for r in results]
            seconds = time.perf_counter() - t0
            totals: dict[str, float] = {}
            for chunks, ts in zip(pieces, tables, strict=True):
                for key, value in _score(chunks, ts, limit, tok).items():
                    totals[key] = max(totals.get(key, 0), value) if key == "max_tokens" else totals.get(key, 0) + value
            totals["mean_fill"] = round(totals["mean_fill"] / len(results), 3)
            totals["seconds"] = round(seconds, 2)
            row[name] = totals
        out[f"limit_{limit}"] = row
    return out


def markdown(result: dict) -> str:
    lines = [
        f"{result['files']} born-digital corpus files, cleaned (no OCR); {result['tables']} tables, "
        f"{result['table_rows']} table body rows. Same text, same limit, same tokenizer (exact counts).",
        "",
        "| limit | chunker | chunks | over the limit | largest | rows cut inside | table pieces without header "
        "| mean fill | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    wide = [f"{result[f'rows_wider_than_limit_with_header_{n}']} at {n}" for n in LIMITS]
    lines[1:1] = [f"Rows that do not fit under their header within the limit: {', '.join(wide)}.", ""]
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
