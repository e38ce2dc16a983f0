"""The cyclic garbage collector's settings for a process that cleans a batch of documents.

Why: the pipeline makes almost no reference cycles (refcounting frees its
spans, blocks and arrays), yet CPython's collector runs a pass over the young
objects every 700 container allocations and, as the live objects of a long
document pile up, full passes over every one of them. Measured on the shared
corpus's 19 text-layer files (``docsan clean --no-ocr``, one process):
804 collections took 0.89 s of a 4.8 CPU s run and freed 658 objects in all;
with these settings, 214 collections freed 653 of them, in a quarter of the
time (docs/benchmarks.md, "The garbage collector").

Only processes docsan owns are tuned: the CLI's and the workers it starts. A
service that imports the library keeps its own collector settings.
"""

from __future__ import annotations

import gc

# Container allocations between young-generation passes (CPython's default is 700).
# Cycles are still found, only in fewer, larger passes.
YOUNG_THRESHOLD = 50_000


def tune_for_batch() -> None:
    """Set this process's collector for cleaning documents: fewer passes, and none over what is loaded now.

    ``gc.freeze`` moves every object alive at the call (imported modules,
    compiled patterns, the built pipeline, a loaded tokenizer) out of the
    collector's reach for good: they live as long as the process, and a full
    pass would only walk them again. A worker forked afterwards also leaves
    those pages of its parent's memory unwritten (Python's ``gc.freeze``
    documentation recommends it before ``fork``).
    """
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
