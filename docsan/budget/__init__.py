"""Token budgets with the served model's tokenizer.

- :class:`Tokenizer`: exact counts with a local fast tokenizer (default DeepSeek-V4).
- :func:`fit_document`: keep whole paragraphs within a budget (head, head-tail, query).
- :func:`fit_messages`: trim a chat history to a budget.
- :func:`neutralise`: make text that spells control tokens encode as plain text.

The stages ``budget`` and ``special_tokens`` (in :mod:`docsan.stages`) wrap these for the pipeline. Each name's
module is imported on first use (docsan.lazy_exports): ``docsan clean`` without ``--budget`` reads this package's
template markers, control tokens and tokenizer, never its ranking, truncation or chat trimming.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from docsan.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from docsan.budget.chat_trim import ChatFit, CountMessages, count_messages_default, fit_chat, fit_messages
    from docsan.budget.control_tokens import neutralise
    from docsan.budget.tokenizer import Tokenizer, TokenizerError
    from docsan.budget.truncate import fit_document

_HOMES = {
    "docsan.budget.chat_trim": ("ChatFit", "CountMessages", "count_messages_default", "fit_chat", "fit_messages"),
    "docsan.budget.control_tokens": ("neutralise",),
    "docsan.budget.tokenizer": ("Tokenizer", "TokenizerError"),
    "docsan.budget.truncate": ("fit_document",),
}

__all__ = [
    "ChatFit",
    "CountMessages",
    "Tokenizer",
    "TokenizerError",
    "count_messages_default",
    "fit_chat",
    "fit_document",
    "fit_messages",
    "neutralise",
]

__getattr__, __dir__ = lazy_exports(globals(), _HOMES)
