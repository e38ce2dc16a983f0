"""A corpus at once: documents in parallel (worker processes or a Ray cluster) and deduplicated across documents.

Everything here runs the one per-document function,
:func:`docsan.batch.clean_input`, so a parallel run gives what a one-process
run gives, document for document.
"""

from typing import Literal

from docsan.corpus.pool import DEFAULT_DOCUMENT_TIMEOUT_S, clean_files, usable_cores

# Where the documents of a batch run: worker processes on this machine, or Ray Data tasks on a Ray cluster.
Engine = Literal["local", "ray"]

__all__ = ["DEFAULT_DOCUMENT_TIMEOUT_S", "Engine", "clean_files", "usable_cores"]
