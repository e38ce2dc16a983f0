"""Tier profiles: which GPU serves which prompt lengths, how fast, with which vLLM engine arguments.

The three built-in tiers are the seed's L1/L2/L3 deployment (T4 for prompts under 2k
tokens, A10G for 2k–8k, A100 for longer ones). A TOML configuration may override any
field of a built-in tier or add new tiers::

    [runner.tiers.a100]
    gpu = { name = "A100-40GB", memory_gib = 40, compute_capability = [8, 0] }

    [runner.tiers.a100.engine]
    model = "/models/Qwen2.5-7B-Instruct"
    max_model_len = 16384
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from docsan.runner.errors import TierError

GIB = 1024**3


class Gpu(BaseModel):
    """One GPU model: what the planner and the validation need to know about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    memory_gib: float = Field(gt=0)
    # (major, minor) as CUDA reports it: bf16 and FlashAttention need 8.0, fp8 compute 8.9.
    compute_capability: tuple[int, int]

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    @property
    def sm(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def supports_bf16(self) -> bool:
        return self.compute_capability >= (8, 0)

    @property
    def supports_fp8(self) -> bool:
        # vLLM docs (features/quantization/fp8): FP8 computation needs compute capability >= 8.9.
        return self.compute_capability >= (8, 9)

    @property
    def supports_flash_attention(self) -> bool:
        return self.compute_capability >= (8, 0)


Dtype = Literal["auto", "float16", "half", "bfloat16", "float32", "float"]
KvCacheDtype = Literal["auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"]


class EngineArgs(BaseModel):
    """The vLLM engine arguments a tier runs with (names as in ``vllm.LLM`` / ``vllm serve``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # None: the bundled SmolLM2-135M-Instruct (converted on first use), so every tier works out of the box.
    model: str | None = None
    dtype: Dtype = "bfloat16"
    max_model_len: int = Field(gt=0)
    # vLLM's CUDA default; the CPU backend needs a multiple of 32 (checked by validation).
    block_size: int = Field(16, gt=0)
    max_num_seqs: int = Field(gt=0)
    # Leave 10% of the card for the CUDA context, NCCL and fragmentation.
    gpu_memory_utilization: float = Field(0.90, gt=0, le=1)
    # A quantization *method* (awq, gptq, fp8, ...); None = the checkpoint's own.
    quantization: str | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    # The same document asked several questions shares its prefix: caching it saves prefill.
    enable_prefix_caching: bool = True
    # Chunked prefill splits a long prompt into max_num_batched_tokens slices interleaved with
    # decodes: vLLM's answer to the seed's "one 8k request blocks the whole batch for 15 s".
    enable_chunked_prefill: bool = True
    max_num_batched_tokens: int | None = Field(None, gt=0)


class Tier(BaseModel):
    """One serving tier: a GPU, the prompt lengths it serves, a latency target, an engine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    gpu: Gpu
    # Prompt tokens (chat template included) this tier serves: min <= n < max (max None: unbounded).
    min_prompt_tokens: int = Field(0, ge=0)
    max_prompt_tokens: int | None = Field(None, gt=0)
    latency_target_ms: int = Field(gt=0)
    # max_tokens used when a request sends none (the seed's old SDKs).
    default_max_tokens: int = Field(gt=0)
    # True: only priority requests run here in real time; others go to the deferred queue (seed: >8k).
    priority_only: bool = False
    # For the remote backend: the tier's OpenAI-compatible server (a `vllm serve` deployment).
    base_url: str | None = None
    # KV-cache tokens the tier's engine holds, for the gateway's admission ledger. None: what its vLLM server
    # reports (vllm:cache_config_info), else `docsan plan`'s kv_capacity_tokens for its model and GPU.
    capacity_tokens: int | None = Field(None, gt=0)
    engine: EngineArgs

    @model_validator(mode="after")
    def _range(self) -> Tier:
        if self.max_prompt_tokens is not None and self.max_prompt_tokens <= self.min_prompt_tokens:
            raise ValueError(f"max_prompt_tokens ({self.max_prompt_tokens}) must exceed min_prompt_tokens")
        if self.default_max_tokens >= self.engine.max_model_len:
            raise ValueError(
                f"default_max_tokens ({self.default_max_tokens}) leaves no room for a prompt "
                f"in max_model_len {self.engine.max_model_len}"
            )
        return self

    def serves(self, prompt_tokens: int) -> bool:
        upper = self.max_prompt_tokens
        return prompt_tokens >= self.min_prompt_tokens and (upper is None or prompt_tokens < upper)


T4 = Gpu(name="T4", memory_gib=16, compute_capability=(7, 5))
A10G = Gpu(name="A10G", memory_gib=24, compute_capability=(8, 6))
A100 = Gpu(name="A100-80GB", memory_gib=80, compute_capability=(8, 0))

# The seed's table: L1 <2k on T4×2 (200 ms), L2 2k–8k on A10G (500 ms), L3 >8k on A100 (2 s).
# max_model_len = the range's top plus room for the tier's answers. max_num_seqs stays within what
# `docsan plan` shows fits at full length for Qwen2.5-7B-Instruct in bf16 (a10g: 9, a100: 32);
# a T4 holds no 7B model in fp16 at all (the planner says so and suggests a 4-bit checkpoint).
BUILTIN_TIERS: dict[str, Tier] = {
    "t4": Tier(
        name="t4",
        gpu=T4,
        max_prompt_tokens=2048,
        latency_target_ms=200,
        default_max_tokens=256,
        # T4 is Turing: no bf16, so fp16; no FlashAttention (vLLM falls back to another backend).
        engine=EngineArgs(dtype="float16", max_model_len=4096, max_num_seqs=32, max_num_batched_tokens=2048),
    ),
    "a10g": Tier(
        name="a10g",
        gpu=A10G,
        min_prompt_tokens=2048,
        max_prompt_tokens=8192,
        latency_target_ms=500,
        default_max_tokens=512,
        engine=EngineArgs(max_model_len=12288, max_num_seqs=8, max_num_batched_tokens=4096),
    ),
    "a100": Tier(
        name="a100",
        gpu=A100,
        min_prompt_tokens=8192,
        latency_target_ms=2000,
        default_max_tokens=1024,
        priority_only=True,
        engine=EngineArgs(max_model_len=32768, max_num_seqs=8, max_num_batched_tokens=8192),
    ),
}


def build_tiers(overrides: dict[str, dict[str, Any]] | None = None) -> dict[str, Tier]:
    """The built-in tiers with TOML overrides merged in (nested tables merge key by key).

    A name that is not built in defines a new tier and must give every required field.
    """
    tiers = dict(BUILTIN_TIERS)
    for name, fields in (overrides or {}).items():
        base = tiers[name].model_dump() if name in tiers else {}
        merged = _merge(base, {**fields, "name": name})
        try:
            tiers[name] = Tier.model_validate(merged)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise TierError(f"runner.tiers.{name}: {loc}: {first['msg']}") from None
    return dict(sorted(tiers.items(), key=lambda kv: kv[1].min_prompt_tokens))


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
