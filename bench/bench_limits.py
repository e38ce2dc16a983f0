"""Issue 9's size limits: is docsan near-linear in pages and characters, and bounded on a bomb?

Each case runs ``load`` + the default pipeline in a fresh process (so its peak
RSS is its own) and reports CPU seconds, not wall-clock ones: the machine is
shared, and CPU time is what a busy neighbour does not inflate.

* text files of 5k, 10k, 20k and 100k form-feed pages (two random sentences
  each, seeded): the issue saw 2.6 s, 5.5 s, 16 s and no answer in 120 s;
* generated PDFs of 1,000 and 5,000 pages (30 lines each) under the default
  ``max_pages``: processed, not cut;
* the 64 MiB Flate bomb (tests/test_limits.py builds it the same way).

Linearity is the cost per page of each case over the cost per page of the
smallest case of its kind in the same run (1.0 = linear); the PDF cases also
give plain PyMuPDF ``get_text()`` over the same file as their baseline.

    python -m bench.bench_limits            # all cases (~10 CPU minutes)
    python -m bench.bench_limits --quick    # 5k and 20k text pages, 1,000 PDF pages, the bomb
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEXT_PAGES = (5_000, 10_000, 20_000, 100_000)
PDF_PAGES = (1_000, 5_000)
QUICK_TEXT, QUICK_PDF = (5_000, 20_000), (1_000,)
# A case that needs more than this is reported as a time-out, not waited for.
CASE_TIMEOUT_S = 1800

_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "been",
    "one",
    "all",
    "we",
    "their",
    "has",
    "would",
    "when",
    "if",
    "so",
    "no",
    "out",
    "up",
    "into",
    "do",
    "any",
    "more",
    "time",
    "some",
    "them",
    "only",
    "other",
    "new",
    "about",
    "than",
    "very",
    "can",
    "what",
    "may",
    "could",
    "its",
    "two",
    "first",
    "then",
    "over",
    "such",
    "like",
    "just",
    "now",
    "these",
    "also",
    "after",
]

# Runs in the child: build the input, time load + pipeline in CPU seconds, print one JSON line.
_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from docsan.config import Config
from docsan.extract import load
from docsan.pipeline import Pipeline
path, baseline = sys.argv[2], sys.argv[3] == "1"
out = {}
if baseline:
    import pymupdf
    t = time.process_time()
    with pymupdf.open(path) as doc:
        chars = sum(len(page.get_text()) for page in doc)
    out["baseline_cpu_s"] = round(time.process_time() - t, 3)
config = Config().with_overrides(extract={"ocr": "never"})
t = time.process_time()
try:
    result = Pipeline.from_config(config).run(load(path, config.extract))
    out.update(pages=len(result.document.pages), chars=len(result.text), gaps=[str(g) for g in result.report.gaps])
except Exception as err:  # the bomb alone is an InputError: its line is the result
    out["error"] = str(err)
out["cpu_s"] = round(time.process_time() - t, 3)
out["maxrss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""


def _sentence(rng: object) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 14))]  # type: ignore[attr-defined]
    return " ".join(words).capitalize() + "."


def form_feed_text(pages: int, path: Path) -> None:
    import random

    rng = random.Random(1)
    path.write_text("\x0c".join(_sentence(rng) + "\n" + _sentence(rng) for _ in range(pages)), encoding="utf-8")


def long_pdf(pages: int, path: Path) -> None:
    import random

    import pymupdf

    rng = random.Random(2)
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Annual report - chapter {i // 50 + 1}", fontsize=9)
        page.insert_text((72, 100), "\n".join(" ".join(rng.choice(_WORDS) for _ in range(12)) for _ in range(30)))
        page.insert_text((300, 770), str(i + 1), fontsize=9)
    doc.save(path, deflate=True)


def _run(path: Path, baseline: bool = False) -> dict:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(ROOT), str(path), "1" if baseline else "0"],
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"over {CASE_TIMEOUT_S} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _linearity(rows: dict[int, dict]) -> None:
    """Each row's CPU per page over the smallest row's (1.0: linear)."""
    ok = {n: r for n, r in rows.items() if "error" not in r}
    if not ok:
        return
    first = min(ok)
    unit = ok[first]["cpu_s"] / first
    for n, r in ok.items():
        r["cpu_ms_per_page"] = round(1000 * r["cpu_s"] / n, 3)
        r["per_page_over_smallest"] = round(r["cpu_s"] / n / unit, 2)


def run(quick: bool = False) -> dict:
    from tests.test_limits import BOMB_MIB, _bomb_page, _pdf, _text_page

    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text_rows: dict[int, dict] = {}
        for n in QUICK_TEXT if quick else TEXT_PAGES:
            path = folder / f"ff{n}.txt"
            form_feed_text(n, path)
            text_rows[n] = _run(path)
        _linearity(text_rows)
        out["form_feed_text"] = {f"{n} pages": r for n, r in text_rows.items()}
        pdf_rows: dict[int, dict] = {}
        for n in QUICK_PDF if quick else PDF_PAGES:
            path = folder / f"long{n}.pdf"
            long_pdf(n, path)
            pdf_rows[n] = _run(path, baseline=True)
            if "baseline_cpu_s" in pdf_rows[n] and "cpu_s" in pdf_rows[n]:
                pdf_rows[n]["over_pymupdf_get_text"] = round(pdf_rows[n]["cpu_s"] / pdf_rows[n]["baseline_cpu_s"], 1)
        _linearity(pdf_rows)
        out["long_pdf"] = {f"{n} pages": r for n, r in pdf_rows.items()}
        bomb = folder / "bomb.pdf"
        bomb.write_bytes(_pdf([_text_page("Hello from page one"), _bomb_page(BOMB_MIB)]))
        out["flate_bomb_64mib"] = {"file_kib": round(bomb.stat().st_size / 1024), **_run(bomb)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(quick=parser.parse_args().quick), indent=2))


if __name__ == "__main__":
    main()
