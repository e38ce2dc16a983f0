"""Which BM25 terms keep the asked fact: stemming and Chinese segmentation, measured before adoption.

docsan adopted the stemmer and kept CJK bigrams (docsan.budget.rank says why).

Four analyzers (docsan.budget.rank with its stemmer and segmenter swapped in
and out), on the same inputs:

- ``words+bigrams``: lowercased words, CJK character bigrams (docsan before);
- ``stems+bigrams``: Snowball (PyStemmer) English stems, CJK bigrams;
- ``words+rjieba``: lowercased words, rjieba's Chinese words;
- ``stems+rjieba``: both.

``stems+bigrams`` is what docsan uses. rjieba comes with the ``bench`` extra.

Inputs: (1) generated chat histories (bench/chat_histories.py), sanitized
once, then trimmed with the query strategy to tight budgets, where the
ranking decides; the measure is the share of histories whose asked fact
survives. (2) The shared corpus: every born-digital PDF, cleaned, with one
planted fact paragraph at several depths, fitted to 5 % of its tokens with
the fact's question as the query; the measure is the share of runs that keep
the fact. (3) The issue's own example: fedreg_2020-17221 with ``--query
"comment deadline"``: the smallest budget that keeps "comments ... by
September 21". (4) Cost:
import time of each library (fresh processes) and the seconds to compute the
terms of a 300-turn history, against the words+bigrams analyzer in the same run.
Run: ``python bench/bench_rank.py [--quick]``.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import chat_histories, common  # noqa: E402
from docsan.api import ChatCleaner, clean_file  # noqa: E402
from docsan.budget import rank  # noqa: E402
from docsan.budget.chat_trim import fit_chat  # noqa: E402
from docsan.budget.tokenizer import Tokenizer  # noqa: E402
from docsan.budget.truncate import fit_document  # noqa: E402
from docsan.chat.shape import message_text, render_messages  # noqa: E402
from docsan.config import Config  # noqa: E402
from docsan.model import Block, Page, Source  # noqa: E402
from docsan.render import render_text  # noqa: E402

ANALYZERS: dict[str, tuple[bool, bool]] = {  # name: (stem, segment)
    "words+bigrams": (False, False),
    "stems+bigrams": (True, False),
    "words+rjieba": (False, True),
    "stems+rjieba": (True, True),
}
CONFIG = Config().with_overrides(extract={"ocr": "never"})
HAN = regex.compile(r"\p{Han}+")


def _rjieba_terms(run: str) -> list[str]:
    """Han runs as rjieba's words (jieba's dictionary in Rust); kana and Hangul stay bigrams."""
    import rjieba  # the bench extra

    return rjieba.cut(run) if HAN.fullmatch(run) else rank._bigrams(run)


@contextmanager
def analyzer(stem: bool, segment: bool) -> Iterator[None]:
    """docsan.budget.rank with its stemmer and/or segmenter replaced by the plain forms."""
    saved = rank._stem, rank._cjk_terms
    rank._TERM_COUNTS.clear()  # its entries were made by another analyzer
    if not stem:
        rank._stem = str.casefold
    if segment:
        rank._cjk_terms = _rjieba_terms
    try:
        yield
    finally:
        rank._stem, rank._cjk_terms = saved
        rank._TERM_COUNTS.clear()


def histories_recall(n: int, budgets: tuple[int, ...], tok: Tokenizer) -> dict[str, object]:
    cleaner = ChatCleaner(tokenizer=tok)
    docs = [(h, cleaner.clean(h.messages).document) for h in chat_histories.histories(n, seed=11)]
    out: dict[str, object] = {"histories": n, "budgets": list(budgets)}
    for name, (stem, segment) in ANALYZERS.items():
        row: dict[str, float] = {}
        with analyzer(stem, segment):
            for budget in budgets:
                hits = {"en": 0, "zh": 0}
                for h, doc in docs:
                    kept = render_messages(fit_chat(doc, budget, tok).document)
                    hits[h.lang] += h.asked.answer in "\n".join(message_text(m) for m in kept)
                counts = {lang: sum(1 for h, _ in docs if h.lang == lang) for lang in hits}
                for lang in hits:
                    row[f"{budget}_{lang}"] = round(hits[lang] / max(1, counts[lang]), 4)
        out[name] = row
    return out


def corpus_recall(positions: int, tok: Tokenizer) -> dict[str, object]:
    corpus = common.corpus_dir()
    assert corpus is not None
    rng = random.Random(5)
    runs = []
    for f in common.text_layer_files(corpus):
        lang = "zh" if f.lang.startswith("zh") else "en"
        doc = clean_file(f.path, CONFIG).document
        if not doc.text.strip():
            continue
        used: set[str] = set()
        for _ in range(positions):
            fact = chat_histories._fact(rng, lang, 0, used)
            pages = list(doc.pages)
            p = rng.randrange(len(pages))
            blocks = list(pages[p].blocks)
            blocks.insert(rng.randint(0, len(blocks)), Block(fact.sentence, source=Source.PLAIN_TEXT))
            pages[p] = Page(pages[p].number, tuple(blocks), pages[p].width, pages[p].height)
            planted = doc.with_pages(pages)
            budget = max(200, tok.count(render_text(planted)) // 20)
            runs.append((f.path.name, lang, planted, fact, budget))
    out: dict[str, object] = {"runs": len(runs), "files": len({r[0] for r in runs})}
    for name, (stem, segment) in ANALYZERS.items():
        hits = {"en": 0, "zh": 0}
        with analyzer(stem, segment):
            for _, lang, planted, fact, budget in runs:
                fitted = fit_document(planted, budget, tok, strategy="query", query=fact.question)
                hits[lang] += fact.answer in render_text(fitted.document)
        counts = {lang: sum(1 for r in runs if r[1] == lang) for lang in hits}
        out[name] = {lang: round(hits[lang] / max(1, counts[lang]), 4) for lang in hits}
    return out


def issue_example(tok: Tokenizer) -> dict[str, object]:
    """The smallest budget (of a few) at which ``--query "comment deadline"`` keeps "September 21"."""
    corpus = common.corpus_dir()
    assert corpus is not None
    doc = clean_file(corpus / "pdfs" / "fedreg_2020-17221_15p.pdf", CONFIG).document
    out: dict[str, object] = {"document_tokens": tok.count(render_text(doc))}
    for name, (stem, segment) in ANALYZERS.items():
        with analyzer(stem, segment):
            kept = [
                b
                for b in (200, 300, 400, 500, 600, 800, 1000)
                if "September 21"
                in render_text(fit_document(doc, b, tok, strategy="query", query="comment deadline").document)
            ]
        out[f"{name}_smallest_budget"] = kept[0] if kept else None
    return out


def import_seconds(module: str, runs: int = 3) -> float:
    """Best of ``runs`` fresh processes: seconds to import ``module`` (and build what its first use needs)."""
    code = f"import time; t = time.perf_counter(); {module}; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(proc.stdout.strip()))
    return round(min(times), 4)


def cost() -> dict[str, object]:
    history = chat_histories.build(3, 300, "zh").messages + chat_histories.build(4, 300, "en").messages
    texts = [message_text(m) for m in history]
    out: dict[str, object] = {
        "import_s": {
            "PyStemmer": import_seconds("import Stemmer; Stemmer.Stemmer('english').stemWord('x')"),
            "rjieba": import_seconds("import rjieba; rjieba.cut('中文')"),
        },
        "chars": sum(map(len, texts)),
    }
    seconds = {}
    for name, (stem, segment) in ANALYZERS.items():
        with analyzer(stem, segment):
            for t in texts:  # warm: the stem cache and the segmenter loaded, as in a server
                rank.terms(t)
            seconds[name] = common.best_of(lambda: [rank.terms(t) for t in texts])
    out["terms_s_two_300_turn_histories"] = {k: round(v, 4) for k, v in seconds.items()}
    out["vs_words+bigrams"] = {k: round(v / seconds["words+bigrams"], 2) for k, v in seconds.items()}
    return out


def run(quick: bool = False) -> dict[str, object]:
    tok = Tokenizer.load()
    return {
        "issue_example_comment_deadline": issue_example(tok),
        "chat_histories_asked_fact_recall": histories_recall(16 if quick else 80, (1500, 3000), tok),
        "corpus_planted_fact_recall": corpus_recall(2 if quick else 6, tok),
        "cost": cost(),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), ensure_ascii=False, indent=2))
