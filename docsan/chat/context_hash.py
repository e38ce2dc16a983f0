"""The context hash of a chat history: what a client and the gateway both compute to name one history.

The sessions protocol (docs/sessions.md) lets a client send only the new messages of a history the
gateway already holds, naming that history by this hash. It is a chain over the messages *as the
client sent them*, so that:

- any client can compute it from its own copy of the conversation, in any language, without docsan
  (the gateway holds the cleaned, trimmed version, which a client cannot reproduce);
- the hash of a history extended by new messages follows from the old hash and the new messages
  alone, so neither side rehashes the whole history on each turn.

The canonical form of one message is its JSON with the keys sorted at every level, no whitespace,
non-ASCII characters written as themselves, encoded as UTF-8 (for the values messages hold:
strings, null, booleans, integers, objects and lists; this is also what JavaScript's
``JSON.stringify`` writes for an object whose keys are sorted). The chain::

    h = sha256("docsan-context-v1")                       # hex digest of the UTF-8 bytes
    for each message m:  h = sha256(h + "\\n" + canonical(m))
    the context hash is the final h (64 lowercase hex digits)

A history of no messages hashes to the first ``h``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

VERSION = "docsan-context-v1"
EMPTY = hashlib.sha256(VERSION.encode()).hexdigest()
HASH_LENGTH = 64


def canonical(message: Mapping[str, Any]) -> bytes:
    """One message's canonical bytes (sorted keys, no whitespace, UTF-8)."""
    # surrogatepass: a lone surrogate (from a JSON escape) still hashes the same on every call.
    text = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def extend(previous: str, messages: Iterable[Mapping[str, Any]]) -> str:
    """The hash of the history named ``previous`` followed by ``messages``."""
    h = previous
    for message in messages:
        h = hashlib.sha256(h.encode("ascii") + b"\n" + canonical(message)).hexdigest()
    return h


def context_hash(messages: Iterable[Mapping[str, Any]]) -> str:
    """The hash of a whole history."""
    return extend(EMPTY, messages)


def is_context_hash(value: str) -> bool:
    return len(value) == HASH_LENGTH and all(c in "0123456789abcdef" for c in value)
