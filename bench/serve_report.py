"""The gateway's run reports (replay, load, faults, sessions) as sections of docs/benchmarks.md.

Each run writes its own section between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` from its
results file, so one run never rewrites another's figures; bench/report.py keeps these sections
when ``make bench`` regenerates the rest of the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex

_SECTION = regex.compile(r"<!-- (\w+):start -->.*?<!-- \1:end -->\n?", regex.S)


def sections(text: str) -> list[str]:
    """The marked sections of a document, in order, markers included."""
    return [m.group(0).rstrip("\n") + "\n" for m in _SECTION.finditer(text)]


def write_section(path: Path, name: str, markdown: str) -> None:
    """Replace section ``name`` of ``path`` (or add it at the end)."""
    block = f"<!-- {name}:start -->\n{markdown.rstrip()}\n<!-- {name}:end -->\n"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    pattern = regex.compile(rf"<!-- {name}:start -->.*?<!-- {name}:end -->\n?", regex.S)
    text = pattern.sub(lambda _: block, text, count=1) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join("–" if c is None else str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def _demand(side: dict[str, Any]) -> str:
    parts = []
    for tier, d in side["kv_demand_by_tier"].items():
        over = f", {d['over_capacity']} over capacity" if d["over_capacity"] else ""
        parts.append(f"{tier}: {d['requests']} req, mean {d['mean']:,} / max {d['max']:,}{over}")
    return "; ".join(parts)


def _peak(side: dict[str, Any]) -> str:
    return f"{side['kv_demand_in_flight_peak']:,} / {side['kv_capacity_tokens']:,}"


def replay_md(r: dict[str, Any]) -> str:
    p, d, g = r["profile"], r["direct"], r["docsan"]
    rows = [
        ["answered (200) / deferred (202)", f"{d['answered_200']} / {d['deferred_202']}",
         f"{g['answered_200']} / {g['deferred_202']}"],
        ["rejected by vLLM (4xx at the upstream)", d["upstream_rejections"], g["upstream_rejections"]],
        ["refused by design (max_tokens 0)", d["refused_400_by_design"], g["refused_400_by_design"]],
        ["503 memory limit (docsan's admission)", d["memory_limit_503"], g["memory_limit_503"]],
        ["answers cut by the context (`length` before the asked length)", d["length_cuts"], g["length_cuts"]],
        ["errors (anything else) / error rate", f"{d['errors']} / {_pct(d['error_rate'])}",
         f"{g['errors']} / {_pct(g['error_rate'])}"],
        ["prompt tokens per request: mean / p95", f"{d['prompt_tokens_mean']:,} / {d['prompt_tokens_p95']:,}",
         f"{g['prompt_tokens_mean']:,} / {g['prompt_tokens_p95']:,}"],
        ["KV demand per request (prompt + max_tokens, blocks)", _demand(d), _demand(g)],
        ["KV demand in flight at the peak / capacity", _peak(d), _peak(g)],
        ["vLLM preemptions (its /metrics)", d["vllm_preemptions"], g["vllm_preemptions"]],
        ["vLLM cache usage max / requests waiting max", f"{_pct(d['vllm_kv_usage_max'])} / {d['vllm_waiting_max']}",
         f"{_pct(g['vllm_kv_usage_max'])} / {g['vllm_waiting_max']}"],
        ["latency of answered requests p50 / p99", f"{d['latency_s_p50']} / {d['latency_s_p99']} s",
         f"{g['latency_s_p50']} / {g['latency_s_p99']} s"],
        ["asked fact in what reached the model (of the requests answered)", d["asked_fact_reached_model"],
         g["asked_fact_reached_model"]],
        ["asked fact reached the model, of all requests", _pct(d["asked_fact_kept_of_all"]),
         _pct(g["asked_fact_kept_of_all"])],
    ]  # fmt: skip
    met = r["targets_met"]
    lines = [
        "## The incident replayed (issue 11)",
        "",
        f"`make replay` (bench/replay.py), {r['measured_at']}, seed {r['seed']}, {p['requests']} requests per side, "
        f"{r['users']} concurrent clients, {r['seconds']} s in all; load average of the 2 shared cores "
        f"{r['load_average_before_after'][0]} → {r['load_average_before_after'][1]}. Upstream: {r['upstream']}. "
        f"docsan: {r['docsan_config']}. Raw numbers: docs/replay.json.",
        "",
        f"**The traffic** (bench/replay_traffic.py): mean context {p['tokens_mean']:,} tokens "
        f"(p50 {p['tokens_p50']:,}, max {p['tokens_max']:,}; SmolLM2's template), "
        f"{_pct(p['over_4k_share'])} over 4k and "
        f"{_pct(p['over_8k_share'])} over the server's 8k, {p['turns_min']}-{p['turns_max']} turns, repeated text "
        f"{_pct(p['repeated_share_mean'])} of a body on average and up to {_pct(p['repeated_share_max'])}, "
        f"max_tokens missing in {_pct(p['max_tokens_missing_share'])} and 0 in {_pct(p['max_tokens_zero_share'])}, "
        f"{_pct(p['priority_share'])} priority, bodies up to {p['body_bytes_max']:,} bytes.",
        "",
        _table(["", "straight to vLLM", "through docsan serve"], rows),
        "",
        f"Prompt tokens reduced by **{_pct(r['token_reduction'])}** (docsan's mean prompt against the raw mean of the "
        "same requests). Targets: 0 upstream rejections through docsan "
        f"({'met' if met['upstream_rejections'] else 'not met'}), token reduction ≥ 40 % "
        f"({'met' if met['token_reduction'] else 'not met'}), ≥ 99 % of asked facts kept "
        f"({'met' if met['asked_facts_kept'] else 'not met'}).",
    ]
    examples = d["upstream_rejection_examples"]
    if examples:
        lines += ["", "vLLM's rejections, for example: " + "; ".join(f"`{e}`" for e in examples) + "."]
    if g["error_examples"]:
        lines += ["", "Errors through docsan: " + "; ".join(f"`{e}`" for e in g["error_examples"]) + "."]
    return "\n".join(lines) + "\n"
