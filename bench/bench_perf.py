"""The speed targets (issues 2, 6, 13) in one quick measurement: docsan against the floor.

Run: python bench/bench_perf.py [runs]  (prints JSON)

Three whole processes, imports included, started in turn ``runs`` times on
every text-layer file of the shared corpus (MANIFEST ``text_layer`` = yes):
plain PyMuPDF ``page.get_text()`` (the floor), ``docsan clean --no-ocr
--jobs 1`` in one batch, exactly as ``bench/tools_speed.py`` starts it, and
the same with ``--jobs`` left at its default (the usable cores). Best times
are compared (a busy neighbour on the shared machine only ever adds time);
the targets are ``ratio`` <= 2 for one process (half the floor's speed) and
``ratio_jobs`` <= 1/0.9 with every core. docsan's bytecode is compiled
first (``compile_checkout``), as installing it would. ``load_avg`` is the machine's
1-minute load when the run ended: above the core count, every number here
is inflated.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import corpus_dir, text_layer_files  # noqa: E402
from bench.tools_speed import compile_checkout, default_tools, measure  # noqa: E402

TOOLS = ("pymupdf_text", "docsan")
TARGET_RATIO = 2.0
TARGET_RATIO_JOBS = 1 / 0.9


def run(runs: int = 3, timeout_s: float = 600) -> dict:
    corpus = corpus_dir()
    if corpus is None:
        return {"skipped": "shared corpus not found"}
    files = [f.path for f in text_layer_files(corpus)]
    tools = [t for t in default_tools() if t.name in TOOLS]
    tools.append(replace(next(t for t in tools if t.name == "docsan"), name="docsan_jobs", jobs=None))
    times: dict[str, list[float]] = {t.name: [] for t in tools}
    cpu: dict[str, list[float]] = {t.name: [] for t in tools}
    compile_checkout()
    rss: dict[str, float] = {t.name: 0.0 for t in tools}
    with tempfile.TemporaryDirectory(prefix="docsan-perf-") as tmp:
        for _ in range(runs):
            for tool in tools:
                m = measure(tool.argv(files, Path(tmp)), cwd=tool.cwd, timeout_s=timeout_s)
                if m.returncode != 0:
                    raise RuntimeError(f"{tool.name} failed ({m.returncode}): {m.stderr[-500:]}")
                times[tool.name].append(m.wall_s)
                cpu[tool.name].append(m.cpu_s)
                rss[tool.name] = max(rss[tool.name], m.max_rss_mb)
    floor, docsan, jobs = min(times["pymupdf_text"]), min(times["docsan"]), min(times["docsan_jobs"])
    return {
        "files": len(files),
        "runs": runs,
        "floor_s": round(floor, 3),
        "docsan_s": round(docsan, 3),
        "docsan_jobs_s": round(jobs, 3),
        "runs_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "ratio": round(docsan / floor, 2),
        "target_ratio": TARGET_RATIO,
        "met": docsan / floor <= TARGET_RATIO,
        "ratio_jobs": round(jobs / floor, 2),
        "target_ratio_jobs": round(TARGET_RATIO_JOBS, 2),
        "met_jobs": jobs / floor <= TARGET_RATIO_JOBS,
        # CPU seconds are less disturbed by neighbours than wall time (cache contention still adds some).
        "cpu_s": {k: round(min(v), 3) for k, v in cpu.items()},
        "cpu_ratio": round(min(cpu["docsan"]) / min(cpu["pymupdf_text"]), 2),
        # Largest resident set of one process (for --jobs: of the largest worker or the parent).
        "max_rss_mb": {k: round(v, 1) for k, v in rss.items()},
        "load_avg": round(os.getloadavg()[0], 2),
        "cores": os.cpu_count(),
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=2))
