"""What the planner needs from a model folder, read without loading any weights.

``config.json`` gives the shape (layers, heads, KV heads, MLA ranks, position limit);
the JSON header of each ``*.safetensors`` file gives every tensor's dtype and shape, so
the exact weight bytes are summed from the headers alone. A folder without safetensors
(only a config) gets a parameter-count estimate from the config instead.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docsan.runner.errors import RunnerError

DTYPE_BYTES: dict[str, float] = {
    "float32": 4, "float": 4, "F32": 4,
    "float16": 2, "half": 2, "F16": 2,
    "bfloat16": 2, "BF16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F64": 8,
}  # fmt: skip

# A safetensors header is a little-endian u64 length then that much JSON; refuse absurd lengths
# (a corrupt or hostile file) instead of reading gigabytes.
MAX_HEADER_BYTES = 100 * 1024**2


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The shape of a transformer, as far as memory planning is concerned."""

    name: str
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    max_position_embeddings: int
    torch_dtype: str
    # MLA (DeepSeek-V2/V3): the cache holds one latent of kv_lora_rank + qk_rope_head_dim per layer.
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    param_count: int = 0
    # Exact bytes summed from safetensors headers; None when the folder has none.
    safetensors_bytes: int | None = None
    # The checkpoint is quantized (config.json has a quantization_config): its stored bytes are the truth.
    quantized: bool = False
    # Bytes per parameter of a quantized checkpoint (fp8: 1, 4-bit: 0.5), when its config says.
    quant_bytes: float | None = None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    def kv_bytes_per_token(self, kv_dtype_bytes: float) -> int:
        """KV-cache bytes one token occupies across all layers.

        Standard attention stores a key and a value (factor 2) per KV head (GQA/MQA: fewer
        KV heads than query heads). MLA stores one compressed latent per layer, no factor 2
        and no heads: vLLM's ``MLAAttentionSpec`` has num_kv_heads=1,
        head_size=kv_lora_rank+qk_rope_head_dim and head_size_v=0
        (vllm/v1/kv_cache_interface.py, vllm 0.32.0).
        """
        if self.is_mla:
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
            return math.ceil(self.num_layers * (self.kv_lora_rank + self.qk_rope_head_dim) * kv_dtype_bytes)
        return math.ceil(2 * self.num_layers * self.num_kv_heads * self.head_dim * kv_dtype_bytes)

    def weight_bytes(self, dtype_bytes: float) -> int:
        """Bytes the weights take once loaded in a dtype of ``dtype_bytes`` per parameter.

        A quantized checkpoint is loaded as stored, so its safetensors bytes are exact (or,
        without safetensors, parameters × its quantized width); otherwise vLLM casts every
        parameter to the serving dtype: count × bytes (the count itself is exact when it
        comes from safetensors headers).
        """
        if self.quantized and self.safetensors_bytes is not None:
            return self.safetensors_bytes
        if self.quantized and self.quant_bytes is not None:
            return math.ceil(self.param_count * self.quant_bytes)  # block scales (<0.1%) not counted
        return math.ceil(self.param_count * dtype_bytes)


