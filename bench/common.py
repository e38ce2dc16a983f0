"""What every benchmark script and the tests share: where the shared data is, the corpus manifest, the tokenizer.

The team's shared folder (``corpus/``, ``hostile/``, ``seed/``) lives beside
the checkout (``../shared`` in CI). A worktree may sit one level deeper, so the
nearest ``shared/`` above the repository root is used; ``DOCSAN_SHARED`` (the
folder holding corpus/, hostile/ and seed/) overrides it. This is the one
place that finds it: tests/conftest.py and every benchmark ask here.
"""

from __future__ import annotations

import csv
import importlib.metadata
import os
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The separate environment for Unstructured (heavy, conflicting pins); created by bench/setup_unstructured.sh.
BENCH_VENV = ROOT / ".venv-bench"


def shared_dir() -> Path | None:
    """The team's shared folder (corpus/ and seed/): ``DOCSAN_SHARED``, else the nearest ``shared/`` above ROOT."""
    env = os.environ.get("DOCSAN_SHARED")
    if env:
        return Path(env) if (Path(env) / "corpus" / "MANIFEST.tsv").is_file() else None
    for parent in ROOT.parents:
        if (parent / "shared" / "corpus" / "MANIFEST.tsv").is_file():
            return parent / "shared"
    return None


def corpus_dir() -> Path | None:
    """The shared corpus folder (holding MANIFEST.tsv and pdfs/), or None when there is none."""
    shared = shared_dir()
    return shared / "corpus" if shared else None


def corpus_pdfs() -> Path | None:
    """The corpus's PDFs folder (``corpus/pdfs``), or None."""
    corpus = corpus_dir()
    return corpus / "pdfs" if corpus and (corpus / "pdfs").is_dir() else None


def hostile_dir() -> Path | None:
    """The hostile inputs (``hostile/``: pdfs/, text/, MANIFEST.tsv), or None."""
    shared = shared_dir()
    return shared / "hostile" if shared and (shared / "hostile").is_dir() else None


def seed_dir() -> Path | None:
    """The incident report's folder (``shared/seed``)."""
    shared = shared_dir()
    return shared / "seed" if shared and (shared / "seed").is_dir() else None


@dataclass(frozen=True, slots=True)
class CorpusFile:
    path: Path
    pages: int
    text_layer: str
    lang: str
    features: str


def manifest(corpus: Path) -> list[CorpusFile]:
    """Rows of MANIFEST.tsv whose PDF is present."""
    rows = []
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            path = corpus / "pdfs" / row["file"]
            if path.is_file():
                rows.append(CorpusFile(path, int(row["pages"] or 0), row["text_layer"], row["lang"], row["features"]))
    return rows


def text_layer_files(corpus: Path) -> list[CorpusFile]:
    """The born-digital files: MANIFEST ``text_layer`` exactly ``yes`` (no scans, no garbage layers)."""
    return [f for f in manifest(corpus) if f.text_layer == "yes"]


def floor_pass(path: Path) -> int:
    """The floor every in-process speed is compared with: PyMuPDF's plain ``page.get_text()`` on every page.

    No extractor can be faster than reading the text layer at all; returns the page count.
    """
    import pymupdf

    with pymupdf.open(path) as doc:
        for page in doc:
            page.get_text()
        return doc.page_count


def floor_seconds(paths: list[Path], repeat: int = 3) -> tuple[float, int]:
    """Best of ``repeat`` wall times of :func:`floor_pass` over ``paths``, and their pages.

    The best, not the mean: a busy neighbour on a shared machine only ever adds time.
    """
    best, pages = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        pages = sum(floor_pass(p) for p in paths)
        best = min(best, time.perf_counter() - t0)
    return best, pages


def scan_files(corpus: Path) -> list[CorpusFile]:
    """Files with no text layer at all: these go through OCR."""
    return [f for f in manifest(corpus) if f.text_layer == "no"]


@cache
def _tokenizer():
    from docsan.budget.tokenizer import Tokenizer

    return Tokenizer.load()


def tokenizer_name() -> str:
    return "docsan.budget.tokenizer.Tokenizer.load() (DeepSeek-V4 default)"


def count_tokens(text: str) -> int:
    """Exact DeepSeek-V4 token count of ``text`` without special tokens."""
    return _tokenizer().count(text) if text else 0


def version(dist: str, python: Path | None = None) -> str:
    """Installed version of distribution ``dist``, in this interpreter or in another venv's."""
    if python is None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=60, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "not installed"


def machine() -> dict[str, str]:
    """What the numbers were measured on: CPU model, core count, OS, Python."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
        memory = f"{mem_kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        memory = "unknown"
    return {
        "cpu": cpu,
        "nproc": str(os.cpu_count()),
        "memory": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` runs of ``fn()``, in seconds: the run least disturbed by other load."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
