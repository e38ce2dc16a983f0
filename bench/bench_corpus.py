"""Cross-document dedup at corpus scale: index growth, insert throughput, lookup time, tokens removed.

Run: python bench/bench_corpus.py [--sizes 1000,10000,100000] [--redis URL]  (prints JSON)

* ``growth``: for each size N, N distinct paragraphs generated from the
  corpus text (a corpus paragraph with every tenth word replaced by a
  seeded random corpus word, so no two are near-copies by accident) go into
  a fresh index in documents of 100 paragraphs; then 200 query paragraphs
  (half a one-word edit of an indexed paragraph, half new) are looked up as
  the cross-document stage looks them up (exact keys, band candidates, the
  candidates' records). Reported per store: index bytes, insert paragraphs/s
  (the store alone: signatures are computed before the clock starts) and
  lookup milliseconds per 100-paragraph document. SQLite always; Redis on
  the server ``--redis`` names, or (``run()``, as ``bench/run_all.py`` calls
  it) on a redis-server this module starts on a free loopback port; also
  unpipelined, one command per key, the way datasketch's Redis storage writes.
* ``signatures_per_s``: shingling + MinHash + band keys of the same paragraphs.
* ``corpus``: the shared corpus (``--no-ocr``, sorted) cleaned with and
  without ``--corpus-dedupe``; the share of DeepSeek-V4 tokens the
  cross-document stage removed, and the paragraphs it removed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import corpus_dir, count_tokens  # noqa: E402
from bench.corpus_text import paragraphs  # noqa: E402
from docsan.batch import render_output  # noqa: E402
from docsan.config import Config  # noqa: E402
from docsan.corpus import clean_files  # noqa: E402
from docsan.corpus.dedupe import CorpusDedupe, dedupe_outcomes  # noqa: E402
from docsan.corpus.index import NewParagraph, open_index  # noqa: E402
from docsan.model import Block, Document, Page  # noqa: E402
from docsan.stages.neardup import NearDuplicates  # noqa: E402
from docsan.text.minhash import band_keys  # noqa: E402

NO_OCR = Config().with_overrides(extract={"ocr": "never"})
DOC_SIZE = 100
QUERIES = 200


def generated(n: int, seed: int = 13) -> list[str]:
    """``n`` distinct paragraphs from the corpus text: a real paragraph, every tenth word swapped for another."""
    source = [p for p in paragraphs() if len(p.split()) >= 20]
    vocab = sorted({w for p in source for w in p.split()})
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = source[i % len(source)].split()
        for k in range(rng.randrange(10), len(words), 10):
            words[k] = rng.choice(vocab)
        out.append(" ".join(words))
    return out


def _prepared(texts: list[str], stage: NearDuplicates) -> tuple[list[NewParagraph], float]:
    """The paragraphs as the stage would insert them, and the signature rate (paragraphs/s)."""
    t0 = time.perf_counter()
    units = stage.units(_doc(texts))
    rows, matrix = stage.signatures(units)
    bands, r = stage.bands
    import xxhash

    prepared = [
        NewParagraph(
            xxhash.xxh3_128_digest(u.sh.normalized.encode("utf-8", "surrogatepass")),
            tuple(band_keys(matrix[rows[id(u)]], bands, r)) if id(u) in rows else (),
            u.label,
            u.text,
        )
        for u in units
    ]
    return prepared, len(texts) / (time.perf_counter() - t0)


def _doc(texts: list[str]) -> Document:
    return Document(pages=(Page(1, tuple(Block(t) for t in texts)),), name="generated")


def _edit(text: str, rng: random.Random) -> str:
    words = text.split()
    words[rng.randrange(len(words))] = "altered"
    return " ".join(words)


def _lookup(index, queries: list[NewParagraph]) -> float:
    """Seconds for one document's lookups, as CorpusDedupe makes them."""
    t0 = time.perf_counter()
    exact = index.exact([q.exact_key for q in queries])
    cands = index.candidates([q.band_keys for q in queries])
    index.paragraphs({p for p in exact if p is not None} | {p for c in cands for p in c})
    return time.perf_counter() - t0


class _Unpipelined:
    """Redis writes one command at a time (datasketch's RedisStorage pattern), for the throughput comparison."""

    def __init__(self, url: str) -> None:
        import redis

        self.r = redis.Redis.from_url(url.split("?")[0])
        self.prefix = "bench-unpiped:"

    def add(self, paragraphs: list[NewParagraph], first: int) -> None:
        for i, p in enumerate(paragraphs, start=first):
            self.r.hset(self.prefix + "para", i, p.text)
            self.r.hsetnx(self.prefix + "exact", p.exact_key, i)
            for k in p.band_keys:
                self.r.sadd(self.prefix + "band:" + k.hex(), i)


