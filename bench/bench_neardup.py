"""Near-duplicate stage throughput on the corpus's paragraphs, against per-shingle MinHash updates.

All three variants shingle the same paragraphs the same way and run the same
LSH (insert + query per unit); they differ only in how signatures are built:

* ``stage``: the neardup stage end to end (``MinHash.bulk`` with xxh32,
  exact-Jaccard verification, the new document and its report);
* ``update_loop``: one ``MinHash.update`` call per shingle, datasketch's
  default SHA-1 hash (the naive way);
* ``update_batch``: one ``update_batch`` call per paragraph, default hash.

Paragraphs/s counts every paragraph given to the stage, including the short
ones it skips without hashing (that skip is part of the stage). Both wall and
CPU (process) time are reported, best of three: the machine is shared, and
wall time there mostly measures the neighbours.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_text import paragraphs
from datasketch import MinHash, MinHashLSH

from docsan.model import Block, Document, Page
from docsan.stages.neardup import NearDuplicates
from docsan.text.shingles import shingle

REPEATS = 3


def _best(fn: Callable[[], object]) -> tuple[float, float]:
    """Best wall and best CPU seconds of REPEATS runs."""
    wall, cpu = [], []
    for _ in range(REPEATS):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def _baseline(paras: tuple[str, ...], stage: NearDuplicates, batch: bool) -> int:
    """Shingle, build signatures the slow way, LSH query + insert; returns candidate count."""
    lsh = MinHashLSH(threshold=stage.threshold - 0.1, num_perm=stage.num_perm)
    found = 0
    for i, text in enumerate(paras):
        sh = shingle(text)
        if sh.length < stage.min_chars or not sh.has_ngrams:
            continue
        m = MinHash(num_perm=stage.num_perm, seed=stage.seed)
        grams = [g.encode("utf-8") for g in sh.shingles]
        if batch:
            m.update_batch(grams)
        else:
            for g in grams:
                m.update(g)
        found += len(lsh.query(m))
        lsh.insert(i, m)
    return found


def run() -> dict:
    paras = paragraphs()
    stage = NearDuplicates()
    doc = Document(pages=(Page(1, tuple(Block(p) for p in paras)),))
    result = stage(doc)
    timed = {
        "stage": _best(lambda: stage(doc)),
        "update_loop": _best(lambda: _baseline(paras, stage, batch=False)),
        "update_batch": _best(lambda: _baseline(paras, stage, batch=True)),
    }
    wall = {k: round(len(paras) / w) for k, (w, _) in timed.items()}
    cpu = {k: round(len(paras) / c) for k, (_, c) in timed.items()}
    return {
        "paragraphs": len(paras),
        "units_compared": int(result.stats.get("paragraph_units", 0)),
        "removed": int(result.stats.get("paragraphs_removed", 0)),
        "wall_s": {k: round(w, 4) for k, (w, _) in timed.items()},
        "cpu_s": {k: round(c, 4) for k, (_, c) in timed.items()},
        "paragraphs_per_s_wall": wall,
        "paragraphs_per_s_cpu": cpu,
        "stage_vs_update_loop_cpu": round(cpu["stage"] / cpu["update_loop"], 2),
        "stage_vs_update_batch_cpu": round(cpu["stage"] / cpu["update_batch"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
