"""The cyclic garbage collector's settings for a process that cleans a batch of documents.

Why: the pipeline makes almost no reference cycles (refcounting frees its
spans, blocks and arrays), yet CPython's collector runs a pass over the young
objects every 700 container allocations and, as the live objects of a long
document pile up, full passes over every one of them. Measured on the shared
corpus's 19 text-layer files (``docsan clean --no-ocr``, one process):
804 collections took 0.89 s of a 4.8 CPU s run and freed 658 objects in all;
with these settings, 214 collections freed 653 of them, in a quarter of the
time (docs/benchmarks.md, "The garbage collector").

Only processes docsan owns are tuned: the CLI's (from its start: no pass at
all while a command imports what it needs) and the workers it starts. A
service that imports the library keeps its own collector settings.
"""

from __future__ import annotations

import gc

# Container allocations between young-generation passes (CPython's default is 700).
# Cycles are still found, only in fewer, larger passes.
YOUNG_THRESHOLD = 50_000

# Set while the collector is off for the CLI's imports, so that only the process that paused it turns it back on.
_paused = False


def pause_for_imports() -> None:
    """Turn the collector off while a command loads its modules.

    Why: imports make nothing but long-lived objects (modules, functions,
    classes, compiled patterns), which a pass can never free; yet at CPython's
    default threshold they set off 200 passes, 34-37 ms of a 19-file clean
    (docs/benchmarks.md, "The collector during the CLI's imports").
    """
    global _paused
    gc.disable()
    _paused = True


def resume_after_imports() -> None:
    """Turn the collector back on, with the batch settings, once the command is loaded (if it was paused)."""
    global _paused
    if _paused:
        _paused = False
        tune_for_batch()
        gc.enable()


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
