"""Quality: the incident's noise injected at known positions, cleaned by docsan and by the alternatives.

The noisy documents (bench/noise.py) are cleaned as text (.txt, form feeds
between pages) and as PDFs (bench/noise_pdf.py). Cleaners:

- docsan: the whole default pipeline, in this process (``docsan.clean_file``);
- the incident's own ``TextSanitizer`` (bench/seed_sanitizer.py, a
  reconstruction; on a PDF after plain PyMuPDF extraction, as the incident's
  service did), in a child process with a time-out: its regex is quadratic;
- Unstructured: ``partition_text`` (or ``partition_pdf(strategy="fast")``
  with its Header/Footer/PageNumber elements dropped), then
  ``group_broken_paragraphs`` and ``clean_extra_whitespace`` on every element,
  in the separate venv .venv-bench/;
- for PDFs also pymupdf4llm ``to_markdown(header=False, footer=False)`` and,
  as the reference, plain PyMuPDF ``get_text()``.

Also here: tokens of every text-layer corpus file after extraction and after
each docsan stage, so a reader sees where the savings come from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import regex

from bench import noise, noise_pdf
from bench.common import ROOT, CorpusFile, count_tokens, seed_dir, tokenizer_name
from bench.tools_speed import QUIET_ENV, unstructured_python
from docsan.config import DEFAULT_STAGES, Config

# Clean prose for the English documents: body paragraphs of two corpus files.
EN_SOURCES = ("dmca_copyright_office_summary_18p.pdf", "fedreg_2020-17221_15p.pdf")
_HAN = regex.compile(r"\p{Han}")
_SPACES = regex.compile(r"\s+")


def english_base(corpus: Path) -> list[str]:
    """Paragraphs (PyMuPDF text blocks) of the English sources that occur once and look like prose."""
    import pymupdf

    paragraphs: list[str] = []
    for name in EN_SOURCES:
        blocks = []
        with pymupdf.open(corpus / "pdfs" / name) as doc:
            for page in doc:
                blocks += [b[4] for b in page.get_text("blocks") if b[6] == 0]
        seen: dict[str, int] = {}
        for b in blocks:
            seen[b] = seen.get(b, 0) + 1
        for b in blocks:
            text = _clean_base(b)
            letters = sum(c.isalpha() for c in text)
            if seen[b] == 1 and len(text) >= 120 and letters >= 0.7 * len(text):
                paragraphs.append(text)
    return list(dict.fromkeys(paragraphs))


def chinese_base() -> list[str]:
    """Chinese prose paragraphs of the incident report in ../shared/seed/.

    The shared corpus's Chinese PDFs are tables, scans and a fake-bold cover,
    with hardly a paragraph of running prose; the incident report is the one
    clean Chinese text the project shares, so it is the base here.
    """
    folder = seed_dir()
    if folder is None:
        return []
    paragraphs = []
    for path in sorted(folder.glob("*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = _clean_base(line)
            han = len(_HAN.findall(text))
            # Prose lines only: no code, no tables, no quoted noise samples.
            if line.startswith(" ") or "|" in text or "\\x" in text or len(text) < 15 or han < 0.4 * len(text):
                continue
            paragraphs.append(text)
    return list(dict.fromkeys(paragraphs))


def _clean_base(text: str) -> str:
    text = "".join(c for c in text if c not in noise.INVISIBLE and c != "|")
    text = text.replace("-\n", "-")
    return _SPACES.sub(" ", text).strip()


# --- cleaners -----------------------------------------------------------------
# Each runs on a file (the noisy .txt, or its PDF rendering) and writes its
# output text to argv[2]; argv[3] is the repository root.

_SEED = """
import sys
sys.path.insert(0, sys.argv[3])
from bench.seed_sanitizer import TextSanitizer
if sys.argv[1].endswith(".pdf"):
    import pymupdf
    with pymupdf.open(sys.argv[1]) as doc:
        text = "\\n".join(page.get_text() for page in doc)
else:
    text = open(sys.argv[1], encoding="utf-8", newline="").read()
