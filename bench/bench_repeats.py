"""The repeats stage against the incident's ``re.sub(r"(.+?)\\1{3,}", r"\\1", text)`` on text without line breaks.

Inputs of 100 KB and 1 MB (characters), none with a line break (a chat
request body, OCR output): corpus prose, ``"a" * n``, ``"ab" * n/2``, and
random prose with phrases repeated 1–5 times (near-periodic stretches).
The regex runs in a subprocess with a time-out; when it times out the ratio
is a lower bound (``>=``). A 1 MB regex run is skipped when the 100 KB run of
the same input already timed out (it can only be slower).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus_text import paragraphs

from docsan.model import Block, Document, Page
from docsan.stages.repeats import Repeats

SIZES = {"100KB": 100_000, "1MB": 1_000_000}
REPEATS = 3
_SEED_REGEX = r"""
import re, sys, time
text = open(sys.argv[1], encoding="utf-8").read()
t0 = time.perf_counter()
re.sub(r"(.+?)\1{3,}", r"\1", text)
print(time.perf_counter() - t0)
"""


def _prose(n: int) -> str:
    text = " ".join(p.replace("\n", " ") for p in paragraphs())
    return (text * (n // len(text) + 1))[:n]


def _near_periodic(n: int) -> str:
    rng = random.Random(7)
    words = [p.split() for p in paragraphs()]
    vocab = [w for ws in words for w in ws][:50_000]
    out, size = [], 0
    while size < n:
        phrase = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 40))) + " "
        filler = " ".join(rng.choice(vocab) for _ in range(rng.randint(5, 30))) + " "
        piece = phrase * rng.randint(1, 5) + filler
        out.append(piece)
        size += len(piece)
    return "".join(out)[:n]


INPUTS = {
    "prose": _prose,
    "a": lambda n: "a" * n,
    "ab": lambda n: "ab" * (n // 2),
    "near_periodic": _near_periodic,
}


def _ours(text: str) -> tuple[float, float, int]:
    """Best wall and CPU seconds of the stage on ``text`` as one block, and the characters left."""
    doc = Document(pages=(Page(1, (Block(text),)),))
    stage = Repeats()
    wall, cpu = [], []
    for _ in range(REPEATS):
        w, c = time.perf_counter(), time.process_time()
        out = stage(doc).document.text
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu), len(out)


def _seed_regex(text: str, timeout_s: float) -> float | None:
    """Seconds the incident's regex needs on ``text``, or None when it ran past ``timeout_s``."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False) as fh:
        fh.write(text)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SEED_REGEX, fh.name], capture_output=True, text=True, timeout=timeout_s, check=True
        )
        return float(done.stdout)
    except subprocess.TimeoutExpired:
        return None
    finally:
        Path(fh.name).unlink()


def run(timeout_s: float = 30.0) -> dict:
    results: dict[str, dict] = {}
    for kind, make in INPUTS.items():
        regex_timed_out = False
        for size_name, n in SIZES.items():
            text = make(n)
            wall, cpu, left = _ours(text)
            regex_s = None if regex_timed_out else _seed_regex(text, timeout_s)
            row: dict = {
                "chars": len(text),
                "chars_left": left,
                "ours_wall_s": round(wall, 4),
                "ours_cpu_s": round(cpu, 4),
            }
            if regex_s is not None:
                row["regex_s"] = round(regex_s, 4)
                row["speedup"] = round(regex_s / wall, 1)
            else:
                row["regex_s"] = "skipped (100KB timed out)" if regex_timed_out else f"timeout (>{timeout_s:g}s)"
                row["speedup"] = f">={timeout_s / wall:.0f}"
                regex_timed_out = True
            results[f"{kind}_{size_name}"] = row
    return {"timeout_s": timeout_s, "results": results}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
