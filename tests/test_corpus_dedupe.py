"""Cross-document dedup (``--corpus-dedupe``): paragraphs an earlier document holds go, named; reruns are stable.

The later documents are made from a real PDF's cleaned text (copied
paragraphs, one with a word changed, one new), the index is a real SQLite
file or a real redis-server (tests/conftest.py starts one on a free port).
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from docsan.batch import clean_input
from docsan.config import Config
from docsan.corpus.dedupe import STAGE, CorpusDedupe, document_digest
from docsan.corpus.index import NewParagraph, open_index
from docsan.errors import ConfigError
from docsan.text.paragraphs import split_paragraphs

NO_OCR = Config().with_overrides(extract={"ocr": "never"})
SOURCE = "dmca_copyright_office_summary_18p.pdf"


@pytest.fixture(scope="module")
def dmca_paragraphs(corpus: Path) -> list[str]:
    """The long paragraphs of a real PDF, as docsan cleans it."""
    outcome = clean_input(corpus / SOURCE, NO_OCR)
    assert outcome.result is not None
    return [p for p in split_paragraphs(outcome.result.text) if len(p) > 200 and "|" not in p]


@pytest.fixture
def inputs(tmp_path: Path, corpus: Path, dmca_paragraphs: list[str]) -> Path:
    """a.pdf (the real PDF), b.txt (two of its paragraphs, one edited, a new one), c.md (a heading, a short line)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.pdf").write_bytes((corpus / SOURCE).read_bytes())
    first, second = dmca_paragraphs[2], dmca_paragraphs[5]
    words = second.split()
    words[len(words) // 2] = "substantially"
    new = "This paragraph was written for this test and appears in no other document of the corpus at all."
    (folder / "b.txt").write_text("\n\n".join([first, " ".join(words), new]) + "\n", encoding="utf-8")
    (folder / "c.md").write_text("# Copyright Office Summary\n\nSee the summary.\n\n" + first + "\n", encoding="utf-8")
    return folder


def _run(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["clean", "--no-ocr", *args])
    return result.exit_code, result.stderr


def _reports(path: Path) -> dict[str, dict]:
    return {Path(r["source"]).name: r for r in json.loads(path.read_text(encoding="utf-8"))}


def _stage(report: dict) -> dict:
    (stage,) = [s for s in report["stages"] if s["stage"] == STAGE]
    return stage


def _removed(report: dict) -> list[dict]:
    return [c for c in _stage(report)["changes"] if c["code"] == "corpus_dedupe.paragraph"]


def _findings(report: dict) -> list[dict]:
    return [c for c in _stage(report)["changes"] if c["code"] == "corpus_dedupe.duplicate_document"]


def test_paragraphs_of_an_earlier_document_go_named_by_document_and_page(inputs: Path, tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"
    code, stderr = _run([str(inputs), "-o", str(out), "--report", str(report), "--corpus-dedupe"])
    assert code == 0, stderr
    reports = _reports(report)
    assert _stage(reports["a.pdf"])["changes"] == []  # the first document keeps everything
    reasons = sorted(c["reason"] for c in _removed(reports["b.txt"]))
    assert len(reasons) == 2
    assert reasons[0].startswith(f"paragraph exact duplicate of {inputs / 'a.pdf'} page ")
    assert reasons[1].startswith("paragraph near-duplicate (Jaccard 0.")
    text_b = (out / "b.clean.txt").read_text(encoding="utf-8")
    assert (
        text_b.strip()
        == "This paragraph was written for this test and appears in no other document of the corpus at all."
    )
    # c.md: its heading and its short line are exempt, as in the neardup stage; its copied paragraph goes.
    c = (out / "c.md.txt").read_text(encoding="utf-8")
    assert "Copyright Office Summary" in c and "See the summary." in c
    assert len(_stage(reports["c.md"])["changes"]) == 1
    assert (out / "docsan-index.sqlite").is_file()


def test_a_rerun_on_the_same_index_finds_duplicate_documents_and_writes_the_same(inputs: Path, tmp_path: Path) -> None:
    index = tmp_path / "kb.sqlite"
    runs = []
    for n in (1, 2):
        out, report = tmp_path / f"out{n}", tmp_path / f"report{n}.json"
        code, stderr = _run(
            [str(inputs), "-o", str(out), "--report", str(report), "--corpus-dedupe", "--index", str(index)]
        )
        assert code == 0, stderr
        runs.append(({p.name: p.read_bytes() for p in out.iterdir()}, _reports(report), stderr))
    assert runs[0][0] == runs[1][0]
    for name, second in runs[1][1].items():
        stage = _stage(second)
        assert stage["stats"]["duplicate_document"] == 1
        (finding,) = _findings(second)
        assert finding["kind"] == "finding" and finding["reason"].startswith("duplicate document: the same bytes as")
        assert _removed(second) == _removed(runs[0][1][name])
        assert not _findings(runs[0][1][name])
    assert "duplicate document" in runs[1][2]


def test_the_same_file_under_another_name_is_a_duplicate_document(inputs: Path, tmp_path: Path) -> None:
    (inputs / "z-copy.pdf").write_bytes((inputs / "a.pdf").read_bytes())
    report = tmp_path / "report.json"
    code, _ = _run([str(inputs), "-o", str(tmp_path / "out"), "--report", str(report), "--corpus-dedupe"])
    assert code == 0
    copy = _reports(report)["z-copy.pdf"]
    assert _stage(copy)["stats"]["duplicate_document"] == 1
    assert _findings(copy)[0]["text"] == str(inputs / "a.pdf")
    assert _removed(copy) == []  # compared only with what came before a.pdf: nothing
    assert (tmp_path / "out" / "z-copy.pdf.txt").read_bytes() == (tmp_path / "out" / "a.pdf.txt").read_bytes()


def test_workers_and_one_process_dedupe_the_same(inputs: Path, tmp_path: Path) -> None:
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        code, _ = _run([str(inputs), "-o", str(out), "--corpus-dedupe", "-j", jobs])
        assert code == 0
        outputs.append({p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".sqlite"})
    assert outputs[0] == outputs[1]


def test_an_index_built_with_other_signature_parameters_is_refused(inputs: Path, tmp_path: Path) -> None:
    index = tmp_path / "kb.sqlite"
    CorpusDedupe.open(index, NO_OCR).close()
    other = NO_OCR.with_overrides(options={"neardup": {"num_perm": 64}})
    with pytest.raises(ConfigError, match="num_perm 128 \\(index\\) vs 64 \\(now\\)"):
        CorpusDedupe.open(index, other)
    code, stderr = _run([str(inputs / "b.txt"), "-o", str(tmp_path / "b.txt"), "--corpus-dedupe", "--index", str(index),
                         "--config", str(_toml(tmp_path, "[neardup]\nnum_perm = 64\n"))])  # fmt: skip
    assert code == 2 and "corpus index built with other parameters" in stderr


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "docsan.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_redis_index_gives_what_the_sqlite_index_gives(inputs: Path, tmp_path: Path, redis_url: str) -> None:
    outputs = []
    for n, index in enumerate((str(tmp_path / "kb.sqlite"), f"{redis_url}?prefix=test-same:")):
        out, report = tmp_path / f"out{n}", tmp_path / f"report{n}.json"
        code, stderr = _run([str(inputs), "-o", str(out), "--report", str(report), "--corpus-dedupe", "--index", index])
        assert code == 0, stderr
        changes = {name: _stage(r)["changes"] for name, r in _reports(report).items()}
        outputs.append(({p.name: p.read_bytes() for p in out.iterdir()}, changes))
    assert outputs[0] == outputs[1]


def test_redis_index_under_concurrent_writers_keeps_every_paragraph_once(redis_url: str) -> None:
    url = f"{redis_url}?prefix=test-concurrent:"
    writers, docs_each, paras_each = 4, 10, 20

    def write(w: int) -> None:
        index = open_index(url)
        for d in range(docs_each):
            paragraphs = [
                NewParagraph(f"shared-{p}".encode(), (f"band-{p}".encode(),), f"page {p}", f"text {w} {d} {p}")
                for p in range(paras_each)
            ]
            index.add(f"digest-{w}-{d}", f"doc-{w}-{d}", paragraphs)
            index.add("digest-everyone", f"doc-{w}", paragraphs[:1])  # the same document from every writer
        index.close()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    index = open_index(url)
    docs = [index.document(f"digest-{w}-{d}") for w in range(writers) for d in range(docs_each)]
    ranges = sorted((d.first, d.end) for d in docs if d is not None)
    assert len(ranges) == writers * docs_each
    # Every writer got its own id range: no two documents share an id.
    assert all(a_end <= b_first for (_, a_end), (b_first, _) in itertools.pairwise(ranges))
    ids = [i for first, end in ranges for i in range(first, end)]
    assert len(index.paragraphs(ids)) == writers * docs_each * paras_each
    # One owner per exact key, and every band holds every writer's paragraphs.
    (owner,) = index.exact([b"shared-0"])
    assert owner in ids or owner == index.document("digest-everyone").first
    (bucket,) = index.candidates([[b"band-3"]])
    assert len(bucket) == writers * docs_each
    assert index.document("digest-everyone") is not None
    index.close()


def test_document_digest_is_of_the_bytes(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"same")
    b.write_bytes(b"same")
    assert document_digest(a) == document_digest(b)