open(sys.argv[2], "w", encoding="utf-8", newline="").write(TextSanitizer().clean(text))
"""
_UNSTRUCTURED_TEXT = """
import sys
from unstructured.partition.text import partition_text
from unstructured.cleaners.core import clean_extra_whitespace, group_broken_paragraphs
text = open(sys.argv[1], encoding="utf-8", newline="").read()
elements = partition_text(text=group_broken_paragraphs(text))
out = "\\n\\n".join(clean_extra_whitespace(e.text) for e in elements)
open(sys.argv[2], "w", encoding="utf-8", newline="").write(out)
"""
# What a user who wants clean text does with partition_pdf: drop the elements
# it labels as furniture, then apply the cleaners.
_UNSTRUCTURED_PDF = """
import sys
from unstructured.partition.pdf import partition_pdf
from unstructured.cleaners.core import clean_extra_whitespace, group_broken_paragraphs
elements = partition_pdf(filename=sys.argv[1], strategy="fast")
keep = [e for e in elements if e.category not in ("Header", "Footer", "PageNumber")]
out = "\\n\\n".join(clean_extra_whitespace(group_broken_paragraphs(e.text)) for e in keep)
open(sys.argv[2], "w", encoding="utf-8", newline="").write(out)
"""
_PYMUPDF4LLM = """
import sys, pymupdf4llm
md = pymupdf4llm.to_markdown(sys.argv[1], header=False, footer=False, use_ocr=False)
open(sys.argv[2], "w", encoding="utf-8", newline="").write(md)
"""
_PLAIN = """
import sys, pymupdf
with pymupdf.open(sys.argv[1]) as doc:
    text = "\\n".join(page.get_text() for page in doc)
