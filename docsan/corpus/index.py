"""The corpus index: every kept paragraph of every document cleaned so far, for cross-document dedup.

What it holds, per paragraph: an id (ids grow in ingestion order), the
document and place it came from, its text (the verification re-shingles it:
a candidate is only removed after the exact Jaccard check of the neardup
stage), the hash of its normalised text (exact copies), and one key per LSH
band of its MinHash signature (near copies). Per document: the hash of its
bytes, so that a re-ingested file is recognised, and the range of its
paragraph ids.

Two stores: :class:`SqliteIndex`, one local file (the default), and
:class:`docsan.corpus.redis_index.RedisIndex` for an index several machines
write at once. Both answer lookups for a whole document in one round trip
and insert a document's paragraphs in one transaction or pipeline.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from docsan.errors import ConfigError

# Bumped when what is stored changes meaning; an index of another format is refused, not misread.
FORMAT = 1
# SQLite's limit on host parameters is 32,766 (since 3.32); lookups go in chunks well below it.
_CHUNK = 900


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """A document already in the index: its name when it was ingested and its paragraph ids ``[first, end)``."""

    digest: str
    name: str
    first: int
    end: int


@dataclass(frozen=True, slots=True)
class IndexedParagraph:
    id: int
    document: str  # the name of the document it came from
    label: str  # where in it ("page 3", "message 2")
    text: str


@dataclass(frozen=True, slots=True)
class NewParagraph:
    """A kept paragraph to insert: its exact-text key, its LSH band keys (none if too short), where and what."""

    exact_key: bytes
    band_keys: tuple[bytes, ...]
    label: str
    text: str


class Index(Protocol):
    """What the cross-document stage needs from a store."""

    location: str

    def check_params(self, params: dict[str, int]) -> None:
        """Record the signature parameters in a new index; refuse an index built with others (ConfigError)."""

    def document(self, digest: str) -> IndexedDocument | None: ...

    def exact(self, keys: Sequence[bytes]) -> list[int | None]:
        """Per key, the id of the first paragraph with that normalised text, or None."""

    def candidates(self, keys: Sequence[Sequence[bytes]]) -> list[set[int]]:
        """Per paragraph (its band keys), the ids of indexed paragraphs sharing at least one band."""

    def paragraphs(self, ids: Iterable[int]) -> dict[int, IndexedParagraph]: ...

    def add(self, digest: str, name: str, paragraphs: Sequence[NewParagraph]) -> IndexedDocument:
        """Insert a document and its paragraphs at once; the document already there wins."""

    def stats(self) -> dict[str, int]:
        """Documents and paragraphs held, and the store's size in bytes where it knows it."""

    def close(self) -> None: ...


def params_mismatch(location: str, stored: dict[str, str], params: dict[str, int]) -> ConfigError | None:
    """The error for an index whose stored parameters differ from this run's, or None when they agree."""
    want = {"format": str(FORMAT), **{k: str(v) for k, v in params.items()}}
    differ = {k: (stored.get(k), v) for k, v in want.items() if stored.get(k) != v}
    if not differ:
        return None
    what = ", ".join(f"{k} {old} (index) vs {new} (now)" for k, (old, new) in sorted(differ.items()))
    return ConfigError(f"{location}: corpus index built with other parameters ({what}); use another --index")


