"""The served model's chat template: the exact prompt token ids an OpenAI ``messages`` list becomes.

Counting must agree with what vLLM's OpenAI server feeds its engine, token for token, or a
budget that "fits" is cut short at ``max_model_len``. vLLM renders the messages with the
tokenizer's Jinja chat template (``transformers``' ``apply_chat_template``: the named special
tokens as template variables, ``add_generation_prompt=True``) and encodes the result without
adding special tokens. This module does the same with transformers' own renderer
(``render_jinja_template``, which imports no torch) and the Rust ``tokenizers`` library, so
``docsan ask --dry-run`` and the gateway never pay for torch at start-up.

Before rendering, messages are put in the form vLLM's server gives the template
(``vllm/renderers/chat_utils.py``, v0.32): text content parts joined with newlines, a
missing content as ``""``, tool-call arguments parsed from their JSON string to an object.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from docsan.budget.tokenizer import Tokenizer, TokenizerError
from docsan.runner.errors import RunnerError

# The template variables transformers passes from the tokenizer's config (its SPECIAL_TOKENS_ATTRIBUTES).
NAMED_SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")

Message = dict[str, Any]
# What ``import transformers`` logs when torch is not installed (transformers/__init__.py, 5.x).
NO_TORCH_ADVICE = "PyTorch was not found."


def template_messages(messages: Sequence[Message]) -> list[Message]:
    """Messages as vLLM's OpenAI server hands them to the chat template (text models)."""
    out = []
    for msg in messages:
        m = {k: v for k, v in msg.items() if k != "content"}
        m["content"] = content_text(msg.get("content"))
        calls = m.get("tool_calls")
        if isinstance(calls, list):
            if not calls:
                del m["tool_calls"]  # vLLM drops an empty list so templates take the plain path
            else:
                m["tool_calls"] = [_parsed_call(c) for c in calls]
        out.append(m)
    return out


def content_text(content: Any) -> str:
    """A message's text as the template sees it: a string, or its text parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _parsed_call(call: Any) -> Any:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    call = copy.deepcopy(call)
    args = call["function"].get("arguments")
    if not args:
        call["function"]["arguments"] = {}
    elif isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = {}  # vLLM coerces unparsable arguments to an empty object, and so must the count
        call["function"]["arguments"] = parsed if isinstance(parsed, dict) else {}
    return call


class ChatTokenizer:
    """A model folder's tokenizer with its chat template: exact prompt ids and plain-text counts."""

    def __init__(self, tokenizer: Tokenizer, template: str, special: dict[str, str], name: str) -> None:
        self.tokenizer = tokenizer
        self.template = template
        self.special = special
        self.name = name

    @classmethod
    def load(cls, model_dir: str | Path) -> ChatTokenizer:
        """Load once per folder; later calls return the same object."""
        return _load(str(model_dir))

    def render(self, messages: Sequence[Message], tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text: the template applied, the assistant header opened."""
        try:
            rendered, _ = _jinja_renderer()(
                conversations=[template_messages(messages)],
                tools=tools,
                chat_template=self.template,
                add_generation_prompt=True,
                **self.special,
            )
        except Exception as err:  # noqa: BLE001 - a template raises whatever Jinja or its own raise_exception raise
            raise RunnerError(f"{self.name}: the chat template rejected the messages: {err}") from None
        return str(rendered[0])

    def prompt_ids(self, messages: Sequence[Message], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """Token ids of the full prompt: chat template, special tokens and the assistant header."""
        return self.tokenizer.encode(self.render(messages, tools))

    def count_messages(self, messages: Sequence[Message], tools: list[dict[str, Any]] | None = None) -> int:
        """The exact prompt length of ``messages``: a ``count_messages`` for :func:`docsan.budget.fit_messages`."""
        return len(self.prompt_ids(messages, tools))

    def count(self, text: str) -> int:
        """Tokens of plain text, without special tokens."""
        return self.tokenizer.count(text)


def _no_torch_advice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(NO_TORCH_ADVICE)


@lru_cache(maxsize=1)
def _jinja_renderer() -> Callable[..., Any]:
    """transformers' template renderer, imported with its "PyTorch was not found" advice dropped.

    ``import transformers`` logs that advice once when torch is missing, which is
    the documented gateway install (the ``serve`` extra: transformers for this
    renderer, no engine); the renderer needs no torch, so on ``docsan ask`` and
    ``docsan serve`` the line is only noise on stderr. The filter holds for this
    one import, on that one message: every other transformers warning still shows.
    """
    library_logger = logging.getLogger("transformers")
    library_logger.addFilter(_no_torch_advice)
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    finally:
        library_logger.removeFilter(_no_torch_advice)
    return render_jinja_template


@lru_cache(maxsize=8)
def _load(model_dir: str) -> ChatTokenizer:
    folder = Path(model_dir)
    name = folder.name
    try:
        tokenizer = Tokenizer.load(folder)
    except TokenizerError as err:
        raise RunnerError(f"{model_dir}: cannot load the tokenizer: {err}") from None
    config = _read_json(folder / "tokenizer_config.json")
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": ...}, {"name": "tool_use"...}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    if not isinstance(template, str) and (folder / "chat_template.jinja").is_file():
        # transformers 5 saves the template beside the config instead of inside it.
        template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    if not template:
        raise RunnerError(f"{name}: the tokenizer has no chat template; cannot build a chat prompt")
    special = {}
    for key in NAMED_SPECIAL_TOKENS:
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            special[key] = value
    return ChatTokenizer(tokenizer, template, special, name)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RunnerError(f"{path}: cannot read: {err}") from None
    return data if isinstance(data, dict) else {}
