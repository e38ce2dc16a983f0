"""The sessions protocol end to end: real uvicorn gateways (and `docsan serve` processes), the session's real
vLLM server behind a recording proxy, a real redis-server.

Answers are 2 tokens: what is tested is what the gateway holds and sends, not what the model writes.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.serve_proc import gateway_process, tiers_toml
from tests.serve_support import RedisServer, gateway_config, running_gateway

pytestmark = [pytest.mark.engine, pytest.mark.slow]

CHAT = "/v1/chat/completions"
SESSION = "x-docsan-session"
HASH = "x-docsan-context-hash"
SYSTEM = {"role": "system", "content": "Answer from the conversation."}


def documented_hash(messages: list[dict[str, Any]]) -> str:
    """docs/sessions.md's definition, written out here as a client in any language would."""
    h = hashlib.sha256(b"docsan-context-v1").hexdigest()
    for m in messages:
        canonical = json.dumps(m, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        h = hashlib.sha256((h + "\n" + canonical).encode("utf-8")).hexdigest()
    return h


@pytest.fixture
def proxy(recording_proxy: tuple[str, Any]) -> tuple[str, Any]:
    url, rec = recording_proxy
    rec.chats.clear()
    return url, rec


def _post(gw: str, messages: list[dict[str, Any]], session: str | None = None, context: str | None = None,
          max_tokens: int = 2) -> httpx.Response:  # fmt: skip
    headers = {}
    if session is not None:
        headers[SESSION] = session
    if context is not None:
        headers[HASH] = context
    return httpx.post(gw + CHAT, json={"messages": messages, "max_tokens": max_tokens, "temperature": 0},
                      headers=headers, timeout=180)  # fmt: skip


def _turns(n: int, fact_at: int = 1) -> list[dict[str, Any]]:
    """``n`` turns of pasted text (about 60 tokens each), a fact planted in one, the question about it last."""
    msgs: list[dict[str, Any]] = [SYSTEM]
    for i in range(n):
        text = f"Report section {i}: the committee reviewed item {i} and noted steady progress on the works."
        if i == fact_at:
            text += " The access code of the Tampere warehouse is K42-977."
        msgs.append({"role": "user", "content": text + "\n\nAny comment?"})
        msgs.append({"role": "assistant", "content": f"Noted {i}."})
    msgs.append({"role": "user", "content": "What is the access code of the Tampere warehouse?"})
    return msgs


def _session_note(r: httpx.Response) -> str:
    return next(n["message"] for n in r.json()["docsan"]["notes"] if n["code"] == "session")


def test_round_trip_sends_only_new_messages_and_the_hash_is_the_documented_one(tmp_path, proxy) -> None:
    url, rec = proxy
    first = [SYSTEM, {"role": "user", "content": "Our budget is 42 million. Noted?"}]
    delta = [{"role": "assistant", "content": "Noted: 42 million."}, {"role": "user", "content": "And the budget?"}]
    with running_gateway(gateway_config(tmp_path, url)) as gw:
        r1 = _post(gw, first, session="s-1")
        r2 = _post(gw, delta, session="s-1", context=r1.headers.get(HASH))
    assert r1.status_code == 200 and r2.status_code == 200, (r1.text, r2.text)
    assert r1.headers[HASH] == documented_hash(first)
    assert r2.headers[HASH] == documented_hash(first + delta)
    # The upstream got the whole conversation although the client sent two messages.
    assert rec.chats[1]["messages"] == first + delta
    assert "2 new message(s) after 2 stored" in _session_note(r2) and "stored (memory)" in _session_note(r2)
    assert r2.json()["docsan"]["prompt_tokens"] == r2.json()["usage"]["prompt_tokens"]


def test_a_long_session_is_stored_trimmed_to_its_tiers_budget_and_keeps_the_asked_fact(tmp_path, proxy) -> None:
    url, rec = proxy
    history = _turns(40)
    with running_gateway(gateway_config(tmp_path, url)) as gw:
        r1 = _post(gw, history, session="long")
        delta = [{"role": "assistant", "content": "It is K42-977."}, {"role": "user", "content": "Anything else?"}]
        r2 = _post(gw, delta, session="long", context=r1.headers[HASH])
    assert r1.status_code == 200 and r2.status_code == 200, (r1.text, r2.text)
    d1 = r1.json()["docsan"]
    # The test tiers: a10g serves prompts below 1536 tokens in real time (a100 is for priority requests).
    assert d1["tier"] == "a10g" and d1["prompt_tokens"] <= 1535 < _raw_tokens(history)
    assert any(n["code"] == "budget.dropped_turn" for n in d1["notes"])
    assert "left out to fit the budget" in _session_note(r1)
    sent1, sent2 = rec.chats[0]["messages"], rec.chats[1]["messages"]
    assert sent1[0] == SYSTEM and sent1[-1] == history[-1] and len(sent1) < len(history)
    assert any("K42-977" in m["content"] for m in sent1[1:-1])  # the turn the question is about was kept
    # The delta went after the stored, trimmed history, not after the 81 messages the client has.
    assert sent2[: len(sent1)] == sent1 and sent2[len(sent1) :] == delta
    assert r2.headers[HASH] == documented_hash(history + delta)


def _raw_tokens(messages: list[dict[str, Any]]) -> int:
    from docsan.runner.chat_template import ChatTokenizer
    from docsan.runner.embedded_model import embedded_model_dir

    return ChatTokenizer.load(embedded_model_dir()).count_messages(messages)


def test_mismatch_is_409_a_whole_history_always_replaces_and_bad_headers_are_400(tmp_path, proxy) -> None:
    url, rec = proxy
    a = [SYSTEM, {"role": "user", "content": "Plan A?"}]
    b = [SYSTEM, {"role": "user", "content": "Plan B?"}]
    more = [{"role": "assistant", "content": "Yes."}, {"role": "user", "content": "Go on."}]
    with running_gateway(gateway_config(tmp_path, url)) as gw:
        unknown = _post(gw, more, session="s-2", context=documented_hash(a))
        nothing_sent = len(rec.chats)
        ra = _post(gw, a, session="s-2")
        rb = _post(gw, b, session="s-2")  # the client's history diverged: sent whole, it replaces
        stale = _post(gw, more, session="s-2", context=ra.headers[HASH])
        fresh = _post(gw, more, session="s-2", context=rb.headers[HASH])
        bad_hash = _post(gw, more, session="s-2", context="xyz")
        bad_id = _post(gw, a, session="no spaces allowed")
    assert nothing_sent == 0
    for r, why in ((unknown, "is unknown"), (stale, "holds another history")):
        assert r.status_code == 409, r.text
        err = r.json()["error"]
        assert err["code"] == "context_mismatch" and err["param"] == HASH and why in err["message"]
        assert "send the whole history" in err["message"]
    assert ra.status_code == rb.status_code == fresh.status_code == 200
    assert rec.chats[-1]["messages"] == b + more
    assert bad_hash.status_code == 400 and bad_hash.json()["error"]["param"] == HASH
    assert bad_id.status_code == 400 and bad_id.json()["error"]["param"] == SESSION


def test_eviction_by_count_and_by_time(tmp_path, proxy) -> None:
    url, _ = proxy
    more = [{"role": "assistant", "content": "Yes."}, {"role": "user", "content": "Go on."}]
    hashes = {}
    # By count, with a time-to-live no request of a loaded machine comes near.
    config = gateway_config(tmp_path, url, serve={"sessions": {"max_sessions": 2, "ttl_s": 3600.0}})
    with running_gateway(config) as gw:
        for name in ("a", "b", "c"):  # c evicts a, the least recently used
            r = _post(gw, [SYSTEM, {"role": "user", "content": f"Session {name}?"}], session=name)
            assert r.status_code == 200, r.text
            hashes[name] = r.headers[HASH]
        evicted = _post(gw, more, session="a", context=hashes["a"])
        kept = _post(gw, more, session="c", context=hashes["c"])
        metrics = httpx.get(gw + "/metrics").text
    assert "least recently used session(s) evicted" in _session_note(r)
    assert evicted.status_code == 409 and "is unknown" in evicted.json()["error"]["message"]
    assert kept.status_code == 200, kept.text
    assert "docsan_sessions_evicted_total 1.0" in metrics and "docsan_sessions 2.0" in metrics
    assert 'docsan_session_requests_total{outcome="mismatch"} 1.0' in metrics
    # By time: a wait past ttl_s since the last use (only a longer wait than asked for can happen).
    config = gateway_config(tmp_path, url, serve={"sessions": {"ttl_s": 1.0}})
    with running_gateway(config) as gw:
        first = _post(gw, [SYSTEM, {"role": "user", "content": "Session t?"}], session="t")
        assert first.status_code == 200, first.text
        time.sleep(1.5)
        expired = _post(gw, more, session="t", context=first.headers[HASH])
    assert expired.status_code == 409, expired.text


def test_eviction_by_bytes_and_a_history_larger_than_the_store(tmp_path, proxy) -> None:
    url, _ = proxy
    one = [SYSTEM, {"role": "user", "content": " ".join(f"w{i}" for i in range(150)) + "?"}]  # 800 bytes stored
    config = gateway_config(tmp_path, url, serve={"sessions": {"max_bytes": 1500}})
    more = [{"role": "assistant", "content": "Yes."}, {"role": "user", "content": "Go on."}]
    with running_gateway(config) as gw:
        x = _post(gw, one, session="x")
        y = _post(gw, one, session="y")  # both do not fit in 1,500 bytes: x goes
        x_again = _post(gw, more, session="x", context=x.headers[HASH])
        y_again = _post(gw, more, session="y", context=y.headers[HASH])
        huge = _post(gw, [SYSTEM, {"role": "user", "content": " ".join(f"v{i}" for i in range(400))}], session="z")
    assert x.status_code == y.status_code == 200
    assert x_again.status_code == 409 and y_again.status_code == 200
    # Not stored: answered, but no hash to build on, and the note says why.
    assert huge.status_code == 200 and HASH not in huge.headers
    assert "exceed serve.sessions.max_bytes" in _session_note(huge)


def test_the_client_helper_sends_deltas_and_resends_after_eviction(tmp_path, proxy) -> None:
    openai = pytest.importorskip("openai")
    from docsan.client import SessionClient

    url, rec = proxy
    sizes: list[int] = []
    http = httpx.Client(event_hooks={"request": [lambda req: sizes.append(len(req.content))]})
    config = gateway_config(tmp_path, url, serve={"sessions": {"max_sessions": 1}})
    with running_gateway(config) as gw:
        client = openai.OpenAI(base_url=gw + "/v1", api_key="k", max_retries=0, http_client=http)
        model = client.models.list().data[0].id
        chat = SessionClient(client)
        history: list[dict[str, Any]] = [SYSTEM]
        for i in range(5):
            history.append({"role": "user", "content": f"Question {i}: " + "context " * 60})
            reply = chat.create(model=model, messages=history, max_tokens=2)
            history.append({"role": "assistant", "content": reply.choices[0].message.content or "ok"})
        assert chat.resends == 0 and chat.requests == 5
        SessionClient(client).create(model=model, messages=[SYSTEM, {"role": "user", "content": "Hi"}], max_tokens=2)
        history.append({"role": "user", "content": "Last question?"})
        last = chat.create(model=model, messages=history, max_tokens=2)  # its session was evicted meanwhile
    assert last.choices[0].message.role == "assistant"
    assert chat.resends == 1 and chat.requests == 7  # the delta got 409, then the whole history went
    turns = [n for n in sizes if n > 0]  # the chat requests (models.list has no body)
    whole = len(json.dumps({"messages": history[:10], "model": model, "max_tokens": 2}))
    # Turn 5 sent two messages (the answer and the question) where the whole history is 10; vLLM got all 10.
    assert len(rec.chats[4]["messages"]) == 10 and turns[4] < 0.4 * whole
    assert turns[-1] > 3 * turns[-2]  # after the 409: the whole history


@pytest.mark.fault
def test_redis_sessions_shared_by_two_gateway_processes_and_redis_stopped(tmp_path, proxy, fault_log) -> None:
    """Two `docsan serve` processes share a session through one Redis; with Redis stopped, session requests get
    503 (nothing sent upstream, never a stale history) and the others are served; after Redis returns (empty:
    no persistence) the old hash gets 409 and a whole history is accepted."""
    url, rec = proxy
    redis = RedisServer(tmp_path).start()
    path = tmp_path / "docsan.toml"
    path.write_text(
        f'[extract]\nocr = "never"\n[runner]\nqueue_path = "{tmp_path / "q.sqlite3"}"\n{tiers_toml(url)}'
        f'[serve]\npoll_interval_s = 0.25\n[serve.sessions]\nstore = "{redis.url}"\ntimeout_s = 0.5\n',
        encoding="utf-8",
    )
    first = [SYSTEM, {"role": "user", "content": "Remember: the gate code is 7714."}]
    d1 = [{"role": "assistant", "content": "Remembered."}, {"role": "user", "content": "And the gate?"}]
    d2 = [{"role": "assistant", "content": "7714."}, {"role": "user", "content": "Thanks."}]
    try:
        with gateway_process(path) as a, gateway_process(path) as b:
            r1 = _post(a.url, first, session="shared")
            r2 = _post(b.url, d1, session="shared", context=r1.headers[HASH])  # the other replica holds it too
            r3 = _post(a.url, d2, session="shared", context=r2.headers[HASH])
            assert [r.status_code for r in (r1, r2, r3)] == [200, 200, 200], (r1.text, r2.text, r3.text)
            assert rec.chats[-1]["messages"] == first + d1 + d2
            sent = len(rec.chats)
            redis.stop()
            t0 = time.monotonic()
            down_delta = _post(a.url, d2, session="shared", context=r3.headers[HASH])
            down_whole = _post(b.url, first, session="shared")
            waited = time.monotonic() - t0
            assert len(rec.chats) == sent  # nothing reached the upstream
            plain = _post(a.url, first)
            ready_down = httpx.get(a.url + "/ready").status_code
            redis.start()  # same port, nothing kept
            t1 = time.monotonic()
            back_delta = _post(b.url, d2, session="shared", context=r3.headers[HASH])
            back_s = time.monotonic() - t1
            back_whole = _post(b.url, first + d1 + d2, session="shared")
            metrics = httpx.get(a.url + "/metrics").text
    finally:
        redis.stop()
    for r in (down_delta, down_whole):
        assert r.status_code == 503, r.text
        assert r.json()["error"]["code"] == "session_store_unavailable" and "retry-after" in r.headers
    assert waited < 10
    assert plain.status_code == 200
    assert back_delta.status_code == 409 and back_whole.status_code == 200
    assert back_whole.headers[HASH] == documented_hash(first + d1 + d2)
    assert 'docsan_session_requests_total{outcome="unavailable"} 1.0' in metrics
    fault_log["redis_stopped"] = {
        "what": "the Redis that two docsan serve processes share for sessions killed while a session is in use, "
        "then started again (empty)",
        "client_sees": f"session requests: {down_delta.status_code} {down_delta.json()['error']['code']} "
        f"({down_delta.json()['error']['message'][:90]}...); requests without a session: {plain.status_code}; "
        f"after Redis is back: the old hash {back_delta.status_code} context_mismatch, the whole history "
        f"{back_whole.status_code}",
        "two_503s_answered_in_s": round(waited, 2),
        "sent_upstream_while_down": 0,
        "ready_while_down": ready_down,
        "first_answer_after_redis_back_s": round(back_s, 2),
    }


def test_config_file_names_the_store(tmp_path: Path) -> None:
    from docsan.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('[serve.sessions]\nstore = "redis://127.0.0.1:1/0"\nmax_sessions = 5\n', encoding="utf-8")
    cfg = load_config(path).serve.sessions
    assert cfg.store == "redis://127.0.0.1:1/0" and cfg.max_sessions == 5 and cfg.ttl_s == 3600
