"""Golden outputs: what ``docsan clean`` writes for the shared corpus and the fixtures, byte for byte.

The test (tests/test_golden.py) runs every case below and compares the
cleaned text and the report (timings left out) with the files committed
under ``tests/golden/<case>/``. It exists so that a refactoring can prove it
changed nothing, and so that a change of behaviour is seen file by file.

When output changes on purpose, regenerate and commit the new files::

    make golden                      # all cases
    .venv/bin/python -m tests.golden_outputs --write [CASE ...]

and say in the commit which outputs changed and why (``git diff --stat
tests/golden`` lists them).

Cases (``CASES``):

* ``corpus``: every PDF of the shared corpus, ``clean --no-ocr --jobs 2`` in
  one batch (error lines too, for the broken files): the same bytes as one process;
* ``fixtures``: the committed fixtures with the default configuration;
* ``hostile-text``: the shared smuggling payloads (text and chat files);
* ``budget``: single runs through ``--budget``, ``--query``, ``--strategy``,
  ``--format markdown`` and ``--table-policy``, which add stages;
* ``ocr``: a few scanned pages through tesseract (library call with a page
  selection, the CLI has none), at low resolution to stay cheap.

Paths inside outputs are written as ``<corpus>/``, ``<hostile>/`` and
``<repo>/`` so that the files do not depend on where the checkout sits.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import corpus_pdfs, hostile_dir

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
FIXTURES = ROOT / "fixtures"


CORPUS = corpus_pdfs()
_HOSTILE = hostile_dir()
HOSTILE_TEXT = _HOSTILE / "text" if _HOSTILE else None


class Unavailable(Exception):
    """A case's inputs or tools are missing here (no shared corpus, no tesseract)."""


def _placeholders(text: str) -> str:
    for path, mark in ((CORPUS, "<corpus>"), (HOSTILE_TEXT, "<hostile>"), (ROOT, "<repo>")):
        if path is not None:
            text = text.replace(str(path), mark)
    return text


def _report_json(report: dict[str, Any]) -> str:
    """The report as ``--report`` writes it, without the per-stage timings (they differ every run)."""
    stripped = {**report, "stages": [{k: v for k, v in s.items() if k != "seconds"} for s in report["stages"]]}
    return _placeholders(json.dumps(stripped, ensure_ascii=False, indent=2)) + "\n"


