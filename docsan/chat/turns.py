"""The turn structure of a chat history, shared by sanitizing and trimming.

A *turn* is a user message and the assistant and tool messages that answer
it, up to the next user message; messages before the first user message
(other than system ones) form a turn of their own. System and developer
messages belong to no turn: they stand alone, in place.

Whatever docsan removes from a history is a whole turn, a system message on
its own, or text inside a message. So the role order of the output is the
input's with whole turns taken out: no two user messages meet that did not
meet before (strict chat templates reject ``user, user``), a tool result is
never left without the call it answers, nor a call without its result.
"""

from __future__ import annotations

from collections.abc import Sequence

STANDALONE_ROLES = frozenset({"system", "developer"})


def turns(roles: Sequence[str]) -> tuple[list[int], list[list[int]]]:
    """Split message indices into (standalone system messages, turns in order)."""
    system = [i for i, r in enumerate(roles) if r in STANDALONE_ROLES]
    groups: list[list[int]] = []
    for i, role in enumerate(roles):
        if role in STANDALONE_ROLES:
            continue
        if role == "user" or not groups:
            groups.append([])
        groups[-1].append(i)
    return system, groups


def latest_turn(roles: Sequence[str]) -> list[int]:
    """Indices of the latest turn (the last user message and what follows it); empty when there is no turn."""
    _, groups = turns(roles)
    return groups[-1] if groups else []


def role_order_problems(messages: Sequence[dict]) -> list[str]:
    """What an OpenAI-compatible server or a strict chat template would reject in this order of messages.

    Checked: a ``tool`` message follows an assistant message (or another
    tool message) whose ``tool_calls`` hold its ``tool_call_id``; every call
    of an assistant message is answered before the next non-tool message when
    the history goes on after it; no two user messages and no two assistant
    messages without tool calls are adjacent; no message but a tool call has
    empty content.
    """
    problems: list[str] = []
    open_calls: set[str] = set()
    prev: dict | None = None
    for n, m in enumerate(messages, start=1):
        role = m.get("role")
        if role == "tool":
            if prev is None or prev.get("role") not in ("assistant", "tool"):
                problems.append(f"message {n}: tool result without a preceding tool call")
            elif m.get("tool_call_id") is not None and m.get("tool_call_id") not in open_calls:
                problems.append(f"message {n}: tool result for an unknown call {m.get('tool_call_id')!r}")
            open_calls.discard(m.get("tool_call_id"))
        else:
            if open_calls:
                problems.append(f"message {n}: calls {sorted(open_calls)} were never answered")
                open_calls = set()
            same = prev is not None and role == prev.get("role") and role in ("user", "assistant")
            if same and not (role == "assistant" and prev.get("tool_calls")):
                problems.append(f"message {n}: two {role} messages in a row")
        if role == "assistant" and m.get("tool_calls"):
            open_calls = {str(c.get("id")) for c in m["tool_calls"] if isinstance(c, dict) and c.get("id")}
        content = m.get("content")
        if not m.get("tool_calls") and (content == "" or content == [] or content is None) and role != "tool":
            problems.append(f"message {n}: empty {role} message")
        prev = m
    return problems
