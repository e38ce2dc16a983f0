"""The embedded default backend: vLLM's CPU build running the bundled SmolLM2-135M-Instruct.

Every tier maps to this one engine (a laptop has no T4/A10G/A100); the router and guard
still apply each tier's limits, capped by the model's own 8192 positions. The engine is
started once per process and reused.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from docsan.config.runner import EmbeddedConfig
from docsan.runner.backends.base import Generation, GenerationRequest, OnText
from docsan.runner.backends.vllm_engine import VllmEngine
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.modelinfo import load_model_info
from docsan.runner.tiers import Tier

_ENGINES: dict[tuple[object, ...], VllmEngine] = {}


def embedded_engine_kwargs(model_dir: Path, cfg: EmbeddedConfig) -> dict[str, object]:
    info = load_model_info(model_dir)
    return {
        "model": str(model_dir),
        "dtype": "bfloat16",
        "max_model_len": cfg.max_model_len or info.max_position_embeddings,
        "block_size": cfg.block_size,
        "max_num_seqs": cfg.max_num_seqs,
        # CUDA graphs and torch.compile buy nothing on CPU and cost start-up time.
        "enforce_eager": True,
        # Explicit, because vLLM's CPU default reserves from one NUMA node's memory and fails here.
        "kv_cache_memory_bytes": cfg.kv_cache_bytes,
    }


def embedded_engine(cfg: EmbeddedConfig | None = None, on_convert: Callable[[str], None] | None = None) -> VllmEngine:
    """The process's embedded engine, started (and the model converted) on first use."""
    cfg = cfg or EmbeddedConfig()
    kwargs = embedded_engine_kwargs(embedded_model_dir(on_convert=on_convert), cfg)
    key = tuple(sorted(kwargs.items()))
    if key not in _ENGINES:
        _ENGINES.clear()  # one CPU engine at a time: two would fight over the same cores and memory
        _ENGINES[key] = VllmEngine(**kwargs)
    return _ENGINES[key]


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, cfg: EmbeddedConfig | None = None, on_convert: Callable[[str], None] | None = None) -> None:
        self.cfg = cfg or EmbeddedConfig()
        self.on_convert = on_convert

    def generate(self, tier: Tier, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        # tier is deliberately unused beyond routing: all tiers share the one CPU engine.
        return embedded_engine(self.cfg, self.on_convert).generate(request, on_text)

    def close(self) -> None:
        """The engine stays cached for the process (tests and `queue run` reuse it)."""
