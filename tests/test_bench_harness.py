"""The benchmark harness runs end to end on one small corpus file and writes both reports.

Benchmarks are not part of `make test`: this only proves the harness runs
and that the reports hold their sections, as cheaply as it can: one run of
the floor alone (no docsan process, no profile, no micro-benchmark, no
Unstructured), and the quality part with docsan in this process only. What
docsan's own numbers look like is `make bench`'s business.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from bench import report, run_all, tools_speed
from bench.common import CorpusFile, corpus_dir, text_layer_files

pytestmark = pytest.mark.slow

SMALL = "zh_anli_2011_annual_report_cover_fakebold.pdf"


@pytest.fixture(scope="module")
def small_file() -> CorpusFile:
    corpus = corpus_dir()
    if corpus is None:
        pytest.skip("shared corpus not found")
    return next(f for f in text_layer_files(corpus) if f.path.name == SMALL)


@pytest.fixture(scope="module")
def generated(tmp_path_factory, small_file):
    docs = tmp_path_factory.mktemp("docs")
    tools = ["unstructured", "pymupdf_dict", "pymupdf4llm", "pymupdf4llm_nolayout", "pdfplumber", "docsan_ocr"]
    skip = [*tools, "docsan", *run_all.micro_modules()]
    args = ["--runs", "1", "--files", SMALL, "--no-setup", "--docs", str(docs)]
    assert run_all.main([*args, "--only", "speed", "micro", "--skip", *skip]) == 0
    return docs


@pytest.fixture(scope="module")
def quality_docs(tmp_path_factory, small_file):
    # Its own run: "docsan" names both a speed tool and a quality cleaner, and only the tool is left out above.
    docs = tmp_path_factory.mktemp("quality")
    args = ["--files", SMALL, "--no-setup", "--docs", str(docs), "--only", "quality", "--skip", "pdf", "seed"]
    assert run_all.main(args) == 0
    return docs


def test_text_layer_selection_matches_manifest(small_file):
    files = text_layer_files(small_file.path.parent.parent)
    assert all(f.text_layer == "yes" for f in files)
    assert len(files) >= 10
    assert small_file.pages == 1


def test_benchmarks_report_has_its_sections(generated):
    text = (generated / "benchmarks.md").read_text(encoding="utf-8")
    for heading in (
        "## Method",
        "## Whole-process speed on the text-layer corpus",
        "## Micro-benchmarks",
        "## Versions",
    ):
        assert heading in text
    assert "PyMuPDF get_text() (floor)" in text
    assert "skipped (--skip)" in text
    assert (generated / "img" / "pages_per_s.png").stat().st_size > 1000


def test_speed_results_hold_ratios_against_the_floor(generated):
    results = json.loads((generated / "benchmarks.json").read_text(encoding="utf-8"))
    (floor,) = results["speed"]["tools"]
    assert floor["name"] == "pymupdf_text" and floor["status"] == "ok"
    assert floor["time_vs_floor"] == 1.0 and floor["chars"] > 0 and floor["max_rss_mb"] > 10


def test_quality_report_scores_every_cleaner(quality_docs):
    text = (quality_docs / "quality.md").read_text(encoding="utf-8")
    assert "## zh-noisy (zh, txt input)" in text
    assert "## Tokens per corpus file, after extraction and after each stage" in text
    assert SMALL in text
    results = json.loads((quality_docs / "benchmarks.json").read_text(encoding="utf-8"))
    for doc in results["quality"]["documents"]:
        names = {c["name"] for c in doc["cleaners"]}
        assert names == {"docsan"}
        assert all(0.0 <= c["facts_kept"] <= 1.0 for c in doc["cleaners"] if c["status"] == "ok")


def test_missing_micro_benchmark_is_a_note_not_an_error():
    assert run_all.run_micro("bench_does_not_exist", timeout_s=10) == {"status": "module not present on this checkout"}


def test_every_micro_benchmark_has_its_description_line():
    assert [name for name in run_all.micro_modules() if not report.MICRO_TARGETS.get(name)] == []


def test_the_mode_line_says_what_ran():
    micro_only = run_all.mode_line(
        run_all.parse_args(["--only", "micro", "--micro", "bench_tokens"]), {"micro"}, frozenset()
    )
    assert micro_only == "full: micro-benchmarks: bench_tokens (time-out 900 s each)"
    args = run_all.parse_args(["--quick", "--only", "speed"])
    speed = run_all.mode_line(args, {"speed"}, frozenset({"unstructured"}))
    assert (
        speed == "quick: speed: 1 run(s) per tool (1 for the slowest), 1 OCR run(s); time-out 600 s per process; "
        "skipped: unstructured"
    )


def test_micro_results_render_as_a_table():
    micro = {"bench_tokens": {"status": "ok", "seconds": 1.5, "result": {"mb_per_s": {"encode_batch": 3.25}}}}
    text = "\n".join(report._micro_section(micro))
    assert "| `mb_per_s.encode_batch` | 3.250 |" in text


def test_measure_reports_memory_and_kills_on_timeout(tmp_path):
    m = tools_speed.measure(
        [sys.executable, "-c", "x = bytearray(50_000_000); print(len(x))"], cwd=tmp_path, timeout_s=60
    )
    assert m.returncode == 0 and m.stdout.strip() == "50000000"
    assert m.max_rss_mb >= 50
    m = tools_speed.measure([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout_s=1)
    assert m.returncode == -9
    assert m.wall_s < 10


def test_one_micro_benchmark_run_alone_lands_in_the_report_and_keeps_the_rest(generated, tmp_path):
    """`make serve-bench`'s path (bench_serve --docs), on the cheapest real micro-benchmark: its entry lands in
    benchmarks.json and benchmarks.md; what the run did not measure is kept from the previous run, which it names."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (scripts/install-system-deps.sh installs it)")
    docs = tmp_path / "docs"
    shutil.copytree(generated, docs)
    before = json.loads((docs / "benchmarks.json").read_text(encoding="utf-8"))
    assert before["micro"]["bench_ledger"] == {"status": "skipped (--skip)"}
    assert run_all.record("bench_ledger", docs) == 0
    after = json.loads((docs / "benchmarks.json").read_text(encoding="utf-8"))
    entry = after["micro"]["bench_ledger"]
    assert entry["status"] == "ok" and entry["result"]["shapes"]["one_at_a_time"]["redis"]["cycles_per_s"] > 0
    assert after["speed"] == before["speed"]
    others = {k: v for k, v in after["micro"].items() if k != "bench_ledger"}
    assert others == {k: v for k, v in before["micro"].items() if k != "bench_ledger"}
    assert before["date"] in after["kept"] and "--micro bench_ledger --keep-previous" in after["command"]
    text = (docs / "benchmarks.md").read_text(encoding="utf-8")
    assert "### bench_ledger: the shared (Redis) admission ledger" in text
    assert "redis_over_memory" in text and "PyMuPDF get_text() (floor)" in text
