"""The metadata every adapter attaches: where a chunk came from and what cleaning removed.

Values are strings, numbers and lists of them, which every vector store
accepts; the removal summary is flattened to ``removed_<stage>`` counts.
"""

from __future__ import annotations

from docsan.chunking import Chunk
from docsan.pipeline import CleanResult


def removal_summary(result: CleanResult) -> dict[str, int]:
    """Changes per stage (``removed_normalize``: 3, ...) and the characters cleaning removed in all."""
    summary = {f"removed_{s.stage}": len(s.changes) for s in result.report.stages if s.changes}
    stages = result.report.stages
    summary["chars_removed"] = stages[0].chars_before - stages[-1].chars_after if stages else 0
    return summary


def chunk_metadata(c: Chunk) -> dict[str, object]:
    """A chunk's provenance: source, page numbers, heading path, exact token count, stable id."""
    return {
        "source": c.source,
        "chunk_id": c.id,
        "chunk_index": c.index,
        "page_numbers": list(c.page_numbers),
        "headings": list(c.headings),
        "num_tokens": c.num_tokens,
        "tokenizer": c.tokenizer,
        "kinds": [str(k) for k in c.kinds],
        "block_sources": [str(s) for s in c.block_sources],
    }
