"""No stage leaves a chat message empty: what happens to a message a stage took all the text from.

The pipeline calls :func:`keep_messages` after every stage on a chat
document. A message whose text a stage removed entirely (a re-sent message
that ``neardup`` found to be a copy, a message that was nothing but hidden
characters to ``normalize``) is handled by its place in the history:

- an assistant message with ``tool_calls``: it keeps its calls and gets
  ``content: null`` (OpenAI's form for a pure tool call; never ``""``);
- a system or developer message: dropped, alone;
- a user message before the latest turn: its whole turn is dropped, the
  assistant and tool messages that answered it too: they only made sense
  with it. When the stage removes duplicates, it runs again without the
  dropped turns, so no later copy is removed in favour of text that is no
  longer there;
- an assistant or tool message, or any message of the latest turn, whose
  text was removed only as a duplicate (every change on it names what it
  duplicated): the removal is withdrawn, the message keeps its text (an
  answer or a tool result cannot go without breaking its turn, and the
  latest turn is what is being asked);
- otherwise (such a message emptied for another reason): before the latest
  turn its turn is dropped; in the latest turn the request cannot be asked,
  and :class:`~docsan.errors.InputError` says which message had nothing left.

Every dropped message is a Change (codes ``chat.turn_dropped`` and
``chat.message_dropped``, in the report of the stage that emptied it),
every withdrawn removal is counted in the stage's stats
(``duplicates_kept_in_place``). The role order that results is the input's
with whole turns taken out (:mod:`docsan.chat.turns`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from docsan.chat.turns import STANDALONE_ROLES, turns
from docsan.errors import InputError
from docsan.model import ChangeKind, Document, Page
from docsan.report import Change, ChangeCode, StageResult

TURN_DROPPED = ChangeCode(
    "chat.turn_dropped",
    ChangeKind.REMOVED,
    "a message of a turn whose user message a stage left without text (the answer went with the question)",
)
MESSAGE_DROPPED = ChangeCode(
    "chat.message_dropped", ChangeKind.REMOVED, "a system or developer message a stage left without text"
)
DROPPED_TURN = "turn dropped: message {n} ({role}) had nothing left after {stage}"
DROPPED_SYSTEM = "dropped: this {role} message had nothing left after {stage}"


@dataclass(slots=True)
class _Plan:
    drop: list[int] = field(default_factory=list)  # page numbers to drop
    reasons: dict[int, str] = field(default_factory=dict)
    restore: set[int] = field(default_factory=set)


def _only_duplicates(changes: list[Change]) -> bool:
    return bool(changes) and all(c.duplicate_of is not None for c in changes)


def _plan(before: Document, result: StageResult, stage: str) -> _Plan:
    before_pages = {p.number: p for p in before.pages}
    roles = [p.role or "user" for p in before.pages]
    numbers = [p.number for p in before.pages]
    _, groups = turns(roles)
    latest = {numbers[i] for i in groups[-1]} if groups else set()
    turn_of = {numbers[i]: [numbers[j] for j in group] for group in groups for i in group}
    plan = _Plan()
    changes_on: dict[int, list[Change]] = {}
    for c in result.changes:
        changes_on.setdefault(c.page, []).append(c)
    for page in result.document.pages:
        if page.text.strip() or not before_pages[page.number].text.strip():
            continue
        n, role = page.number, page.role or "user"
        message = before.chat.messages[n - 1] if before.chat is not None else {}
        duplicate = _only_duplicates(changes_on.get(n, []))
        if message.get("tool_calls"):
            continue  # rendered with content null; the stage's changes record the text
        if role in STANDALONE_ROLES:
            plan.drop.append(n)
            plan.reasons[n] = DROPPED_SYSTEM.format(role=role, stage=stage)
        elif duplicate and (role != "user" or n in latest):
            plan.restore.add(n)
        elif n in latest:
            what = changes_on[n][0].reason if changes_on.get(n) else f"removed by {stage}"
            raise InputError(before.name, f"message {n} ({role}) has nothing left after cleaning ({what})")
        else:
            for m in turn_of[n]:
                if m not in plan.reasons:
                    plan.drop.append(m)
                    plan.reasons[m] = DROPPED_TURN.format(n=n, role=role, stage=stage)
    return plan


def _copies_in(result: StageResult, gone: set[int], pages: dict[int, Page]) -> bool:
    """Does a removal outside ``gone`` name as its kept copy text that a message in ``gone`` holds?

    ``duplicate_of`` quotes the start of the kept copy (an ellipsis marks a
    longer one); a quote found in a dropped message's text means that copy
    may be gone, unless the stage's output still holds it elsewhere.
    """
    dropped = "\n".join(pages[n].text for n in gone)
    kept = "\n".join(p.text for p in result.document.pages if p.number not in gone)
    for c in result.changes:
        if c.duplicate_of is None or c.page in gone:
            continue
        quote = c.duplicate_of.removesuffix("…")
        if quote in dropped and quote not in kept:
            return True
    return False


def _without(doc: Document, numbers: set[int]) -> Document:
    return doc.with_pages([p for p in doc.pages if p.number not in numbers])


def keep_messages(stage: Callable[[Document], StageResult], before: Document, result: StageResult) -> StageResult:
    """``result`` of ``stage(before)`` on a chat document, with no message left empty (see the module doc)."""
    name = getattr(stage, "name", "stage")
    dropped: list[Change] = []
    pages: dict[int, Page] = {p.number: p for p in before.pages}
    # Each round drops at least one turn, so this ends.
    while True:
        plan = _plan(before, result, name)
        if not plan.drop:
            break
        gone = set(plan.drop)
        for n in sorted(gone):
            code = MESSAGE_DROPPED if pages[n].role in STANDALONE_ROLES else TURN_DROPPED
            dropped.append(code.change(plan.reasons[n], n, pages[n].text))
        before = _without(before, gone)
        if _copies_in(result, gone, pages):
            # A removal kept a copy that only a dropped message holds: decide the duplicates again without them.
            result = stage(before)
        else:
            changes = [c for c in result.changes if c.page not in gone]
            result = StageResult(_without(result.document, gone), changes, dict(result.stats))
    if not plan.restore and not dropped:
        return result
    stats = dict(result.stats)
    if plan.restore:
        doc = result.document
        restored = doc.with_pages([pages[p.number] if p.number in plan.restore else p for p in doc.pages])
        result = StageResult(restored, [c for c in result.changes if c.page not in plan.restore], stats)
        stats["duplicates_kept_in_place"] = len(plan.restore)
    if dropped:
        stats["messages_dropped"] = len({c.page for c in dropped})
    return StageResult(result.document, dropped + result.changes, stats)
