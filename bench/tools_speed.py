"""Whole-process speed: each tool extracts the same files in its own fresh Python process.

Import time counts, as users feel it. Every run starts each tool once, in
turn (tool order interleaved across runs, so a noisy neighbour on this
shared machine hurts every tool alike); min and median wall time are kept,
and the child's peak resident memory comes from ``os.wait4`` (the kernel's
``ru_maxrss`` of that one child, in KiB on Linux).

Ratios are taken against plain PyMuPDF ``get_text()`` in the same run: no
cleaner can be faster than extracting the text.
"""

from __future__ import annotations

import json
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import BENCH_VENV, ROOT, CorpusFile
from docsan.config import DEFAULT_STAGES

PYTHON = sys.executable
# Unstructured phones home and prints an advertisement unless told not to; the
# bench machine has no network, so an analytics call would only add noise.
QUIET_ENV = {
    "SCARF_NO_ANALYTICS": "true",
    "DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
    "UNSTRUCTURED_DISABLE_NOTICE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}

# Each tool: the imports a user pays for, then a loop over sys.argv[1:] that
# extracts every page and prints the number of characters it produced (so a
# tool that silently returns nothing is caught).
_PYMUPDF_TEXT = """
import sys, pymupdf
n = 0
for f in sys.argv[1:]:
    with pymupdf.open(f) as doc:
        n += sum(len(page.get_text()) for page in doc)
print(n)
"""
_PYMUPDF_DICT = """
import sys, pymupdf
n = 0
for f in sys.argv[1:]:
    with pymupdf.open(f) as doc:
        for page in doc:
            d = page.get_text("dict")
            n += sum(len(s["text"]) for b in d["blocks"] if b["type"] == 0 for l in b["lines"] for s in l["spans"])
print(n)
"""
_PDFPLUMBER = """
import sys, pdfplumber
n = 0
for f in sys.argv[1:]:
    with pdfplumber.open(f) as pdf:
        n += sum(len(page.extract_text() or "") for page in pdf.pages)
print(n)
"""
# pymupdf4llm 2.0 turns its layout model on by default when pymupdf.layout is
# installed; use_ocr=False keeps it from OCR-ing images, as docsan --no-ocr does.
_PYMUPDF4LLM_LAYOUT = """
import sys, pymupdf4llm
n = 0
for f in sys.argv[1:]:
    n += len(pymupdf4llm.to_markdown(f, use_ocr=False))
print(n)
"""
_PYMUPDF4LLM_PLAIN = """
import sys, pymupdf4llm
pymupdf4llm.use_layout(False)
n = 0
for f in sys.argv[1:]:
    n += len(pymupdf4llm.to_markdown(f))
print(n)
"""
_UNSTRUCTURED = """
import sys
from unstructured.partition.pdf import partition_pdf
from unstructured.cleaners.core import clean_extra_whitespace, group_broken_paragraphs
n = 0
for f in sys.argv[1:]:
    for el in partition_pdf(filename=f, strategy="fast"):
        n += len(clean_extra_whitespace(group_broken_paragraphs(el.text)))
print(n)
"""


@dataclass(slots=True)
class Tool:
    """A competitor: how to start it on a list of files, and how to start only its imports."""

    name: str
    label: str
    version_of: tuple[str, ...]
    python: Path
    code: str = ""
    # docsan is started through its CLI, not through a code snippet.
    docsan_ocr: str | None = None
    slow: bool = False
    cwd: Path = ROOT
    # Worker processes for docsan (--jobs): 1 compares one process with the other tools' one process.
    jobs: int | None = 1

    def argv(self, files: list[Path], workdir: Path) -> list[str]:
        if self.docsan_ocr is None:
            return [str(self.python), "-c", self.code, *map(str, files)]
        out = workdir / f"{self.name}-out"
        flags = ["--no-ocr"] if self.docsan_ocr == "never" else []
        flags += ["--jobs", str(self.jobs)] if self.jobs is not None else []
        report = workdir / f"{self.name}-report.json"
        return [str(self.python), "-m", "cli", "clean", *flags, "-o", str(out),
                "--report", str(report), *map(str, files)]  # fmt: skip

    def import_argv(self) -> list[str]:
        if self.docsan_ocr is not None:
            # The CLI, the PDF extractor and every stage module (built the way `clean` builds them).
            code = (
                "import cli.main, docsan.extract.pdf\n"
                "from docsan.config import Config\n"
                "from docsan.pipeline import Pipeline\n"
                "Pipeline.from_config(Config())"
            )
            return [str(self.python), "-c", code]
        imports = [line for line in self.code.splitlines() if line.startswith(("import ", "from "))]
        return [str(self.python), "-c", "\n".join(imports)]


def unstructured_python() -> Path | None:
    """The separate venv's interpreter, when bench/setup_unstructured.sh has built it."""
    python = BENCH_VENV / "bin" / "python"
    return python if (BENCH_VENV / ".ready").is_file() and python.is_file() else None


# Left out unless asked for (run_all --all-tools): pymupdf4llm without its
# layout model is not what version 2.0 gives users by default, and it costs
# minutes per run on the corpus.
OPTIONAL_TOOLS = frozenset({"pymupdf4llm_nolayout"})


def default_tools() -> list[Tool]:
    py = Path(PYTHON)
    tools = [
        Tool("pymupdf_text", "PyMuPDF get_text() (floor)", ("pymupdf",), py, _PYMUPDF_TEXT),
        Tool("pymupdf_dict", 'PyMuPDF get_text("dict")', ("pymupdf",), py, _PYMUPDF_DICT),
        Tool("docsan", "docsan clean --no-ocr (batch)", ("docsan",), py, docsan_ocr="never"),
        Tool("pdfplumber", "pdfplumber extract_text()", ("pdfplumber", "pdfminer.six"), py, _PDFPLUMBER),
    ]
    unstructured = unstructured_python()
    if unstructured is not None:
        tools.append(
            Tool(
                "unstructured",
                'Unstructured partition_pdf("fast") + cleaners',
                ("unstructured", "unstructured-inference", "pdfminer.six"),
                unstructured,
                _UNSTRUCTURED,
                slow=True,
                cwd=BENCH_VENV / "spacy-models",
            )
        )
    tools += [
        Tool(
            "pymupdf4llm",
            "pymupdf4llm to_markdown() (layout on)",
            ("pymupdf4llm", "pymupdf-layout"),
            py,
            _PYMUPDF4LLM_LAYOUT,
            slow=True,
        ),
        Tool(
            "pymupdf4llm_nolayout",
            "pymupdf4llm to_markdown() (layout off)",
            ("pymupdf4llm",),
            py,
            _PYMUPDF4LLM_PLAIN,
            slow=True,
        ),
    ]
    return tools


def ocr_tool() -> Tool:
    return Tool("docsan_ocr", "docsan clean (OCR, scans only)", ("docsan",), Path(PYTHON), docsan_ocr="auto")


@dataclass(slots=True)
class Measurement:
    wall_s: float
    max_rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    # User + system CPU of the process and the children it waited for (docsan's --jobs workers).
    cpu_s: float = 0.0


def compile_checkout() -> None:
    """Byte-compile this checkout's ``docsan`` and ``cli`` once, before anything is timed.

    Children run with PYTHONDONTWRITEBYTECODE (QUIET_ENV), and so may the
    shell that started the bench: in a fresh checkout every docsan process
    then compiled all of docsan from source, about 1 s of CPU per process
    (6.27 s against 5.26 s for the 19 text-layer files, same run), while the
    tools it is compared with read the bytecode that installing them wrote.
    An installed docsan has its bytecode too; this measures that.
    """
    import compileall

    for package in ("docsan", "cli"):
        compileall.compile_dir(ROOT / package, quiet=1)


def measure(argv: list[str], *, cwd: Path, timeout_s: float) -> Measurement:
    """Run ``argv`` as a child process; wall time, peak RSS (os.wait4) and output.

    On time-out the child's whole process group is killed and the
    measurement comes back with returncode -9.
    """
    # The working directory comes first on a child's sys.path (``-c`` and ``-m``),
    # so with cwd=ROOT `import docsan` is this checkout's docsan.
    env = {**os.environ, **QUIET_ENV}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
        timer = threading.Timer(timeout_s, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measurement(
            wall_s=wall,
            max_rss_mb=usage.ru_maxrss / 1024,
            returncode=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            cpu_s=usage.ru_utime + usage.ru_stime,
        )


@dataclass(slots=True)
class ToolResult:
    name: str
    label: str
    versions: dict[str, str]
    pages: int
    files: int
    runs_s: list[float] = field(default_factory=list)
    max_rss_mb: float = 0.0
    import_s: float | None = None
    chars: int | None = None
    status: str = "ok"

    def as_dict(self, floor_min: float | None) -> dict:
        d: dict = {
            "name": self.name,
            "label": self.label,
            "versions": self.versions,
            "pages": self.pages,
            "files": self.files,
            "status": self.status,
            "runs_s": [round(x, 3) for x in self.runs_s],
            "max_rss_mb": round(self.max_rss_mb, 1),
            "import_s": None if self.import_s is None else round(self.import_s, 3),
            "chars": self.chars,
        }
        if self.runs_s:
            best = min(self.runs_s)
            d.update(
                min_s=round(best, 3),
                median_s=round(statistics.median(self.runs_s), 3),
                pages_per_s=round(self.pages / best, 3) if best > 0 else None,
            )
            if floor_min:
                # "x times the floor's time"; its inverse is the share of the floor's speed.
                d["time_vs_floor"] = round(best / floor_min, 2)
                d["speed_vs_floor"] = round(floor_min / best, 3)
        return d


def _chars(tool: Tool, m: Measurement, workdir: Path) -> int | None:
    if tool.docsan_ocr is not None:
        # With one input, ``-o`` names the output file; with several, a folder.
        out = workdir / f"{tool.name}-out"
        outputs = [out] if out.is_file() else sorted(out.glob("*"))
        return sum(len(p.read_text(encoding="utf-8")) for p in outputs) if outputs else None
    try:
        return int(m.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def _versions(tool: Tool) -> dict[str, str]:
    from bench.common import version

    python = None if tool.python == Path(PYTHON) else tool.python
    return {dist: version(dist, python) for dist in tool.version_of}


def bench_tools(
    tools: list[Tool],
    files: list[CorpusFile],
    *,
    runs: int,
    timeout_s: float,
    workdir: Path,
    slow_runs: int | None = None,
    log=print,
) -> list[ToolResult]:
    """Time every tool ``runs`` times over ``files`` (the slow ones ``slow_runs`` times), interleaved."""
    slow_runs = runs if slow_runs is None else min(slow_runs, runs)
    compile_checkout()
    paths = [f.path for f in files]
    pages = sum(f.pages for f in files)
    results = {t.name: ToolResult(t.name, t.label, _versions(t), pages, len(files)) for t in tools}
    for run in range(runs):
        for tool in tools:
            res = results[tool.name]
            if not res.status.startswith("ok") or (tool.slow and run >= slow_runs):
                continue
            # The import-only process first: it also warms the page cache for the timed run.
            m = measure(tool.import_argv(), cwd=tool.cwd, timeout_s=timeout_s)
            if m.returncode != 0:
                res.status = f"import failed: {_last_line(m.stderr)}"
                continue
            res.import_s = m.wall_s if res.import_s is None else min(res.import_s, m.wall_s)
            m = measure(tool.argv(paths, workdir), cwd=tool.cwd, timeout_s=timeout_s)
            if m.returncode == -signal.SIGKILL:
                res.status = f"timed out after {timeout_s:.0f} s"
            elif m.returncode != 0 and not (tool.docsan_ocr is not None and m.returncode == 1):
                res.status = f"failed (exit {m.returncode}): {_last_line(m.stderr)}"
            else:
                res.runs_s.append(m.wall_s)
                res.max_rss_mb = max(res.max_rss_mb, m.max_rss_mb)
                res.chars = _chars(tool, m, workdir)
                if m.returncode == 1:
                    res.status = f"ok, some inputs failed: {_last_line(m.stderr)}"
            log(f"  run {run + 1} {tool.name}: {m.wall_s:.2f} s (exit {m.returncode})")
    return list(results.values())


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1][:200] if lines else ""


def docsan_stage_seconds(report_file: Path) -> dict[str, float]:
    """Sum of each stage's own ``seconds`` over all files of a ``--report`` JSON."""
    data = json.loads(report_file.read_text(encoding="utf-8"))
    totals: dict[str, float] = {}
    for doc in data if isinstance(data, list) else [data]:
        for stage in doc["stages"]:
            totals[stage["stage"]] = totals.get(stage["stage"], 0.0) + stage["seconds"]
    return {k: round(v, 4) for k, v in totals.items()}


def profile_docsan(files: list[CorpusFile], workdir: Path, *, timeout_s: float, top: int = 15) -> dict:
    """One cProfile'd ``docsan clean --no-ocr`` run: where the time goes, by docsan function and overall.

    cProfile slows Python-heavy code more than C extensions, so shares, not
    seconds, are what to read; the stage seconds come from docsan's own report.
    """
    tool = Tool("docsan_profile", "", ("docsan",), Path(PYTHON), docsan_ocr="never")
    prof = workdir / "docsan.prof"
    clean_argv = tool.argv([f.path for f in files], workdir)
    argv = [clean_argv[0], "-m", "cProfile", "-o", str(prof), *clean_argv[1:]]
    m = measure(argv, cwd=ROOT, timeout_s=timeout_s)
    if m.returncode not in (0, 1) or not prof.is_file():
        return {"status": f"profile failed (exit {m.returncode}): {_last_line(m.stderr)}"}
    stats = pstats.Stats(str(prof))
    rows = []
    for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((filename, line, func, ncalls, tottime, cumtime))
    # The top-level call's cumulative time can exceed the sum of self times
    # (cProfile's bookkeeping); take the larger so no share passes 100 %.
    total = max(stats.total_tt, max((r[5] for r in rows), default=0.0))  # type: ignore[attr-defined]

    def where(filename: str, line: int, func: str) -> str:
        path = Path(filename)
        try:
            path = path.relative_to(ROOT)
        except ValueError:
            parts = path.parts
            if "site-packages" in parts:
                path = Path(*parts[parts.index("site-packages") + 1 :])
        return f"{path}:{line}({func})" if line else func

    ours = [r for r in rows if r[0].startswith(str(ROOT / "docsan")) or r[0].startswith(str(ROOT / "cli"))]
    ours.sort(key=lambda r: r[5], reverse=True)
    hot = sorted(rows, key=lambda r: r[4], reverse=True)
    return {
        "status": "ok",
        "profiled_s": round(total, 3),
        "wall_s": round(m.wall_s, 3),
        "docsan_cumulative": [
            {"function": where(*r[:3]), "calls": r[3], "cum_s": round(r[5], 3), "share": round(r[5] / total, 3)}
            for r in ours[:top]
        ],
        "docsan_self": [
            {"function": where(*r[:3]), "calls": r[3], "self_s": round(r[4], 3), "share": round(r[4] / total, 3)}
            for r in sorted(ours, key=lambda r: r[4], reverse=True)[:top]
        ],
        "self_time": [
            {"function": where(*r[:3]), "calls": r[3], "self_s": round(r[4], 3), "share": round(r[4] / total, 3)}
            for r in hot[:top]
        ],
    }


def run(
    files: list[CorpusFile],
    scans: list[CorpusFile],
    *,
    runs: int = 3,
    slow_runs: int = 1,
    ocr_runs: int = 1,
    timeout_s: float = 600,
    skip: frozenset[str] = frozenset(),
    all_tools: bool = False,
    log=print,
) -> dict:
    """The whole comparison; a dict ready for bench/report.py."""
    tools = [t for t in default_tools() if t.name not in skip and (all_tools or t.name not in OPTIONAL_TOOLS)]
    notes = []
    if unstructured_python() is None and "unstructured" not in skip:
        notes.append(
            "Unstructured not measured: its environment (.venv-bench/) is missing; see bench/setup_unstructured.sh"
        )
    with tempfile.TemporaryDirectory(prefix="docsan-bench-") as tmp:
        workdir = Path(tmp)
        log(f"speed: {len(tools)} tools x {runs} runs on {len(files)} files ({sum(f.pages for f in files)} pages)")
        results = bench_tools(
            tools, files, runs=runs, slow_runs=slow_runs, timeout_s=timeout_s, workdir=workdir, log=log
        )
        stage_s = {}
        report_file = workdir / "docsan-report.json"
        if report_file.is_file():
            stage_s = docsan_stage_seconds(report_file)
        ocr = None
        if scans and ocr_runs > 0 and "docsan_ocr" not in skip:
            log(
                f"speed: docsan with OCR, {ocr_runs} run(s) on {len(scans)} scans ({sum(f.pages for f in scans)} pages)"
            )
            ocr = bench_tools([ocr_tool()], scans, runs=ocr_runs, timeout_s=timeout_s, workdir=workdir, log=log)[0]
            ocr_report = workdir / "docsan_ocr-report.json"
            ocr_stage_s = docsan_stage_seconds(ocr_report) if ocr_report.is_file() else {}
        log("speed: profiling docsan once (cProfile)")
        profile = profile_docsan(files, workdir, timeout_s=timeout_s) if "docsan" not in skip else None
    floor = next((r for r in results if r.name == "pymupdf_text" and r.runs_s), None)
    floor_min = min(floor.runs_s) if floor else None
    return {
        "files": [{"name": f.path.name, "pages": f.pages, "lang": f.lang} for f in files],
        "pages": sum(f.pages for f in files),
        "runs": runs,
        "slow_runs": min(slow_runs, runs),
        "slow_tools": [t.name for t in tools if t.slow],
        "timeout_s": timeout_s,
        "tools": [r.as_dict(floor_min) for r in results],
        "stages": list(DEFAULT_STAGES),
        "docsan_stage_seconds": stage_s,
        "ocr": None
        if ocr is None
        else {
            **ocr.as_dict(None),
            "files_list": [f.path.name for f in scans],
            "stage_seconds": ocr_stage_s,
        },
        "profile": profile,
        "notes": notes,
    }
