"""Cross-document dedup: a paragraph that an earlier document of the corpus already holds is removed.

The in-document ``neardup`` stage keeps the first copy of a paragraph within
one document; the same boilerplate in 500 documents still reached retrieval
500 times. This stage runs after a document's own pipeline, in input order
(folders expand sorted, so a rerun gives the same result), against a
persistent :mod:`index <docsan.corpus.index>` of every paragraph kept so far:

* the units, signatures, thresholds, exemptions (tables, headings, short
  lines) and the verification (exact Jaccard, nothing new, numbers) are the
  neardup stage's own, through its methods, with its configured options;
* each removal is a change ``corpus_dedupe.paragraph`` naming the document
  and page it duplicates;
* a document whose bytes are already in the index (the same file ingested
  again, under any name) is reported as a duplicate document (a finding,
  ``corpus_dedupe.duplicate_document``, naming the earlier one, and
  ``duplicate_document`` in the stage's counters) and is compared only
  with the paragraphs indexed before its first ingestion: it comes out as
  it did the first time, not emptied by its own earlier copy.
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import xxhash

from docsan.batch import Outcome
from docsan.config import Config
from docsan.corpus.index import Index, IndexedParagraph, NewParagraph, open_index
from docsan.model import Change, ChangeKind
from docsan.pipeline import CleanResult
from docsan.report import ChangeCode, StageReport
from docsan.stages import build_stage
from docsan.stages.neardup import NearDuplicates, Unit, quote
from docsan.text.minhash import band_keys
from docsan.text.shingles import Shingled

STAGE = "corpus_dedupe"
PARAGRAPH = ChangeCode(
    "corpus_dedupe.paragraph", ChangeKind.REMOVED, "a paragraph an earlier document of the corpus already holds"
)
DUPLICATE_DOCUMENT = ChangeCode(
    "corpus_dedupe.duplicate_document", ChangeKind.FINDING, "the same bytes as a document already in the corpus index"
)


def document_digest(path: Path) -> str:
    """SHA-256 of the file's bytes: the same document under another name or folder has the same digest."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass
class CorpusDedupe:
    """Deduplicate each cleaned document against the index, then add what it kept."""

    index: Index
    neardup: NearDuplicates

    @classmethod
    def open(cls, location: str | Path, config: Config) -> CorpusDedupe:
        """The stage over the index at ``location`` (SQLite path, redis:// URL) with ``config``'s neardup options."""
        stage = build_stage("neardup", config.stage_options("neardup"))
        assert isinstance(stage, NearDuplicates)
        index = open_index(location)
        bands, rows = stage.bands
        index.check_params(
            {
                "num_perm": stage.num_perm,
                "seed": stage.seed,
                "bands": bands,
                "rows": rows,
                "cjk_ngram": stage.cjk_ngram,
                "word_ngram": stage.word_ngram,
            }
        )
        return cls(index, stage)

    def __call__(self, result: CleanResult, digest: str) -> CleanResult:
        t0 = time.perf_counter()
        doc, nd = result.document, self.neardup
        prior = self.index.document(digest)
        # A re-ingested document is compared with what was indexed before it, never with itself.
        limit = prior.first if prior is not None else None
        units = nd.units(doc)
        rows, matrix = nd.signatures(units)
        bands, r = nd.bands
        exact_keys = [xxhash.xxh3_128_digest(u.sh.normalized.encode("utf-8", "surrogatepass")) for u in units]
        unit_bands = [tuple(band_keys(matrix[rows[id(u)]], bands, r)) if id(u) in rows else () for u in units]
        exact_ids = self.index.exact(exact_keys)
        candidates = self.index.candidates(unit_bands)

        def earlier(pid: int | None) -> bool:
            return pid is not None and (limit is None or pid < limit)

        known = self.index.paragraphs(
            {p for p in exact_ids if earlier(p)} | {p for c in candidates for p in c if earlier(p)}
        )
        shingled: dict[int, Shingled] = {}
        changes: list[Change] = []
        stats: dict[str, int | float] = defaultdict(int)
        stats["paragraph_units"] = len(units)
        removed: set[tuple[int, int]] = set()
        cut: dict[tuple[int, int], set[int]] = defaultdict(set)
        kept: list[NewParagraph] = []
        for unit, key, keys, exact_id, cands in zip(units, exact_keys, unit_bands, exact_ids, candidates, strict=True):
            best, score = self._match(unit, exact_id, cands, known, shingled, stats)
            if best is None:
                kept.append(NewParagraph(key, keys, unit.label, unit.text))
                continue
            nd.mark(unit, doc, removed, cut)
            reason = f"paragraph {nd.describe(score)} of {best.document} {best.label}"
            page = doc.pages[unit.page].number
            changes.append(PARAGRAPH.change(reason, page, unit.text, duplicate_of=quote(best.text)))
            stats["paragraphs_removed"] += 1
            stats["chars_removed"] += len(unit.text)
        cleaned = nd.remove(doc, removed, cut)
        if prior is not None:
            stats["duplicate_document"] = 1
            reason = (
                f"duplicate document: the same bytes as {prior.name}, already in the corpus index "
                f"{self.index.location}; compared only with the documents indexed before it"
            )
            changes.insert(0, DUPLICATE_DOCUMENT.change(reason, 1, prior.name))
        else:
            self.index.add(digest, doc.name, kept)
            stats["paragraphs_indexed"] = len(kept)
        stage = StageReport(STAGE, len(doc.text), len(cleaned.text), time.perf_counter() - t0, dict(stats), changes)
        report = replace(result.report, stages=[*result.report.stages, stage])
        return CleanResult(result.original, cleaned, report)

    def _match(
        self,
        unit: Unit,
        exact_id: int | None,
        candidates: set[int],
        known: dict[int, IndexedParagraph],
        shingled: dict[int, Shingled],
        stats: dict[str, int | float],
    ) -> tuple[IndexedParagraph | None, float]:
        """The indexed paragraph ``unit`` duplicates best (lowest id among equals), and the similarity."""
        if exact_id in known:
            return known[exact_id], 1.0
        best, best_score = None, 0.0
        for pid in sorted(p for p in candidates if p in known):
            stats["candidates_verified"] += 1
            if pid not in shingled:
                shingled[pid] = self.neardup.shingled(known[pid].text)
            score = self.neardup.verify(unit, shingled[pid])
            if score > best_score:
                best, best_score = known[pid], score
        return best, best_score

    def close(self) -> None:
        self.index.close()


def dedupe_outcomes(outcomes: Iterable[Outcome], dedupe: CorpusDedupe) -> Iterator[Outcome]:
    """Each successful outcome deduplicated against the corpus so far (give them in input order)."""
    for outcome in outcomes:
        if outcome.result is None or str(outcome.source) == "-":
            yield outcome
            continue
        try:
            digest = document_digest(outcome.source)
        except OSError as err:
            yield Outcome(outcome.source, error=f"{outcome.source}: cannot read for the corpus index: {err.strerror}")
            continue
        yield Outcome(outcome.source, result=dedupe(outcome.result, digest))