open(sys.argv[2], "w", encoding="utf-8", newline="").write(text)
"""

Cleaner = Callable[[Path], tuple[str | None, float, str]]


def _child(python: str, code: str, src: Path, *, cwd: Path, timeout_s: float) -> tuple[str | None, float, str]:
    """Run a cleaner snippet on the file ``src`` in a child process: (output or None, seconds, status)."""
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "out.txt"
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [python, "-c", code, str(src), str(dst), str(ROOT)],
                cwd=cwd,
                env={**os.environ, **QUIET_ENV},
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t0, f"timed out after {timeout_s:.0f} s"
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:]
            return None, seconds, f"failed: {tail[0][:200] if tail else proc.returncode}"
        return dst.read_text(encoding="utf-8"), seconds, "ok"


def clean_docsan(src: Path) -> tuple[str, float, str]:
    """The whole default pipeline in this process (``docsan.clean_file``: .txt form feeds are page breaks)."""
    import docsan

    t0 = time.perf_counter()
    result = docsan.clean_file(src, Config())
    return result.text, time.perf_counter() - t0, "ok"


def cleaners(pdf: bool, timeout_s: float, skip: frozenset[str] = frozenset()) -> dict[str, tuple[str, Cleaner]]:
    """Name -> (label, cleaner) for the text or the PDF version of a document, less those in ``skip``."""
    here = sys.executable

    def child(python: str, code: str, cwd: Path = ROOT) -> Cleaner:
        return lambda src: _child(python, code, src, cwd=cwd, timeout_s=timeout_s)

    out: dict[str, tuple[str, Cleaner]] = {}
    if pdf:
        out["plain"] = ("PyMuPDF get_text(), no cleaning (reference)", child(here, _PLAIN))
    out["docsan"] = (f"docsan ({', '.join(DEFAULT_STAGES)})", clean_docsan)
    seed_label = "PyMuPDF get_text() + incident TextSanitizer" if pdf else "incident TextSanitizer (reconstructed)"
    out["seed"] = (seed_label, child(here, _SEED))
    if pdf:
        out["pymupdf4llm"] = ("pymupdf4llm to_markdown(header=False, footer=False)", child(here, _PYMUPDF4LLM))
    python = unstructured_python()
    if python is not None:
        cwd = python.parent.parent / "spacy-models"
        if pdf:
            label = 'Unstructured partition_pdf("fast"), Header/Footer/PageNumber dropped, + cleaners'
            out["unstructured"] = (label, child(str(python), _UNSTRUCTURED_PDF, cwd))
        else:
            label = "Unstructured partition_text + group_broken_paragraphs + clean_extra_whitespace"
            out["unstructured"] = (label, child(str(python), _UNSTRUCTURED_TEXT, cwd))
    return {k: v for k, v in out.items() if k not in skip}


def documents(corpus: Path | None) -> list[noise.NoisyDocument]:
    docs = []
    # Eight pages of at most three base paragraphs each: big enough for every
    # kind of noise, small enough (under 8,000 tokens noisy) that the seed's
    # truncation does not decide its score.
    sources = [("zh", chinese_base())]
    if corpus is not None:
        sources.append(("en", english_base(corpus)))
    for lang, base in sources:
        per_page = min(3, len(base) // 8)
        if per_page >= 2:
            docs.append(noise.build(base, lang, pages=8, per_page=per_page))
    return docs


def run_quality(corpus: Path | None, *, timeout_s: float = 300, skip: frozenset[str] = frozenset(), log=print) -> dict:
    """Every cleaner on every noisy document, as text (.txt with form feeds) and as a PDF."""
    results = []
    with tempfile.TemporaryDirectory(prefix="docsan-quality-") as tmp:
        for doc in documents(corpus):
            txt = Path(tmp) / f"{doc.name}.txt"
            txt.write_text(doc.noisy, encoding="utf-8", newline="")
            results.append(_score_all(doc, txt, doc.noisy, cleaners(False, timeout_s, skip), log))
            if "pdf" in skip:
                continue
            pdf = noise_pdf.write_pdf(doc, Path(tmp) / f"{doc.name}.pdf")
            version = noise_pdf.pdf_version(doc)
            results.append(_score_all(version, pdf, _plain_text(pdf), cleaners(True, timeout_s, skip), log))
    return {"documents": results}


def _plain_text(pdf: Path) -> str:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return "\n".join(page.get_text() for page in doc)


def _score_all(doc: noise.NoisyDocument, src: Path, before: str, tools: dict, log) -> dict:
    entry = {
        "document": doc.name,
        "lang": doc.lang,
        "input": src.suffix.lstrip("."),
        "chars": len(before),
        "tokens_noisy": count_tokens(before),
        "tokens_ideal": count_tokens(doc.ideal),
        "facts": len(doc.facts),
        "injected": _injected(doc),
        "cleaners": [],
    }
    for name, (label, fn) in tools.items():
        log(f"quality: {doc.name} with {name}")
        output, seconds, status = fn(src)
        row: dict = {"name": name, "label": label, "seconds": round(seconds, 3), "status": status}
        if output is not None:
            s = noise.score(doc, output)
            row.update(
                noise_removed=round(s.noise_removed, 4),
                noise_removed_macro=round(s.noise_removed_macro, 4),
                facts_kept=round(s.facts_kept, 4),
                facts_lost=s.facts_lost,
                originals_lost=s.originals_lost,
                originals=sum(1 for c in doc.checks if c.kind in noise.KEEP_ONE),
                tokens_after=count_tokens(output),
                by_kind={k: round(v["removed"], 4) for k, v in s.by_kind.items()},
            )
        entry["cleaners"].append(row)
    return entry


def _injected(doc: noise.NoisyDocument) -> dict[str, int]:
    out: dict[str, int] = {}
    for check in doc.checks:
        out[check.kind] = out.get(check.kind, 0) + check.injected
    return out


# --- tokens per stage on the corpus -------------------------------------------


def stage_tokens(files: list[CorpusFile], *, log=print) -> dict:
    """Tokens of every file after extraction and after each docsan stage (no OCR)."""
    import pymupdf

    from docsan.config import ExtractConfig
    from docsan.extract import load
    from docsan.pipeline import Pipeline
    from docsan.render import render_text

    config = Config()
    pipeline = Pipeline.from_config(config)
    extract = ExtractConfig(ocr="never")
    rows = []
    for f in files:
        log(f"quality: tokens per stage, {f.path.name}")
        with pymupdf.open(f.path) as pdf:
            plain = count_tokens("".join(page.get_text() for page in pdf))
        doc = load(f.path, extract)
        counts = [("extracted", count_tokens(render_text(doc)))]
        for stage in pipeline.stages:
            doc = stage(doc).document
            counts.append((stage.name, count_tokens(render_text(doc))))
        rows.append({"file": f.path.name, "pages": f.pages, "plain_get_text": plain, "tokens": dict(counts)})
    return {"stages": [s.name for s in pipeline.stages], "files": rows}


def run(
    corpus: Path | None,
    files: list[CorpusFile],
    *,
    timeout_s: float = 300,
    skip: frozenset[str] = frozenset(),
    log=print,
) -> dict:
    return {
        **run_quality(corpus, timeout_s=timeout_s, skip=skip, log=log),
        **stage_tokens(files, log=log),
        "stages_available": list(DEFAULT_STAGES),
        "tokenizer": tokenizer_name(),
    }


if __name__ == "__main__":
    from bench.common import corpus_dir, text_layer_files

    c = corpus_dir()
    print(json.dumps(run(c, text_layer_files(c) if c else []), ensure_ascii=False, indent=2))
