"""The in-process GPU backend: ``vllm.LLM`` with the tier's own engine arguments, on a machine with its GPU."""

from __future__ import annotations

from docsan.runner.backends.base import Generation, GenerationRequest, OnText
from docsan.runner.backends.vllm_engine import VllmEngine
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.modelinfo import load_model_info
from docsan.runner.tiers import Tier
from docsan.runner.validate import validate_tier


def tier_model_dir(tier: Tier) -> str:
    """The tier's model folder; the bundled SmolLM2 when the profile names none."""
    return tier.engine.model or str(embedded_model_dir())


def inprocess_engine_kwargs(tier: Tier) -> dict[str, object]:
    """The tier's engine arguments as ``vllm.LLM`` keywords, after validation against its GPU and model."""
    model = tier_model_dir(tier)
    validate_tier(tier, "cuda", load_model_info(model))
    eng = tier.engine
    kwargs: dict[str, object] = {
        "model": model,
        "dtype": eng.dtype,
        "max_model_len": eng.max_model_len,
        "block_size": eng.block_size,
        "max_num_seqs": eng.max_num_seqs,
        "gpu_memory_utilization": eng.gpu_memory_utilization,
        "kv_cache_dtype": eng.kv_cache_dtype,
        "enable_prefix_caching": eng.enable_prefix_caching,
        "enable_chunked_prefill": eng.enable_chunked_prefill,
    }
    if eng.quantization:
        kwargs["quantization"] = eng.quantization
    if eng.max_num_batched_tokens:
        kwargs["max_num_batched_tokens"] = eng.max_num_batched_tokens
    return kwargs


class InProcessBackend:
    """One engine per tier, started on first use (a GPU machine normally serves one tier)."""

    name = "inprocess"

    def __init__(self) -> None:
        self._engines: dict[str, VllmEngine] = {}

    def engine(self, tier: Tier) -> VllmEngine:
        if tier.name not in self._engines:
            self._engines[tier.name] = VllmEngine(**inprocess_engine_kwargs(tier))
        return self._engines[tier.name]

    def generate(self, tier: Tier, request: GenerationRequest, on_text: OnText | None = None) -> Generation:
        return self.engine(tier).generate(request, on_text)

    def close(self) -> None:
        self._engines.clear()
