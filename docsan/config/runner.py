"""The ``[runner]`` section of the TOML configuration (only pydantic here: docsan.config imports it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from docsan.config.token_budget import BudgetTokens

MIB = 1024**2

# Where `docsan ask` runs a prompt: the bundled CPU engine, vLLM in this process (GPU), or vllm serve endpoints.
BackendName = Literal["embedded", "inprocess", "remote"]


class EmbeddedConfig(BaseModel):
    """The embedded CPU engine (vLLM's CPU build running the bundled SmolLM2)."""

    model_config = ConfigDict(extra="forbid")

    # Always explicit: vLLM's CPU default sizes the cache from one NUMA node's memory and fails
    # here. 512 MiB holds about 23,000 SmolLM2 tokens (23,040 bytes each), enough for 2 full-length
    # 8k requests or many short ones, and stays small on a machine shared by several users.
    kv_cache_bytes: int = Field(512 * MIB, gt=0)
    # Four concurrent requests already saturate two cores.
    max_num_seqs: int = Field(4, gt=0)
    # vLLM's CPU attention needs a multiple of 32; 128 is its own CPU default.
    block_size: int = Field(128, gt=0, multiple_of=32)
    # None: the model's position limit (SmolLM2: 8192).
    max_model_len: int | None = Field(None, gt=0)


class RunnerConfig(BaseModel):
    """Everything ``docsan ask`` / ``plan`` / ``queue`` read from ``[runner]``."""

    model_config = ConfigDict(extra="forbid")

    # embedded runs anywhere (CPU, the bundled SmolLM2); inprocess needs a GPU; remote, a vllm serve endpoint per tier.
    backend: BackendName = "embedded"
    # The seed's gateway limit: prompt + max_tokens above this is refused whatever the tiers say.
    hard_limit: int = Field(32768, gt=0)
    # Prompt token budget for `docsan ask` (chat template included); None: no truncation, the
    # guard and the router decide (a long document then goes to the deferred queue or is refused). 0 is
    # refused, not read as none (docsan/config/token_budget.py).
    budget_tokens: BudgetTokens | None = None
    # A max_tokens of 0, negative or not an integer is refused (false) or replaced by the tier's default (true);
    # `docsan ask --coerce` turns it on for one request.
    coerce_max_tokens: bool = False
    # The deferred queue's SQLite file; None: $DOCSAN_HOME/queue.sqlite3.
    queue_path: Path | None = None
    # Remote backend: seconds to wait for a connection.
    connect_timeout_s: float = Field(10.0, gt=0)
    # Remote backend: seconds to wait between streamed bytes.
    read_timeout_s: float = Field(120.0, gt=0)
    # Overrides and additions to the built-in tiers, validated by docsan.runner.tiers.build_tiers.
    tiers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    embedded: EmbeddedConfig = Field(default_factory=EmbeddedConfig)
