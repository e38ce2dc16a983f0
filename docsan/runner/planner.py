"""Capacity planning: does a tier's configuration fit its GPU, and how many sequences can it serve?

All arithmetic is on the tier's card and engine arguments and the model's config/safetensors
headers; nothing is loaded. The budget vLLM gives the KV cache is

    memory × gpu_memory_utilization − weights − activation reserve

where the reserve stands for what vLLM measures in its profiling run (activation peak for
max_num_batched_tokens, the CUDA context, sampler buffers). It is an assumption, stated in the
output and adjustable with ``--reserve-gib``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from docsan.runner.modelinfo import DTYPE_BYTES, ModelInfo
from docsan.runner.tiers import GIB, Tier

# 1 GiB: vLLM's profiling peak for a 7B model at 2k–8k batched tokens is a few hundred MB,
# plus about 0.5 GiB of CUDA context and non-torch allocations outside its accounting.
DEFAULT_RESERVE_BYTES = 1 * GIB


@dataclass(frozen=True, slots=True)
class Plan:
    """The planner's answer for one tier and one model; ``problems`` empty means it fits."""

    tier: str
    gpu: str
    model: str
    dtype: str
    kv_cache_dtype: str
    gpu_memory_bytes: int
    gpu_memory_utilization: float
    reserve_bytes: int
    weights_bytes: int
    kv_bytes_per_token: int
    kv_capacity_bytes: int
    kv_capacity_tokens: int
    block_size: int
    kv_capacity_blocks: int
    max_model_len: int
    max_num_seqs: int
    # Sequences that fit at full max_model_len at once (whole blocks per sequence).
    max_concurrent_seqs: int
    mla: bool
    problems: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ok": self.ok}


def resolve_dtype(dtype: str, model: ModelInfo, tier: Tier) -> str:
    """vLLM's ``auto``: the checkpoint's dtype, but fp16 where the GPU has no bf16."""
    if dtype in ("auto", None):
        dtype = model.torch_dtype
        if dtype == "bfloat16" and not tier.gpu.supports_bf16:
            return "float16"
    return {"half": "float16", "float": "float32"}.get(dtype, dtype)


def plan(tier: Tier, model: ModelInfo, dtype: str | None = None, reserve_bytes: int = DEFAULT_RESERVE_BYTES) -> Plan:
    eng = tier.engine
    dt = resolve_dtype(dtype or eng.dtype, model, tier)
    dtype_bytes = DTYPE_BYTES[dt]
    kv_dt = dt if eng.kv_cache_dtype == "auto" else eng.kv_cache_dtype
    per_token = model.kv_bytes_per_token(DTYPE_BYTES[kv_dt])
    weights = model.weight_bytes(dtype_bytes)
    budget = int(tier.gpu.memory_bytes * eng.gpu_memory_utilization)
    kv_bytes = max(0, budget - weights - reserve_bytes)
    # vLLM allocates whole blocks; capacity in tokens is what those blocks hold.
    blocks = kv_bytes // (per_token * eng.block_size)
    tokens = blocks * eng.block_size
    blocks_per_seq = math.ceil(eng.max_model_len / eng.block_size)
    concurrent = blocks // blocks_per_seq
    problems: list[str] = []
    suggestions: list[str] = []
    gib = _gib
    if weights + reserve_bytes > budget:
        problems.append(
            f"weights {gib(weights)} + reserve {gib(reserve_bytes)} exceed the {gib(budget)} vLLM may use on "
            f"{tier.gpu.name} ({gib(tier.gpu.memory_bytes)} × {eng.gpu_memory_utilization})"
        )
        room = budget - reserve_bytes
        four_bit = math.ceil(model.param_count * 0.5)
        if room > four_bit:
            suggestions.append(
                f"a 4-bit (awq/gptq) checkpoint: {gib(four_bit)} of weights, "
                f"{gib(room - four_bit)} left for the KV cache"
            )
        else:
            cards = math.ceil((weights + reserve_bytes) / budget)
            suggestions.append(
                f"a smaller model, or about {cards} such GPUs with tensor parallelism "
                f"(weights alone need {gib(weights)})"
            )
    elif concurrent == 0:
        problems.append(
            f"the KV cache holds {tokens} tokens, less than one sequence of max_model_len {eng.max_model_len}: "
            "no request at full length could ever be served"
        )
        suggestions.append(f"max_model_len = {tokens}" if tokens else "a larger GPU or a smaller model")
    elif eng.max_num_seqs > concurrent:
        problems.append(
            f"max_num_seqs {eng.max_num_seqs} × max_model_len {eng.max_model_len} = "
            f"{eng.max_num_seqs * eng.max_model_len} tokens, but the KV cache holds {tokens}: "
            f"only {concurrent} sequences fit at full length"
        )
        per_seq_len = (blocks // eng.max_num_seqs) * eng.block_size
        suggestions.append(
            f"max_num_seqs = {concurrent}, or max_model_len = {per_seq_len} to keep max_num_seqs {eng.max_num_seqs}"
        )
    return Plan(
        tier=tier.name,
        gpu=tier.gpu.name,
        model=model.name,
        dtype=dt,
        kv_cache_dtype=kv_dt,
        gpu_memory_bytes=tier.gpu.memory_bytes,
        gpu_memory_utilization=eng.gpu_memory_utilization,
        reserve_bytes=reserve_bytes,
        weights_bytes=weights,
        kv_bytes_per_token=per_token,
        kv_capacity_bytes=kv_bytes,
        kv_capacity_tokens=tokens,
        block_size=eng.block_size,
        kv_capacity_blocks=blocks,
        max_model_len=eng.max_model_len,
        max_num_seqs=eng.max_num_seqs,
        max_concurrent_seqs=concurrent,
        mla=model.is_mla,
        problems=problems,
        suggestions=suggestions,
    )


def _gib(n: int) -> str:
    return f"{n / GIB:.2f} GiB"
