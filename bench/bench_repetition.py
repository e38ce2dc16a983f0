"""Repetition and furniture that survive cleaning, before and after issue 16's rules, in the same run.

Builds short documents (1-5 A5 pages, bench/repetition_docs.py) from the
shared corpus's prose with copies split at different paragraph boundaries,
page breaks inside copies and paragraphs, running heads and page numbers,
planted facts and legitimate repeats; writes each as a PDF and as a text file
(bench/repetition_layout.py); cleans both with docsan twice:

* ``before``: the behaviour before issue 16 (span repeats, page-break
  rejoining and the short-document furniture rules switched off);
* ``after``: the default configuration.

Reports, per input format and in all, the share of the injected repeated
text and of the furniture lines still in the output, the planted facts and
legitimate repeats lost, the paragraphs a page break cut that are still cut,
and the corpus's negative guards (``ca_warn``'s "Layoff Permanent" rows and
``zh_yancheng``'s rating, repeated in four rows) before and after cleaning.

    .venv/bin/python -m bench.bench_repetition [--docs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pymupdf  # noqa: E402
import regex  # noqa: E402

from bench import quality, repetition_docs, repetition_layout  # noqa: E402
from bench.common import corpus_dir  # noqa: E402
from bench.noise import squash  # noqa: E402

PAGES = (1, 2, 3, 4, 5)
LANGS = ("zh", "en")
# The options that switch issue 16's rules off: the behaviour before it.
BEFORE = {
    "neardup": {"spans": False, "boilerplate": False},
    "reflow": {"join_pages": False},
    "furniture": {"short_documents": False},
}
_HAN = regex.compile(r"\p{Han}")
GUARDS = (
    ("ca_warn_report_16p.pdf", "Layoff Permanent"),
    ("zh_yancheng_bond_prospectus_tables_1p.pdf", "偿还债务的能力很强，受不利经济环境的影响不大，违约风险很低"),
)


def chinese_base(corpus: Path | None) -> list[str]:
    """The incident report's Chinese prose, and the corpus's Chinese quarterly report's prose regrouped.

    The report's prose comes as PDF blocks that cut sentences at line ends;
    its sentences are joined again and regrouped three to a paragraph.
    """
    out = quality.chinese_base()
    if corpus is not None:
        text = []
        with pymupdf.open(corpus / "pdfs" / "zh_dbdq_2018q1_report_22p.pdf") as pdf:
            for page in pdf:
                for block in page.get_text("blocks"):
                    piece = block[4].replace("\n", "").strip()
                    if block[6] == 0 and len(_HAN.findall(piece)) >= 0.6 * len(piece) and "□" not in piece:
                        text.append(piece)
        found = [s for s in repetition_docs.sentences("".join(text), "zh") if len(s) >= 20]
        out += ["".join(found[i : i + 3]) for i in range(0, len(found), 3)]
    return list(dict.fromkeys(out))


def documents(corpus: Path | None, per_size: int) -> list[repetition_docs.BenchDocument]:
    bases = {"zh": chinese_base(corpus), "en": quality.english_base(corpus) if corpus else []}
    if not all(bases.values()):
        raise SystemExit("bench_repetition: the shared corpus and seed are needed for the base prose")
    out = []
    for lang in LANGS:
        for pages in PAGES:
            for seed in range(per_size):
                # Fill about ``pages`` pages: shrink the text until the layout needs no more.
                scale = 1.0
                doc = repetition_docs.build(bases[lang], lang, pages, seed, scale=scale)
                while repetition_layout.lay_out(doc).page_count > pages and scale > 0.2:
                    scale *= 0.85
                    doc = repetition_docs.build(bases[lang], lang, pages, seed, scale=scale)
                out.append(doc)
    return out


def _config(before: bool):
    from docsan.config import Config

    config = Config()
    return config.with_overrides(options=BEFORE) if before else config


def _totals(scores: list[repetition_docs.Score]) -> dict:
    repeat_chars = sum(s.repeat_chars for s in scores)
    furniture = sum(s.furniture_lines for s in scores)
    cut = sum(s.cut_paragraphs for s in scores)
    return {
        "documents": len(scores),
        "repeat_chars_injected": repeat_chars,
        "repeat_left": round(sum(s.repeat_left for s in scores) / repeat_chars, 4) if repeat_chars else 0.0,
        "furniture_lines_injected": furniture,
        "furniture_left": round(sum(s.furniture_left for s in scores) / furniture, 4) if furniture else 0.0,
        "facts_planted": sum(s.facts for s in scores),
        "facts_lost": sum(len(s.facts_lost) for s in scores),
        "legit_repeats": sum(s.legit for s in scores),
        "legit_lost": sum(len(s.legit_lost) for s in scores),
        "cut_paragraphs": cut,
        "cut_left": sum(s.cut_left for s in scores),
    }


def _guards(corpus: Path, config) -> list[dict]:
    import docsan
    from docsan.config import Config

    out = []
    for name, text in GUARDS:
        path = corpus / "pdfs" / name
        extracted = docsan.clean_file(path, Config(stages=())).text
        cleaned = docsan.clean_file(path, config).text
        out.append({"file": name, "text": text, "extracted": extracted.count(text), "cleaned": cleaned.count(text)})
    return out


def _adversarial(kind: str, n: int, prose: str) -> list[str]:
    """Paragraphs of about ``n`` characters in all, of one kind of input the passage finder must stay linear on."""
    rng = random.Random(n)
    if kind == "prose":
        text = (prose * (n // len(prose) + 1))[:n]  # the corpus's prose, copied over and over
    elif kind == "one_char":
        text = "a" * n
    elif kind == "two_chars":
        text = "ab" * (n // 2)
    elif kind == "few_words":  # short repeats everywhere, no long copy: every anchor is a candidate
        words = prose.split()[:20]
        text = " ".join(rng.choice(words) for _ in range(n // 6))[:n]
    else:
        raise ValueError(kind)
    step = 600
    return [text[i : i + step] for i in range(0, len(text), step)]


def scaling(sizes: tuple[int, ...] = (250_000, 500_000, 1_000_000)) -> dict:
    """Seconds of docsan.text.passages.find_passages per input kind and size, best of 3 (CPU time)."""
    from docsan.text.passages import find_passages

    prose = " ".join(quality.english_base(corpus_dir())) if corpus_dir() else "lorem ipsum dolor sit amet " * 100
    out: dict = {}
    for kind in ("prose", "one_char", "two_chars", "few_words"):
        row = {}
        for n in sizes:
            paragraphs = _adversarial(kind, n, prose)
            entries = [(k, p, 0, False) for k, p in enumerate(paragraphs)]
            best = float("inf")
            for _ in range(3):
                t0 = time.process_time()
                find_passages(entries, min_weight=120, piece_weight=40)
                best = min(best, time.process_time() - t0)
            row[str(n)] = round(best, 3)
        values = list(row.values())
        row["ratio_4x_size"] = round(values[-1] / values[0], 2) if values[0] else None
        out[kind] = row
    return out


def run(per_size: int = 4, *, log=None, misses: bool = False) -> dict:
    import docsan

    corpus = corpus_dir()
    docs = documents(corpus, per_size)
    configs = {"before": _config(True), "after": _config(False)}
    scores: dict[str, dict[str, list]] = {k: {"pdf": [], "txt": []} for k in configs}
    by_pages: dict[str, dict[int, list]] = {k: {} for k in configs}
    details: dict[str, list] = {k: [] for k in configs}
    seconds = dict.fromkeys(configs, 0.0)
    pages_set: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="docsan-repetition-") as tmp:
        for doc in docs:
            laid = repetition_layout.lay_out(doc)
            pages_set[laid.page_count] = pages_set.get(laid.page_count, 0) + 1
            pdf = repetition_layout.write_pdf(doc, laid, Path(tmp) / f"{doc.name}.pdf")
            txt = Path(tmp) / f"{doc.name}.txt"
            txt.write_text(repetition_layout.write_text(doc, laid), encoding="utf-8")
            for label, config in configs.items():
                for kind, path in (("pdf", pdf), ("txt", txt)):
                    t0 = time.perf_counter()
                    output = docsan.clean_file(path, config).text
                    seconds[label] += time.perf_counter() - t0
                    s = repetition_docs.score(doc, output, laid.page_count, laid.cut)
                    scores[label][kind].append(s)
                    by_pages[label].setdefault(laid.page_count, []).append(s)
                    if s.facts_lost or s.legit_lost or s.repeat_left or s.furniture_left or s.cut_left:
                        details[label].append(
                            {
                                "document": f"{doc.name}.{kind}",
                                "repeat_left": s.repeat_left,
                                "furniture_left": s.furniture_left,
                                "cut_left": s.cut_left,
                                "facts_lost": s.facts_lost,
                                "legit_lost": [t[:40] for t in s.legit_lost],
                            }
                        )
            if log:
                log(f"repetition: {doc.name} ({laid.page_count} pages)")
    result: dict = {
        "scaling_cpu_s": scaling(),
        "documents": len(docs),
        "pages": {str(k): v for k, v in sorted(pages_set.items())},
        "chars_squashed": sum(len(squash(d.ideal)) for d in docs),
    }
    for label in configs:
        result[label] = {
            "all": _totals(scores[label]["pdf"] + scores[label]["txt"]),
            "pdf": _totals(scores[label]["pdf"]),
            "txt": _totals(scores[label]["txt"]),
            "by_pages": {str(p): _totals(v) for p, v in sorted(by_pages[label].items())},
            "seconds": round(seconds[label], 2),
        }
        if misses:
            result[label]["misses"] = details[label]
        if corpus is not None:
            result[label]["guards"] = _guards(corpus, configs[label])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=4, help="documents per language and page count (default 4)")
    p.add_argument("--misses", action="store_true", help="also list every document with something left or lost")
    args = p.parse_args()
    result = run(args.docs, log=lambda m: print(m, file=sys.stderr), misses=args.misses)
    print(json.dumps(result, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