def load_model_info(folder: str | Path) -> ModelInfo:
    """Read ``folder/config.json`` and the safetensors headers beside it."""
    folder = Path(folder)
    cfg_path = folder / "config.json"
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except OSError as err:
        raise RunnerError(f"{cfg_path}: cannot read the model config: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise RunnerError(f"{cfg_path}: invalid JSON: {err}") from None
    files = sorted(folder.glob("*.safetensors"))
    st_bytes, st_params = _safetensors_totals(files) if files else (None, None)
    return info_from_config(cfg, name=folder.name, safetensors_bytes=st_bytes, safetensors_params=st_params)


def info_from_config(
    cfg: dict[str, Any],
    name: str = "model",
    safetensors_bytes: int | None = None,
    safetensors_params: int | None = None,
) -> ModelInfo:
    cfg = {**cfg.get("text_config", {}), **cfg}  # multimodal configs nest the language model
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
    except KeyError as err:
        raise RunnerError(f"{name}: config.json lacks {err.args[0]}; not a decoder-only transformer config") from None
    kv_heads = int(cfg.get("num_key_value_heads") or heads)  # absent: plain multi-head attention
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    mla = cfg.get("kv_lora_rank") is not None
    return ModelInfo(
        name=name,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=int(cfg.get("max_position_embeddings") or 0),
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
        kv_lora_rank=int(cfg["kv_lora_rank"]) if mla else None,
        qk_rope_head_dim=int(cfg["qk_rope_head_dim"]) if mla else None,
        param_count=safetensors_params if safetensors_params is not None else estimate_params(cfg),
        safetensors_bytes=safetensors_bytes,
        quantized="quantization_config" in cfg,
        quant_bytes=_quant_bytes(cfg.get("quantization_config")),
    )


def _quant_bytes(qcfg: Any) -> float | None:
    """Bytes per weight of a quantized checkpoint: fp8 → 1, ``bits`` (awq/gptq) → bits / 8."""
    if not isinstance(qcfg, dict):
        return None
    if "fp8" in str(qcfg.get("quant_method", "")):
        return 1.0
    bits = qcfg.get("bits") or qcfg.get("w_bit")
    return int(bits) / 8 if bits else None


def estimate_params(cfg: dict[str, Any]) -> int:
    """Parameter count of a Llama-style decoder (dense or MoE; standard attention or MLA) from its config.

    Exact for Llama and Qwen2 checkpoints (embeddings, attention, gated MLP, RMSNorm weights);
    extra modules a config does not describe (e.g. DeepSeek's multi-token-prediction layer) are not counted.
    """
    hidden = int(cfg["hidden_size"])
    layers = int(cfg["num_hidden_layers"])
    heads = int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    vocab = int(cfg.get("vocab_size", 0))
    embed = vocab * hidden * (1 if cfg.get("tie_word_embeddings", False) else 2)

    if cfg.get("kv_lora_rank") is not None:
        attn = _mla_params(cfg, hidden, heads)
    else:
        # Qwen2 always has q/k/v biases; Llama-style configs say so with attention_bias.
        qkv_bias = bool(cfg.get("attention_bias", cfg.get("model_type") == "qwen2"))
        q, kv = heads * head_dim, kv_heads * head_dim
        attn = hidden * (q + 2 * kv) + q * hidden + (q + 2 * kv if qkv_bias else 0)

    dense_mlp = 3 * hidden * int(cfg.get("intermediate_size", 0))  # gate, up, down
    experts = int(cfg.get("n_routed_experts") or cfg.get("num_experts") or 0)
    if experts:
        moe_inter = int(cfg["moe_intermediate_size"])
        shared = int(cfg.get("n_shared_experts") or 0)
        moe_mlp = (experts + shared) * 3 * hidden * moe_inter + hidden * experts  # experts + router
        if cfg.get("topk_method") == "noaux_tc":
            moe_mlp += experts  # DeepSeek-V3's e_score_correction_bias
        dense_layers = int(cfg.get("first_k_dense_replace") or 0)
        mlp_total = dense_layers * dense_mlp + (layers - dense_layers) * moe_mlp
    else:
        mlp_total = layers * dense_mlp
    norms = layers * 2 * hidden + hidden  # two RMSNorms per layer, one final
    return embed + layers * attn + mlp_total + norms


def _mla_params(cfg: dict[str, Any], hidden: int, heads: int) -> int:
    """DeepSeek-V2/V3 multi-head latent attention projections, with their two latent RMSNorms."""
    kv_rank = int(cfg["kv_lora_rank"])
    rope = int(cfg["qk_rope_head_dim"])
    nope = int(cfg["qk_nope_head_dim"])
    v_dim = int(cfg["v_head_dim"])
    q_rank = cfg.get("q_lora_rank")
    q_head = heads * (nope + rope)
    q = hidden * q_head if q_rank is None else hidden * int(q_rank) + int(q_rank) + int(q_rank) * q_head
    kv = hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim)
    return q + kv + heads * v_dim * hidden


def _safetensors_totals(files: list[Path]) -> tuple[int, int]:
    """Sum tensor bytes and element counts over the headers of ``files`` (no tensor data is read)."""
    total_bytes = total_params = 0
    for path in files:
        with path.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                raise RunnerError(f"{path}: truncated safetensors file")
            (length,) = struct.unpack("<Q", raw)
            if length > MAX_HEADER_BYTES:
                raise RunnerError(f"{path}: safetensors header of {length} bytes is not plausible")
            try:
                header = json.loads(fh.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise RunnerError(f"{path}: unreadable safetensors header: {err}") from None
        for key, meta in header.items():
            if key == "__metadata__":
                continue
            start, end = meta["data_offsets"]
            total_bytes += end - start
            total_params += math.prod(meta["shape"])
    return total_bytes, total_params
