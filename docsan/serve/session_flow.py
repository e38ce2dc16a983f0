"""The sessions protocol on one request: expand a delta into the stored history, then store the new state.

A request with ``x-docsan-session: ID`` and ``x-docsan-context-hash: H`` carries only the messages
that follow the history named H; the gateway appends them to the history it holds for ID, if that
history is the one named H, else answers 409 ``context_mismatch`` (the client then resends the
whole history, which is always accepted). A request with the session id and no hash carries the
whole history and replaces what is held. Either way the history is then cleaned, trimmed to the
budget of the largest tier that serves it in real time (:func:`docsan.runner.router.history_budget`)
and stored as sent upstream, under the hash of everything the client has sent
(:mod:`docsan.chat.context_hash`), before the request is forwarded: every store operation happens
before anything reaches vLLM, so a store that does not answer is a 503 and never a wrong history.
The response names the new hash in ``x-docsan-context-hash``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex
from starlette.requests import Request

from docsan.chat.context_hash import EMPTY, extend, is_context_hash
from docsan.runner.request import Prepared
from docsan.serve.errors import ApiError
from docsan.serve.gateway import Gateway
from docsan.serve.sessions import SessionState, StoreUnavailable

SESSION_HEADER = "x-docsan-session"
HASH_HEADER = "x-docsan-context-hash"
# Printable, no spaces, short: an id is a key in the store and appears in log lines.
_SESSION_ID = regex.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")


@dataclass(frozen=True, slots=True)
class Turn:
    """One session request: the history to prepare and the hash it will be stored under."""

    session: str
    messages: list[dict[str, Any]]
    new_hash: str
    # Messages the store held for the session when this was a delta; None: the whole history was sent.
    stored: int | None
    sent: int


async def begin(gw: Gateway, request: Request, messages: list[dict[str, Any]], max_messages: int) -> Turn | None:
    """The request's turn, or None without a session header; raises the protocol's refusals as ApiError."""
    session = request.headers.get(SESSION_HEADER)
    if session is None:
        return None
    session = session.strip()
    if not _SESSION_ID.fullmatch(session):
        raise ApiError(400, f"{SESSION_HEADER} must be 1-128 characters of letters, digits and ._:@/+=-",
                       param=SESSION_HEADER, code="invalid_value")  # fmt: skip
    given = request.headers.get(HASH_HEADER)
    if given is None:
        return Turn(session, messages, extend(EMPTY, messages), None, len(messages))
    given = given.strip().lower()
    if not is_context_hash(given):
        raise ApiError(400, f"{HASH_HEADER} must be the 64 hex digits a previous response carried",
                       param=HASH_HEADER, code="invalid_value")  # fmt: skip
    state = await _get(gw, session)
    if state is None or state.context_hash != given:
        gw.metrics.session_requests.labels("mismatch").inc()
        why = "is unknown (never seen, evicted or expired)" if state is None else "holds another history"
        raise ApiError(
            409,
            f"session {session!r} {why}: context hash {given[:12]}… is not held here; send the whole history "
            f"(without {HASH_HEADER})",
            param=HASH_HEADER,
            code="context_mismatch",
        )
    history = state.messages + messages
    if len(history) > max_messages:
        raise ApiError(400, f"session {session!r}: {len(history)} messages exceeds limit {max_messages} "
                       "(serve.max_messages)", param="messages", code="too_many_messages")  # fmt: skip
    return Turn(session, history, extend(given, messages), len(state.messages), len(messages))


async def commit(gw: Gateway, turn: Turn, prepared: Prepared) -> tuple[dict[str, str], dict[str, Any]]:
    """Store what is sent upstream under the new hash; the response headers and the ``session`` note."""
    store = gw.sessions
    state = SessionState(turn.new_hash, [dict(m) for m in prepared.messages])
    try:
        result = await store.put(turn.session, state)
    except StoreUnavailable as err:
        raise _unavailable(gw, turn.session, err) from None
    gw.metrics.observe_store(result)
    what = "whole history" if turn.stored is None else f"{turn.sent} new message(s) after {turn.stored} stored"
    kept = len(prepared.messages)
    trimmed = len(turn.messages) - kept
    message = f"session {turn.session!r}: {what}; {kept} message(s) sent upstream"
    if trimmed > 0:
        message += f" ({trimmed} left out to fit the budget or emptied by cleaning: the other notes say which)"
    if not result.stored:
        gw.metrics.session_requests.labels("not_stored").inc()
        message += (f"; not stored: its {len(state.encode())} bytes exceed serve.sessions.max_bytes "
                    f"({store.name} store); send the whole history next time")  # fmt: skip
        return {}, {"code": "session", "message": message}
    gw.metrics.session_requests.labels("replaced" if turn.stored is None else "appended").inc()
    message += f"; stored ({store.name})"
    if result.evicted:
        message += f", {result.evicted} least recently used session(s) evicted"
    return {HASH_HEADER: turn.new_hash}, {"code": "session", "message": message}


async def _get(gw: Gateway, session: str) -> SessionState | None:
    try:
        return await gw.sessions.get(session)
    except StoreUnavailable as err:
        raise _unavailable(gw, session, err) from None


def _unavailable(gw: Gateway, session: str, err: StoreUnavailable) -> ApiError:
    gw.metrics.session_requests.labels("unavailable").inc()
    return ApiError(
        503,
        f"session {session!r}: {err}; nothing was sent upstream (requests without {SESSION_HEADER} are served)",
        code="session_store_unavailable",
        headers={"retry-after": "2"},
    )
