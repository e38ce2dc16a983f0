"""What the normalize and reflow stages cost, against plain PyMuPDF extraction.

Run: python bench/bench_normalize.py  (prints JSON)

For every text-layer PDF of the shared corpus, in the same run:
- ``get_text_s``: PyMuPDF ``page.get_text()`` over all pages (the baseline the
  issue names);
- ``extract_s``: docsan's own extraction (``docsan.extract.load``, no OCR);
- ``normalize_s`` / ``reflow_s``: the two stages on the extracted documents.
The ratios say how much the stages add on top of extraction; the adversarial
case checks that the stages stay linear on a pathological input.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# This checkout's docsan, not whatever an installed one points at.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import corpus_dir, floor_seconds, manifest  # noqa: E402
from docsan.config import Config, ExtractConfig  # noqa: E402
from docsan.extract import load  # noqa: E402
from docsan.model import Block, Document, DocumentKind, Page, Source  # noqa: E402
from docsan.pipeline import Pipeline  # noqa: E402


def _text_layer_files() -> list[Path]:
    corpus = corpus_dir()
    if corpus is None:
        raise SystemExit("shared corpus not found (set DOCSAN_SHARED)")
    # Every file with a text layer, the partly garbage one too: normalize meets its mojibake.
    return sorted(f.path for f in manifest(corpus) if f.text_layer.startswith("yes"))


def _adversarial() -> Document:
    # Long runs of what the patterns look at: spaces, CJK separated by
    # spaces, zero-width characters, hyphens at line ends, lines of one word.
    text = (
        " " * 200_000
        + "x"
        + "费 " * 50_000
        + "\u200b" * 100_000
        + ("a" * 5000 + "-\n") * 40
        + "\U0001f468\u200d" * 20_000
    )
    return Document(pages=(Page(1, (Block(text, source=Source.TEXT_LAYER),)),), kind=DocumentKind.PDF)


def run() -> dict[str, float | int]:
    pipeline = Pipeline.from_config(Config(stages=("normalize", "reflow")))
    adversarial = _adversarial()
    t0 = time.perf_counter()
    worst = pipeline.run(adversarial)
    adversarial_s = time.perf_counter() - t0
    files = _text_layer_files()
    get_text_s, pages = floor_seconds(files, repeat=1)
    extract = ExtractConfig(ocr="never")
    t0 = time.perf_counter()
    docs = [load(f, extract) for f in files]
    extract_s = time.perf_counter() - t0
    stage_s = {"normalize": 0.0, "reflow": 0.0}
    chars = 0
    for doc in docs:
        result = pipeline.run(doc)
        chars += len(doc.text)
        for report in result.report.stages:
            stage_s[report.stage] += report.seconds
    stages_s = stage_s["normalize"] + stage_s["reflow"]
    return {
        "files": len(files),
        "pages": pages,
        "chars": chars,
        "get_text_s": round(get_text_s, 3),
        "extract_s": round(extract_s, 3),
        "normalize_s": round(stage_s["normalize"], 3),
        "reflow_s": round(stage_s["reflow"], 3),
        "stages_over_get_text": round(stages_s / get_text_s, 3),
        "stages_over_extract": round(stages_s / extract_s, 3),
        "stage_mb_per_s": round(chars / stages_s / 1e6, 3),
        "adversarial_chars": len(adversarial.text),
        "adversarial_s": round(adversarial_s, 3),
        **{f"adversarial_{s.stage}_s": round(s.seconds, 3) for s in worst.report.stages},
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
