"""``--engine ray``: a real local Ray instance cleans a corpus subset byte for byte as ``--jobs 1`` does.

One Ray instance (``ray.init(num_cpus=2)``, a small object store) serves
this module and is shut down after it: Ray's start-up (about 10 s on the
shared 2-core machine) is paid once, and only by these tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.batch import clean_input, render_output
from docsan.config import Config

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

NO_OCR = Config().with_overrides(extract={"ocr": "never"})
# Broken files (a failing document must be reported, not end the run) and real ones, CJK and tables among them.
SUBSET = (
    "broken_not_a_pdf.pdf",
    "epa_spanning_cells.pdf",
    "broken_encrypted_userpw_4p.pdf",
    "zh_lab_report_table_1p.pdf",
    "zh_resume_near_duplicate_paragraphs_2p.pdf",
    "dmca_copyright_office_summary_18p.pdf",
)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, object_store_memory=150 * 1024**2, include_dashboard=False, logging_level="WARNING")
    try:
        yield
    finally:
        ray.shutdown()


def _run(args: list[str], tmp: Path, tag: str) -> tuple[int, str, dict[str, bytes], list]:
    out, report = tmp / f"out-{tag}", tmp / f"report-{tag}.json"
    result = CliRunner().invoke(app, ["clean", "--no-ocr", *args, "-o", str(out), "--report", str(report)])
    reports = json.loads(report.read_text(encoding="utf-8"))
    for entry in reports:
        for stage in entry["stages"]:
            stage.pop("seconds")
    return result.exit_code, result.stderr, {p.name: p.read_bytes() for p in sorted(out.iterdir())}, reports


def test_ray_gives_what_one_process_gives_and_a_bad_file_is_reported(
    local_ray: None, corpus: Path, tmp_path: Path
) -> None:
    files = [str(corpus / name) for name in SUBSET]
    one = _run([*files, "--jobs", "1"], tmp_path, "one")
    on_ray = _run([*files, "--engine", "ray"], tmp_path, "ray")
    assert on_ray == one
    code, stderr, outputs, _ = on_ray
    assert code == 1 and "broken_not_a_pdf.pdf: not a PDF or damaged beyond repair" in stderr
    assert len(outputs) == len(SUBSET) - 2  # every readable document was written


def test_clean_dataset_turns_binary_rows_into_text_and_report_rows(local_ray: None, corpus: Path) -> None:
    from docsan.corpus.ray_engine import clean_dataset

    files = [str(corpus / "zh_lab_report_table_1p.pdf"), str(corpus / "broken_not_a_pdf.pdf")]
    ds = ray.data.read_binary_files(files, include_paths=True)
    rows = {Path(r["path"]).name: r for r in clean_dataset(ds, NO_OCR).take_all()}
    expected = clean_input(Path(files[0]), NO_OCR)
    assert expected.result is not None
    good = rows["zh_lab_report_table_1p.pdf"]
    assert good["error"] is None and good["text"] == render_output(expected.result)
    assert json.loads(good["report"])["source"] == good["path"]
    bad = rows["broken_not_a_pdf.pdf"]
    assert bad["text"] is None and bad["error"] == f"{bad['path']}: not a PDF or damaged beyond repair"


def test_a_uri_input_is_read_by_the_task_and_reported_under_its_uri(
    local_ray: None, corpus: Path, tmp_path: Path
) -> None:
    # file:// goes through pyarrow.fs as s3:// or gs:// do; the CLI's Path turns "file:///x" into "file:/x".
    good, bad = corpus / "zh_lab_report_table_1p.pdf", tmp_path / "missing.pdf"
    out = tmp_path / "out"
    args = ["clean", "--no-ocr", f"file://{good}", f"file://{bad}", "--engine", "ray", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 1
    assert f"file://{bad}: cannot read from the object store" in result.stderr
    (report,) = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["source"] == f"file://{good}"
    expected = clean_input(good, NO_OCR)
    assert expected.result is not None
    (written,) = out.iterdir()
    assert written.read_text(encoding="utf-8") == render_output(expected.result) + "\n"


def test_without_ray_the_flag_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, fixtures_dir: Path) -> None:
    import builtins

    real_import = builtins.__import__

    def no_ray(name: str, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    result = CliRunner().invoke(app, ["clean", str(fixtures_dir / "noisy_upload.txt"), "--engine", "ray"])
    assert result.exit_code == 2
    assert "--engine ray needs Ray: pip install 'docsan[ray]'" in result.stderr
