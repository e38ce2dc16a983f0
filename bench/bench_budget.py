"""Budget selection time on an 8k-token and a 32k-token document, per strategy.

Documents are built from real corpus paragraphs (Chinese and English), the
budget is a quarter of the document. The baseline, measured in the same run,
is one exact count of the whole document: selection costs a few such counts
(one encode_batch of the units, the binary search of a cut, the final
verification). Run: ``python bench/bench_budget.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_tokens import PDFS, shared_dir  # noqa: E402

from docsan.budget.tokenizer import Tokenizer  # noqa: E402
from docsan.budget.truncate import fit_document  # noqa: E402
from docsan.config import ExtractConfig  # noqa: E402
from docsan.extract import load  # noqa: E402
from docsan.model import Block, Document, Page  # noqa: E402
from docsan.render import render_text  # noqa: E402

SIZES = (8_000, 32_000)
QUERY = "营业收入 净利润 copyright airworthiness directive"
REPEATS = 3


def document(tok: Tokenizer, tokens: int) -> Document:
    """Real paragraphs in page-sized groups until the document holds ``tokens`` tokens."""
    paras: list[str] = []
    for name in PDFS:
        doc = load(shared_dir() / "corpus" / "pdfs" / name, ExtractConfig(ocr="never", tables=False))
        paras += [b.text for _, b in doc.blocks() if b.text.strip()]
    counts = tok.count_batch(paras)
    chosen: list[str] = []
    total = 0
    while total < tokens:
        i = len(chosen) % len(paras)
        chosen.append(paras[i])
        total += counts[i] + 1
    pages = [Page(number=n + 1, blocks=tuple(Block(t) for t in chosen[k : k + 30])) for n, k in
             enumerate(range(0, len(chosen), 30))]  # fmt: skip
    return Document(pages=tuple(pages), name=f"{tokens}-tokens")


def best_of(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """Fastest of REPEATS runs of ``fn(*args, **kwargs)``, in seconds: the least disturbed by other load."""
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return min(times)


def run() -> dict[str, object]:
    tok = Tokenizer.load()
    out: dict[str, object] = {"tokenizer": tok.name}
    for size in SIZES:
        doc = document(tok, size)
        text = render_text(doc)
        exact = tok.count(text)
        budget = exact // 4
        baseline = best_of(tok.count, text)
        row: dict[str, object] = {"tokens": exact, "budget": budget, "one_exact_count_s": round(baseline, 4)}
        for strategy in ("head", "head-tail", "query"):
            query = QUERY if strategy == "query" else None
            result = fit_document(doc, budget, tok, strategy=strategy, query=query)  # type: ignore[arg-type]
            seconds = best_of(fit_document, doc, budget, tok, strategy=strategy, query=query)
            row[strategy] = {
                "seconds": round(seconds, 4),
                "vs_one_exact_count": round(seconds / baseline, 1),
                "tokens_out": result.stats["tokens"],
                "fill": result.stats["fill"],
                "within_budget": tok.count(render_text(result.document)) <= budget,
            }
        out[f"doc_{size // 1000}k"] = row
    return out


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, ensure_ascii=False))
