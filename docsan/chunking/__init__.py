"""Chunks for retrieval and ingestion: sanitized, whole paragraphs, within an exact token limit.

``docsan.chunk(result, max_tokens=512)`` (also ``docsan chunk FILE -o OUT.jsonl``).
"""

from docsan.chunking.chunker import DEFAULT_MAX_TOKENS, Chunk, chunk, iter_chunks

__all__ = ["DEFAULT_MAX_TOKENS", "Chunk", "chunk", "iter_chunks"]
