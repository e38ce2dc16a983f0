"""Chunks for retrieval and ingestion: sanitized, whole paragraphs, within an exact token limit.

``docsan.chunk(result, chunk_tokens=512)`` (also ``docsan chunk FILE --chunk-tokens 512 -o OUT.jsonl``).
"""

from docsan.chunking.chunker import DEFAULT_CHUNK_TOKENS, DEFAULT_MAX_TOKENS, Chunk, chunk, chunk_size, iter_chunks

__all__ = ["DEFAULT_CHUNK_TOKENS", "DEFAULT_MAX_TOKENS", "Chunk", "chunk", "chunk_size", "iter_chunks"]
