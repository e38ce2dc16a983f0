"""The control markers of well-known chat templates, guarded whatever tokenizer serves the prompt.

The guard escapes the served tokenizer's own added tokens (DeepSeek-V4's by
default). A cleaned document can still reach another model: the embedded
default (SmolLM2, ChatML), another tier, or a program that pastes it into its
own template. These are the turn and role markers of the common open-weight
templates, taken from each family's ``tokenizer_config.json`` added tokens.

Only markers that no ordinary text spells are listed: the ``<|...|>`` form,
and Gemma's ``<start_of_turn>``/``<end_of_turn>``, which look like tags but
are no HTML element (snake case) and occur nowhere in the shared corpus's
text layers, the hostile suite, the fixtures or the goldens; matching is
case-sensitive, so only these exact spellings are escaped. Llama 2 /
Mistral's ``[INST]``, ``<<SYS>>`` and ``<s>``/``</s>`` are left out on
purpose: they are also a bracketed word, a Markdown heading's neighbour and
an HTML strike-through tag, and a document quoting them must keep them (the
hostile suite's MANIFEST says so). Gemma's ``<bos>``/``<eos>`` are left out
for the same reason as ``<s>``: short words in angle brackets, not turn
markers.
"""

from __future__ import annotations

# family -> its markers; a marker may belong to several families (the first one names it in the report).
TEMPLATE_MARKERS: dict[str, tuple[str, ...]] = {
    # OpenAI ChatML: Qwen 1.5-3, SmolLM2, Hermes, Yi; Phi-4 adds <|im_sep|>.
    "chatml": ("<|im_start|>", "<|im_end|>", "<|im_sep|>", "<|endoftext|>"),
    # Llama 3 / 3.1 / 3.2 / 3.3.
    "llama3": (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eot_id|>",
        "<|eom_id|>",
        "<|python_tag|>",
    ),
    # Phi-3 / Phi-3.5, Zephyr.
    "phi3": ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>"),
    # Cohere Command R / R+.
    "command_r": (
        "<|START_OF_TURN_TOKEN|>",
        "<|END_OF_TURN_TOKEN|>",
        "<|SYSTEM_TOKEN|>",
        "<|USER_TOKEN|>",
        "<|CHATBOT_TOKEN|>",
    ),
    # IBM Granite 3.
    "granite": ("<|start_of_role|>", "<|end_of_role|>"),
    # Google Gemma: the only turn markers its formatting guide names (the roles are the plain words
    # user and model); transformers' GemmaConverter marks the same two as special tokens.
    "gemma": ("<start_of_turn>", "<end_of_turn>"),
}


def check_families(families: tuple[str, ...]) -> tuple[str, ...]:
    """``families`` unchanged; ValueError naming the first one the table does not have, and those it has."""
    unknown = [f for f in families if f not in TEMPLATE_MARKERS]
    if unknown:
        raise ValueError(f"unknown template {unknown[0]!r} (known: {', '.join(TEMPLATE_MARKERS)})")
    return families


def markers_of(families: tuple[str, ...]) -> dict[str, str]:
    """Every marker of ``families`` with the family that names it (the first listed that has it)."""
    out: dict[str, str] = {}
    for family in families:
        for marker in TEMPLATE_MARKERS[family]:
            out.setdefault(marker, family)
    return out
