"""``docsan plan``: will a tier's configuration fit its GPU, and how many sequences can it serve?"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from docsan.errors import DocsanError
from docsan.runner.embedded_model import embedded_model_dir
from docsan.runner.modelinfo import load_model_info
from docsan.runner.planner import DEFAULT_RESERVE_BYTES, Plan, plan
from docsan.runner.router import named_tier
from docsan.runner.tiers import GIB, Dtype, build_tiers
from docsan.runner.validate import tier_problems

from .common import (
    ConfigOption,
    FormatOption,
    JsonAlias,
    TextOrJson,
    choices,
    err_console,
    fail,
    get_config,
    wants_json,
)
from .exit_codes import ExitCode

# The choices are the config's own: a flag can only name a dtype a tier file could.
DtypeChoice = choices("DtypeChoice", Dtype)


def plan_cmd(
    tier: Annotated[str, typer.Option("--tier", help="Tier to plan: t4, a10g, a100, or one from the config.")],
    model: Annotated[
        Path | None,
        typer.Option("--model", help="Model folder (config.json, *.safetensors) (default: the tier's, else bundled)."),
    ] = None,
    dtype: Annotated[DtypeChoice | None, typer.Option("--dtype", help="Serving dtype (default: the tier's).")] = None,
    reserve_gib: Annotated[
        float, typer.Option("--reserve-gib", help="Activation/CUDA-context reserve subtracted before the KV cache.")
    ] = DEFAULT_RESERVE_BYTES / GIB,
    fmt: FormatOption = TextOrJson.text,
    json_alias: JsonAlias = False,
    config_file: ConfigOption = None,
) -> None:
    """Plan a tier's GPU memory: weights, KV cache per token, capacity, concurrent sequences.

    Exits 3 (refused) when the configuration cannot be served, saying what would fit.
    """
    as_json = wants_json(fmt, json_alias)
    config = get_config(config_file)
    try:
        t = named_tier(tier, build_tiers(config.runner.tiers))
        if dtype is not None:
            # The flag stands for the tier's dtype, so the tier checks below judge it too (bf16 on a T4).
            t = t.model_copy(update={"engine": t.engine.model_copy(update={"dtype": dtype.value})})
        folder = model or (Path(t.engine.model) if t.engine.model else embedded_model_dir(on_convert=_say))
        info = load_model_info(folder)
        result = plan(t, info, reserve_bytes=int(reserve_gib * GIB))
    except DocsanError as err:
        fail(str(err), ExitCode.USAGE)
    problems = [*tier_problems(t, "cuda", info), *result.problems]
    if as_json:
        sys.stdout.write(json.dumps({**result.to_dict(), "problems": problems, "ok": not problems}) + "\n")
    else:
        _print(result)
    if problems:
        for p in problems:
            err_console().print(f"[bold red]docsan: refused:[/] tier {tier}: {p}", highlight=False)
        for s in result.suggestions:
            err_console().print(f"docsan: would fit: {s}", highlight=False)
        raise typer.Exit(ExitCode.REFUSED)


def _say(msg: str) -> None:
    err_console().print(f"docsan: {msg}", highlight=False)


def _print(p: Plan) -> None:
    g = GIB
    kv = "MLA latent" if p.mla else "K+V"
    lines = [
        f"tier {p.tier} on {p.gpu} ({p.gpu_memory_bytes / g:.1f} GiB × {p.gpu_memory_utilization}), model {p.model}",
        f"  dtype {p.dtype}, kv cache {p.kv_cache_dtype}",
        f"  weights            {p.weights_bytes / g:10.2f} GiB",
        f"  activation reserve {p.reserve_bytes / g:10.2f} GiB",
        f"  KV cache           {p.kv_capacity_bytes / g:10.2f} GiB = {p.kv_capacity_tokens} tokens "
        f"in {p.kv_capacity_blocks} blocks of {p.block_size}",
        f"  KV per token       {p.kv_bytes_per_token:10d} bytes ({kv})",
        f"  max_model_len {p.max_model_len}: {p.max_concurrent_seqs} sequences fit at full length "
        f"(max_num_seqs {p.max_num_seqs})",
    ]
    sys.stdout.write("\n".join(lines) + "\n")