class SqliteIndex:
    """The index in one SQLite file (WAL journal: readers do not block the writer; one writer at a time)."""

    def __init__(self, path: Path) -> None:
        self.location = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path, timeout=60)
            self._db.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL never corrupts the file; a power cut can lose the last documents added,
            # which the next run then ingests again. FULL would fsync once per document.
            self._db.execute("PRAGMA synchronous=NORMAL")
            # The band keys are random, so inserts touch pages all over the B-tree: 64 MiB of page cache
            # instead of 2 keeps a 100k-paragraph index's working set in memory.
            self._db.execute("PRAGMA cache_size=-65536")
            self._db.executescript(
                """
                CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS documents (
                    digest TEXT PRIMARY KEY, name TEXT NOT NULL, first INTEGER NOT NULL, end_ INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS paragraphs (
                    id INTEGER PRIMARY KEY, document TEXT NOT NULL, label TEXT NOT NULL, text TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS exact (key BLOB PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS bands (key BLOB NOT NULL, id INTEGER NOT NULL,
                    PRIMARY KEY (key, id)) WITHOUT ROWID;
                """
            )
        except sqlite3.DatabaseError as err:
            raise ConfigError(f"{path}: not a docsan corpus index ({err})") from None

    def check_params(self, params: dict[str, int]) -> None:
        stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not stored:
            with self._db:
                self._db.executemany(
                    "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                    [("format", str(FORMAT)), *((k, str(v)) for k, v in params.items())],
                )
            stored = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        err = params_mismatch(self.location, stored, params)
        if err is not None:
            raise err

    def document(self, digest: str) -> IndexedDocument | None:
        row = self._db.execute("SELECT digest, name, first, end_ FROM documents WHERE digest = ?", (digest,)).fetchone()
        return IndexedDocument(*row) if row else None

    def _lookup(self, table: str, keys: Sequence[bytes]) -> list[tuple[bytes, int]]:
        found: list[tuple[bytes, int]] = []
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), _CHUNK):
            chunk = unique[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found += self._db.execute(f"SELECT key, id FROM {table} WHERE key IN ({marks})", chunk).fetchall()
        return found

    def exact(self, keys: Sequence[bytes]) -> list[int | None]:
        found = dict(self._lookup("exact", keys))
        return [found.get(k) for k in keys]

    def candidates(self, keys: Sequence[Sequence[bytes]]) -> list[set[int]]:
        buckets: dict[bytes, set[int]] = {}
        for key, pid in self._lookup("bands", [k for ks in keys for k in ks]):
            buckets.setdefault(key, set()).add(pid)
        return [set().union(*(buckets.get(k, ()) for k in ks)) for ks in keys]

    def paragraphs(self, ids: Iterable[int]) -> dict[int, IndexedParagraph]:
        wanted = sorted(set(ids))
        out: dict[int, IndexedParagraph] = {}
        for i in range(0, len(wanted), _CHUNK):
            chunk = wanted[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id, document, label, text FROM paragraphs WHERE id IN ({marks})"
            out.update((row[0], IndexedParagraph(*row)) for row in self._db.execute(sql, chunk))
        return out

    def add(self, digest: str, name: str, paragraphs: Sequence[NewParagraph]) -> IndexedDocument:
        with self._db:  # one transaction: a document is in the index whole or not at all
            self._db.execute("BEGIN IMMEDIATE")  # take the write lock before reading the next id
            existing = self.document(digest)
            if existing is not None:
                return existing
            (first,) = self._db.execute("SELECT COALESCE(MAX(id) + 1, 0) FROM paragraphs").fetchone()
            ids = range(first, first + len(paragraphs))
            self._db.executemany(
                "INSERT INTO paragraphs VALUES (?, ?, ?, ?)",
                [(i, name, p.label, p.text) for i, p in zip(ids, paragraphs, strict=True)],
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO exact VALUES (?, ?)",
                [(p.exact_key, i) for i, p in zip(ids, paragraphs, strict=True)],
            )
            self._db.executemany(
                "INSERT OR IGNORE INTO bands VALUES (?, ?)",
                [(k, i) for i, p in zip(ids, paragraphs, strict=True) for k in p.band_keys],
            )
            self._db.execute(
                "INSERT INTO documents VALUES (?, ?, ?, ?)", (digest, name, first, first + len(paragraphs))
            )
        return IndexedDocument(digest, name, first, first + len(paragraphs))

    def stats(self) -> dict[str, int]:
        (docs,) = self._db.execute("SELECT COUNT(*) FROM documents").fetchone()
        (paras,) = self._db.execute("SELECT COUNT(*) FROM paragraphs").fetchone()
        (pages,) = self._db.execute("PRAGMA page_count").fetchone()
        (size,) = self._db.execute("PRAGMA page_size").fetchone()
        return {"documents": docs, "paragraphs": paras, "bytes": pages * size}

    def close(self) -> None:
        self._db.close()


def open_index(spec: str | Path) -> Index:
    """``redis://…`` / ``rediss://…`` / ``unix://…`` opens a Redis index; anything else is a SQLite file path."""
    text = str(spec)
    if text.startswith(("redis://", "rediss://", "unix://")):
        from docsan.corpus.redis_index import RedisIndex

        return RedisIndex(text)
    return SqliteIndex(Path(text))
