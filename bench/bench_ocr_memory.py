"""Issue 13's memory target with OCR on: peak resident memory of each docsan process, tesseract apart.

``ru_maxrss`` of a waited-for child includes its own children (tesseract,
221 MB on these files), so each run is sampled instead: every 0.1 s, the
resident set of each docsan process (the CLI, its ``--jobs`` workers) and of
the tesseract it runs. Reported, each the highest of the run: ``docsan`` (one
docsan process), ``docsan_beside_tesseract`` (one docsan process while its
tesseract runs: what OCR holds through OSD and recognition, not the draw),
``docsan_plus_tesseract`` (the two together: what one worker costs the
machine) and ``tesseract``. A peak between two samples is missed; that
undercounts, never overcounts. Cases:

* ``huckfinn_mixed_scans_6p.pdf`` (a 30-inch page holding a 9000 x 9000 RGB
  scan) and ``mixed_text_and_image_pages_2p.pdf``, each alone, ``--jobs 1``;
* with ``--corpus``, the whole shared corpus, OCR on, ``--jobs 2``.

``--before-root DIR`` runs the same cases first from another checkout (say
one without a change) in the same run, so the two sets of numbers share the
machine's load.

    python -m bench.bench_ocr_memory
    python -m bench.bench_ocr_memory --before-root /path/to/main --corpus
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.common import ROOT, corpus_dir

FILES = ("huckfinn_mixed_scans_6p.pdf", "mixed_text_and_image_pages_2p.pdf")
SAMPLE_S = 0.1


def _rss_mb(p: psutil.Process) -> float:
    try:
        return p.memory_info().rss / 1e6
    except psutil.NoSuchProcess:
        return 0.0


def _sample(proc: subprocess.Popen) -> dict[str, float]:
    """Peaks in MB over one run, until ``proc`` ends (see the module docstring)."""
    root = psutil.Process(proc.pid)
    peak = dict.fromkeys(("docsan", "docsan_beside_tesseract", "docsan_plus_tesseract", "tesseract"), 0.0)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                if p.name().startswith("tesseract"):
                    continue
                kids = [k for k in p.children() if k.name().startswith("tesseract")]
            except psutil.NoSuchProcess:
                continue
            own, tess = _rss_mb(p), sum(_rss_mb(k) for k in kids)
            peak["docsan"] = max(peak["docsan"], own)
            peak["tesseract"] = max(peak["tesseract"], tess)
            if kids:
                peak["docsan_beside_tesseract"] = max(peak["docsan_beside_tesseract"], own)
                peak["docsan_plus_tesseract"] = max(peak["docsan_plus_tesseract"], own + tess)
        time.sleep(SAMPLE_S)
    return peak


def run_case(root: Path, inputs: list[Path], jobs: int) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "cli", "clean", *map(str, inputs), "-o", out, "-q", "--jobs", str(jobs)]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak = _sample(proc)
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        return {
            "rc": proc.wait(),
            "wall_s": round(time.monotonic() - t0, 1),
            **{f"peak_{k}_mb": round(v) for k, v in peak.items()},
            "stderr_tail": stderr[-300:],
        }


def run_all(root: Path, corpus: Path, whole: bool) -> dict:
    cases = {name: run_case(root, [corpus / "pdfs" / name], jobs=1) for name in FILES}
    if whole:
        cases["corpus --jobs 2"] = run_case(root, [corpus / "pdfs"], jobs=2)
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-root", type=Path, help="another checkout to measure first, in the same run")
    parser.add_argument("--corpus", action="store_true", help="also the whole shared corpus with --jobs 2")
    args = parser.parse_args()
    corpus = corpus_dir()
    if corpus is None:
        sys.exit("bench_ocr_memory: the shared corpus is not found (set DOCSAN_SHARED)")
    result = {}
    if args.before_root:
        result["before"] = run_all(args.before_root.resolve(), corpus, args.corpus)
    result["after" if args.before_root else "this tree"] = run_all(ROOT, corpus, args.corpus)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
