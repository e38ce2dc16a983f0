"""A corpus at once: documents in parallel (worker processes or a Ray cluster) and deduplicated across documents.

Everything here runs the one per-document function,
:func:`docsan.batch.clean_input`, so a parallel run gives what a one-process
run gives, document for document.
"""

from docsan.corpus.pool import DEFAULT_DOCUMENT_TIMEOUT_S, clean_files, usable_cores

__all__ = ["DEFAULT_DOCUMENT_TIMEOUT_S", "clean_files", "usable_cores"]
