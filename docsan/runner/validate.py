"""Checks a tier's engine arguments before any engine starts, so a bad profile fails with advice, not a CUDA trace."""

from __future__ import annotations

from typing import Literal

from docsan.runner.errors import TierError
from docsan.runner.modelinfo import ModelInfo
from docsan.runner.tiers import Tier

Device = Literal["cuda", "cpu"]

# Dtypes people put in `--quantization` (the seed's own launch line says `--quantization fp16`).
_DTYPE_NAMES = {"fp16": "float16", "float16": "float16", "half": "float16", "bf16": "bfloat16",
                "bfloat16": "bfloat16", "fp32": "float32", "float32": "float32"}  # fmt: skip
_FP8_QUANT = {"fp8", "ptpc_fp8", "fbgemm_fp8", "modelopt"}
# vLLM 0.32's attention backends: CPU advertises MultipleOf(32) (cpu_attn.py); FlashAttention,
# Triton and FlexAttention on CUDA advertise MultipleOf(16).
_BLOCK_MULTIPLE: dict[Device, int] = {"cpu": 32, "cuda": 16}


def tier_problems(tier: Tier, device: Device = "cuda", model: ModelInfo | None = None) -> list[str]:
    """Every reason ``tier`` cannot start on ``device`` with ``model``, each with a suggestion."""
    eng, gpu = tier.engine, tier.gpu
    out: list[str] = []
    if device == "cuda" and eng.dtype == "bfloat16" and not gpu.supports_bf16:
        out.append(f'dtype bfloat16 needs compute capability 8.0+, {gpu.name} is {gpu.sm}: use dtype = "float16"')
    quant = (eng.quantization or "").lower()
    if quant in _DTYPE_NAMES:
        out.append(
            f'quantization = "{eng.quantization}" is a dtype, not a quantization method: '
            f'remove quantization and set dtype = "{_DTYPE_NAMES[quant]}"'
        )
    if device == "cuda" and quant in _FP8_QUANT and not gpu.supports_fp8:
        out.append(
            f"quantization {eng.quantization} computes in fp8, which needs compute capability 8.9+ "
            f"(Ada, Hopper); {gpu.name} is {gpu.sm}: use an awq/gptq (4-bit) or int8 checkpoint, or an sm_89+ GPU"
        )
    if device == "cuda" and eng.kv_cache_dtype.startswith("fp8") and not gpu.supports_fp8:
        out.append(
            f"kv_cache_dtype {eng.kv_cache_dtype} needs compute capability 8.9+ for fp8; {gpu.name} is {gpu.sm}: "
            'use kv_cache_dtype = "auto"'
        )
    multiple = _BLOCK_MULTIPLE[device]
    if eng.block_size % multiple:
        nearest = max(multiple, round(eng.block_size / multiple) * multiple)
        out.append(
            f"block_size {eng.block_size} is rejected by vLLM's {device.upper()} attention, which needs a "
            f"multiple of {multiple}: use block_size = {nearest}"
        )
    if not eng.enable_chunked_prefill and eng.max_num_batched_tokens and eng.max_num_batched_tokens < eng.max_model_len:
        out.append(
            f"without chunked prefill, max_num_batched_tokens {eng.max_num_batched_tokens} must be at least "
            f"max_model_len {eng.max_model_len}: enable_chunked_prefill = true"
        )
    if model is not None and model.max_position_embeddings and eng.max_model_len > model.max_position_embeddings:
        out.append(
            f"max_model_len {eng.max_model_len} is above {model.name}'s position limit "
            f"{model.max_position_embeddings} (max_position_embeddings): use max_model_len = "
            f"{model.max_position_embeddings}"
        )
    return out


def validate_tier(tier: Tier, device: Device = "cuda", model: ModelInfo | None = None) -> None:
    """Raise :class:`TierError` naming the tier and every problem found."""
    problems = tier_problems(tier, device, model)
    if problems:
        raise TierError(f"tier {tier.name}: " + "; ".join(problems))