def growth(sizes: list[int], redis_url: str | None) -> dict:
    stage = NearDuplicates()
    rng = random.Random(5)
    out: dict = {"stores": {}, "signatures_per_s": {}}
    stores = ["sqlite"] + (["redis"] if redis_url else [])
    for n in sizes:
        texts = generated(n)
        prepared, rate = _prepared(texts, stage)
        out["signatures_per_s"][n] = round(rate)
        half = QUERIES // 2
        originals = rng.sample(texts, half)
        queries, _ = _prepared([_edit(t, rng) for t in originals] + generated(half, seed=99), stage)
        # The edited copies the stage would remove: exact Jaccard at or above its threshold.
        should = [
            i
            for i, t in enumerate(originals)
            if stage.verify(stage.units(_doc([queries[i].text]))[0], stage.shingled(t)) > 0
        ]
        for store in stores:
            with tempfile.TemporaryDirectory() as tmp:
                location = str(Path(tmp) / "index.sqlite") if store == "sqlite" else f"{redis_url}?prefix=bench-{n}:"
                index = open_index(location)
                before = index.stats()["bytes"]
                t0 = time.perf_counter()
                for d in range(0, len(prepared), DOC_SIZE):
                    index.add(f"doc-{d}", f"doc-{d}", prepared[d : d + DOC_SIZE])
                insert_s = time.perf_counter() - t0
                # Twice over the query documents; the best is the store's, the rest the neighbours'.
                docs = [queries[i : i + DOC_SIZE] for i in range(0, len(queries), DOC_SIZE)]
                lookups = [_lookup(index, q) for _ in range(2) for q in docs]
                mine = [queries[i] for i in should]
                exact, cands = index.exact([q.exact_key for q in mine]), index.candidates([q.band_keys for q in mine])
                found = sum(e is not None or bool(c) for e, c in zip(exact, cands, strict=True))
                stats = index.stats()
                index.close()
                if store == "redis":
                    import redis

                    client = redis.Redis.from_url(redis_url)
                    for key in client.scan_iter(f"bench-{n}:*", count=10_000):
                        client.delete(key)
            out["stores"].setdefault(store, {})[n] = {
                "paragraphs": stats["paragraphs"],
                "index_mb": round((stats["bytes"] - (before if store == "redis" else 0)) / 2**20, 2),
                "insert_paragraphs_per_s": round(len(prepared) / insert_s),
                "lookup_ms_per_100": round(1000 * min(lookups), 2),
                # Of the edited copies at or above the threshold, how many the index offered as candidates.
                "edited_copies_found": f"{found}/{len(should)}",
            }
    if redis_url:
        sample = prepared[: min(2000, len(prepared))]
        slow = _Unpipelined(redis_url)
        t0 = time.perf_counter()
        slow.add(sample, 0)
        elapsed = time.perf_counter() - t0
        keys = sum(2 + len(p.band_keys) for p in sample)
        out["redis_unpipelined"] = {
            "paragraphs_per_s": round(len(sample) / elapsed),
            "keys_per_s": round(keys / elapsed),
        }
        for key in slow.r.scan_iter(slow.prefix + "*", count=10_000):
            slow.r.delete(key)
    return out


def corpus_tokens() -> dict:
    corpus = corpus_dir()
    if corpus is None:
        return {"skipped": "shared corpus not found"}
    files = sorted((corpus / "pdfs").glob("*.pdf")) if (corpus / "pdfs").is_dir() else sorted(corpus.glob("*.pdf"))
    plain = {o.source: render_output(o.result) for o in clean_files(files, NO_OCR, ordered=True) if o.ok}
    with tempfile.TemporaryDirectory() as tmp:
        dedupe = CorpusDedupe.open(Path(tmp) / "index.sqlite", NO_OCR)
        t0 = time.perf_counter()
        deduped = list(dedupe_outcomes(clean_files(files, NO_OCR, ordered=True), dedupe))
        seconds = time.perf_counter() - t0
        dedupe.close()
    removed = sum(len(o.result.report.stage("corpus_dedupe").changes) for o in deduped if o.ok)
    before = sum(count_tokens(t) for t in plain.values())
    after = sum(count_tokens(render_output(o.result)) for o in deduped if o.ok)
    return {
        "documents": len(plain),
        "tokens_without": before,
        "tokens_with": after,
        "share_removed": round(1 - after / before, 4) if before else 0.0,
        "paragraphs_removed": removed,
        "seconds_with_dedupe": round(seconds, 2),
    }


def _redis_server() -> tuple[subprocess.Popen, str] | None:
    """A throw-away redis-server on a free loopback port, or None without one installed."""
    server = shutil.which("redis-server")
    if server is None:
        return None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    argv = [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    return None


def run(sizes: tuple[int, ...] = (1000, 10_000, 100_000)) -> dict:
    started = _redis_server()
    try:
        result = {"growth": growth(list(sizes), started[1] if started else None), "corpus": corpus_tokens()}
    finally:
        if started is not None:
            started[0].terminate()
            started[0].wait(timeout=10)
    return {**result, "load_avg": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--redis", default=os.environ.get("DOCSAN_BENCH_REDIS"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    result = {"growth": growth(sizes, args.redis), "corpus": corpus_tokens(), "load_avg": round(os.getloadavg()[0], 2)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