def _clean(args: list[str]) -> tuple[int, str]:
    """Run ``docsan clean ARGS`` in this process; (exit code, stderr)."""
    from typer.testing import CliRunner

    from cli.main import app

    result = CliRunner().invoke(app, ["clean", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


def _batch(inputs: list[Path], extra: list[str]) -> dict[str, str]:
    """One ``clean IN... -o DIR --report R`` run: every output file, one report per input, the error lines."""
    with tempfile.TemporaryDirectory() as tmp:
        out, report = Path(tmp) / "out", Path(tmp) / "report.json"
        code, stderr = _clean([*map(str, inputs), "-o", str(out), "--report", str(report), *extra])
        files = {p.name: _placeholders(p.read_text(encoding="utf-8")) for p in sorted(out.iterdir())}
        for entry in json.loads(report.read_text(encoding="utf-8")):
            files[Path(entry["source"]).name + ".report.json"] = _report_json(entry)
    files["exit.txt"] = f"exit {code}\n" + _placeholders(stderr)
    return files


def _need(path: Path | None, what: str) -> Path:
    if path is None or not path.is_dir():
        raise Unavailable(f"{what} not found")
    return path


def corpus_case() -> dict[str, str]:
    corpus = _need(CORPUS, "shared corpus")
    # Two workers: the outputs were written by one process, and must not depend on the worker count.
    return _batch(sorted(corpus.glob("*.pdf")), ["--no-ocr", "--jobs", "2"])


def fixtures_case() -> dict[str, str]:
    inputs = sorted(p for p in FIXTURES.iterdir() if p.suffix in {".pdf", ".txt", ".json"})
    return _batch(inputs, [])


def hostile_text_case() -> dict[str, str]:
    hostile = _need(HOSTILE_TEXT, "shared hostile texts")
    return _batch(sorted(p for p in hostile.iterdir() if p.suffix in {".txt", ".md", ".json"}), [])


# (output name, the clean command line): each adds stages the default list lacks or a render option.
BUDGET_RUNS: tuple[tuple[str, str], ...] = (
    ("bilingual-query.txt", "<repo>/fixtures/bilingual_report.pdf --budget 120 --query 'What was the Q3 revenue?'"),
    ("bilingual-head-tail.md", "<repo>/fixtures/bilingual_report.pdf --budget 150 --strategy head-tail -f markdown"),
    ("chat-budget.json", "<repo>/fixtures/chat_history.json --budget 60"),
    ("noisy-tokenizer.txt", "<repo>/fixtures/noisy_upload.txt --budget 100000"),
    ("dmca-head.txt", "<corpus>/dmca_copyright_office_summary_18p.pdf --budget 400 --no-ocr"),
    ("resume-query.txt", "<corpus>/zh_resume_near_duplicate_paragraphs_2p.pdf --budget 200 --query 项目经验 --no-ocr"),
    ("epa-html.md", "<corpus>/epa_spanning_cells.pdf --table-policy html -f markdown --no-ocr"),
    ("epa-fill.md", "<corpus>/epa_spanning_cells.pdf --table-policy fill -f markdown --no-ocr"),
    ("yancheng.md", "<corpus>/zh_yancheng_bond_prospectus_tables_1p.pdf -f markdown --no-ocr"),
)


def budget_case() -> dict[str, str]:
    corpus = _need(CORPUS, "shared corpus")
    files: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, line in BUDGET_RUNS:
            args = shlex.split(line.replace("<corpus>", str(corpus)).replace("<repo>", str(ROOT)))
            out, report = Path(tmp) / name, Path(tmp) / (name + ".report")
            code, stderr = _clean([*args, "-o", str(out), "--report", str(report)])
            if code != 0:
                raise AssertionError(f"clean {line}: exit {code}: {stderr}")
            files[name] = _placeholders(out.read_text(encoding="utf-8"))
            files[name + ".report.json"] = _report_json(json.loads(report.read_text(encoding="utf-8")))
    return files


# (file, pages, tesseract languages, dpi): scans whose pages cover rotation, CJK joining and a garbage text layer.
OCR_PAGES: tuple[tuple[str, tuple[int, ...], str, int], ...] = (
    ("linn_sequencer_cardinal_rotations_4p.pdf", (2,), "eng", 150),
    ("zh_cv_book_titlepage_scan_1p.pdf", (1,), "chi_sim+eng", 200),
    ("memo_scan_garbage_ocr_layer.pdf", (1,), "eng", 150),
)


def ocr_case() -> dict[str, str]:
    corpus = _need(CORPUS, "shared corpus")
    if shutil.which("tesseract") is None:
        raise Unavailable("tesseract not installed")
    from docsan.config import Config
    from docsan.extract.pdf import load_pdf
    from docsan.pipeline import Pipeline

    files: dict[str, str] = {}
    for name, pages, lang, dpi in OCR_PAGES:
        config = Config().with_overrides(extract={"lang": lang, "dpi": dpi})
        result = Pipeline.from_config(config).run(load_pdf(corpus / name, config.extract, pages=pages))
        files[name + ".txt"] = result.text + "\n"
        files[name + ".report.json"] = _report_json(result.report.to_dict())
    return files


@dataclass(frozen=True)
class Case:
    name: str
    produce: Callable[[], dict[str, str]]


CASES = (
    Case("corpus", corpus_case),
    Case("fixtures", fixtures_case),
    Case("hostile-text", hostile_text_case),
    Case("budget", budget_case),
    Case("ocr", ocr_case),
)


def stored(case: str) -> dict[str, str]:
    folder = GOLDEN / case
    if not folder.is_dir():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir()) if p.is_file()}


def write(case: str, files: dict[str, str]) -> None:
    folder = GOLDEN / case
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def differences(case: str, files: dict[str, str]) -> list[str]:
    """One line per golden file of ``case`` that is new, gone or different."""
    old = stored(case)
    lines = []
    for name in sorted(old.keys() | files.keys()):
        if name not in files:
            lines.append(f"tests/golden/{case}/{name}: no longer produced")
        elif name not in old:
            lines.append(f"tests/golden/{case}/{name}: new output (not in the golden set)")
        elif old[name] != files[name]:
            lines.append(f"tests/golden/{case}/{name}: changed")
    return lines


# Differences listed by --write before the rest is only counted.
_LISTED = 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check or regenerate the golden clean outputs (tests/golden/).")
    parser.add_argument("--write", action="store_true", help="write the current outputs as the new golden files")
    parser.add_argument("cases", nargs="*", help=f"cases to run (default: all): {', '.join(c.name for c in CASES)}")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if not args.cases or c.name in args.cases]
    unknown = set(args.cases) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    status = 0
    for case in chosen:
        try:
            files = case.produce()
        except Unavailable as why:
            print(f"{case.name}: skipped ({why})")
            continue
        diff = differences(case.name, files)
        if args.write:
            write(case.name, files)
            print(f"{case.name}: wrote {len(files)} files ({len(diff)} differed from the stored ones)")
            for line in diff[:_LISTED]:
                print("  " + line)
        elif diff:
            status = 1
            print(f"{case.name}: {len(diff)} differences", *("  " + line for line in diff), sep="\n")
        else:
            print(f"{case.name}: {len(files)} files identical")
    return status


if __name__ == "__main__":
    sys.exit(main())
