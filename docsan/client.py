"""Client side of the gateway's sessions protocol: send only the new messages of a conversation.

The application keeps its whole history and calls as usual; the helper sends the messages the
gateway does not hold yet, names the held history by its context hash, and resends everything when
the gateway answers 409 ``context_mismatch`` (evicted, expired, another replica without it)::

    from openai import OpenAI
    from docsan.client import SessionClient

    chat = SessionClient(OpenAI(base_url="http://gateway:8080/v1", api_key="KEY"))
    history = [{"role": "user", "content": "Hi"}]
    reply = chat.create(model="SmolLM2-135M-Instruct", messages=history, max_tokens=64)
    history += [reply.choices[0].message.model_dump(exclude_none=True), {"role": "user", "content": "And?"}]
    reply = chat.create(model="SmolLM2-135M-Instruct", messages=history, max_tokens=64)  # sends 2 messages

:class:`SessionTracker` is the bookkeeping alone, for any HTTP client. Nothing here imports the
OpenAI package until :class:`SessionClient` is used. The protocol: docs/sessions.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from docsan.chat.context_hash import context_hash

SESSION_HEADER = "x-docsan-session"
HASH_HEADER = "x-docsan-context-hash"


@dataclass(slots=True)
class SessionTracker:
    """What the gateway holds of one conversation: the first ``held`` messages, named by ``held_hash``."""

    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    held: int = 0
    held_hash: str | None = None

    def request(self, messages: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], dict[str, str]]:
        """The messages to send and the headers to send them with: the delta when the gateway holds a prefix."""
        headers = {SESSION_HEADER: self.session}
        if (
            self.held_hash is not None
            and 0 < self.held < len(messages)
            and context_hash(messages[: self.held]) == self.held_hash
        ):
            headers[HASH_HEADER] = self.held_hash
            return list(messages[self.held :]), headers
        return list(messages), headers

    def update(self, messages: Sequence[Mapping[str, Any]], headers: Mapping[str, str]) -> None:
        """After a successful answer to ``messages``: adopt the hash the gateway returned, if it names them."""
        returned = headers.get(HASH_HEADER)
        if returned is not None and returned == context_hash(messages):
            self.held, self.held_hash = len(messages), returned
        else:  # not stored (too large, store down) or not a docsan gateway: send everything next time
            self.reset()

    def reset(self) -> None:
        self.held, self.held_hash = 0, None


class SessionClient:
    """An OpenAI client's ``chat.completions.create`` for one conversation, through the sessions protocol.

    ``fallback=True``: when the gateway's session store is down (503 ``session_store_unavailable``),
    the request is sent once more without the session, as a plain request with the whole history.
    """

    def __init__(self, client: Any, session: str | None = None, *, fallback: bool = True) -> None:
        self.client = client
        self.tracker = SessionTracker(session) if session else SessionTracker()
        self.fallback = fallback
        # Requests sent, and how many were the whole history (a 409 or a fallback costs one more).
        self.requests = 0
        self.resends = 0

    @property
    def session(self) -> str:
        return self.tracker.session

    def create(self, *, messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> Any:
        """As ``client.chat.completions.create(messages=..., **kwargs)``; ``messages`` is the whole history."""
        import openai

        send, headers = self.tracker.request(messages)
        try:
            return self._send(messages, send, headers, kwargs)
        except openai.APIStatusError as err:
            code = getattr(err, "code", None)
            if err.status_code == 409 and code == "context_mismatch":
                self.tracker.reset()
                self.resends += 1
                send, headers = self.tracker.request(messages)
                return self._send(messages, send, headers, kwargs)
            if err.status_code == 503 and code == "session_store_unavailable" and self.fallback:
                self.tracker.reset()
                self.resends += 1
                return self._send(messages, list(messages), {}, kwargs)
            raise

    def _send(
        self,
        messages: Sequence[Mapping[str, Any]],
        send: list[Mapping[str, Any]],
        headers: dict[str, str],
        kwargs: dict[str, Any],
    ) -> Any:
        self.requests += 1
        extra = {**(kwargs.get("extra_headers") or {}), **headers}
        rest = {k: v for k, v in kwargs.items() if k != "extra_headers"}
        raw = self.client.chat.completions.with_raw_response.create(messages=send, extra_headers=extra, **rest)
        result = raw.parse()
        # A stream's answer is not known to be whole yet; the gateway stored the history at its start all the
        # same, and a retry of the same messages is sent whole (an empty delta is never sent).
        if headers:
            self.tracker.update(messages, raw.headers)
        return result
