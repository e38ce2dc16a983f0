"""What a configuration reload changes, and which of those changes a running engine cannot take.

vLLM has no runtime reload of its engine arguments (``block_size``, ``max_num_seqs``,
``max_model_len``, dtypes, the model...): a changed value is applied where the gateway uses it
(its concurrency cap, its ledger's block rounding, its routing limits) and reported as needing a
restart of that tier's ``vllm serve``, whose new arguments ``docsan plan --tier NAME`` checks first.
"""

from __future__ import annotations

import hashlib
from typing import Any

from docsan.config import Config
from docsan.runner.tiers import build_tiers

ENGINE_RESTART = (
    "vLLM cannot change its engine arguments at runtime: restart the tier's vllm serve "
    "(check the new ones with `docsan plan --tier {tier}`)"
)
EMBEDDED_RESTART = "the embedded vLLM server keeps its engine settings: restart `docsan serve` to apply them"
GATEWAY_RESTART = "the gateway listens where it started: restart `docsan serve` to move it"
# Reservations in flight are held in the ledger they came from; a new one would start without them.
LEDGER_RESTART = "the gateway keeps the KV ledger it started with: restart `docsan serve` to change it"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def effective(config: Config) -> dict[str, Any]:
    """The settings as the gateway applies them: built tiers (built-ins merged), not the raw overrides."""
    data = config.model_dump(mode="json")
    data["runner"]["tiers"] = {n: t.model_dump(mode="json") for n, t in build_tiers(config.runner.tiers).items()}
    for section in ("sessions", "ledger"):
        store = data["serve"][section]["store"]
        if "@" in store:  # redis://user:password@host: the password is not echoed
            scheme, _, rest = store.partition("://")
            data["serve"][section]["store"] = f"{scheme}://<credentials>@{rest.rsplit('@', 1)[1]}"
    for secret in ("api_keys", "admin_token"):
        if data["serve"][secret]:
            data["serve"][secret] = (
                "<set>" if secret == "admin_token" else [f"<key {i + 1}>" for i in range(len(data["serve"][secret]))]
            )
    return flatten(data)


def _digest(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:8]


def diff(old: Config, new: Config) -> dict[str, Any]:
    """``{"changed": [{"field", "old", "new"}], "restart_required": [{"field", "reason"}]}``."""
    a, b = effective(old), effective(new)
    changed, restart = [], []
    for key in sorted(set(a) | set(b)):
        if a.get(key) == b.get(key):
            continue
        changed.append({"field": key, "old": a.get(key), "new": b.get(key)})
        parts = key.split(".")
        if parts[:2] == ["runner", "tiers"] and len(parts) > 3 and parts[3] == "engine":
            restart.append({"field": key, "reason": ENGINE_RESTART.format(tier=parts[2])})
        elif parts[:2] == ["runner", "embedded"]:
            restart.append({"field": key, "reason": EMBEDDED_RESTART})
        elif key in ("serve.host", "serve.port"):
            restart.append({"field": key, "reason": GATEWAY_RESTART})
        elif parts[:2] == ["serve", "ledger"]:
            restart.append({"field": key, "reason": LEDGER_RESTART})
    return {"changed": changed, "restart_required": restart}
