"""The gateway's run reports (replay, load, faults, sessions) as sections of docs/benchmarks.md.

Each run writes its own section between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` from its
results file, so one run never rewrites another's figures; bench/report.py keeps these sections
when ``make bench`` regenerates the rest of the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex


def write_section(path: Path, name: str, markdown: str) -> None:
    """Replace section ``name`` of ``path`` (or add it at the end: below the mark that ``make bench`` keeps)."""
    block = f"<!-- {name}:start -->\n{markdown.rstrip()}\n<!-- {name}:end -->\n"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    pattern = regex.compile(rf"<!-- {name}:start -->.*?<!-- {name}:end -->\n?", regex.S)
    text = pattern.sub(lambda _: block, text, count=1) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def publish(results: dict[str, Any], out: Path, name: str, docs: bool) -> None:
    """A run's results: JSON to ``out`` and standard output, and with ``docs`` its section of docs/benchmarks.md
    (``NAME_md`` in this module writes it: ``replay``, ``load``, ``sessions`` or ``ledger``)."""
    import json

    out.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results, ensure_ascii=False, indent=1))
    if docs:
        markdown = {"replay": replay_md, "load": load_md, "sessions": sessions_md, "ledger": ledger_md}[name](results)
        write_section(Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md", name, markdown)


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
        ["KV demand of the requests sent and not answered, at the peak / capacity", _peak(d), _peak(g)],
        ["KV reserved by docsan's ledger at the peak", "(no ledger)", f"{g['ledger_reserved_max']:,}"],
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


def load_md(r: dict[str, Any]) -> str:
    rows = []
    for name, st in r["by_name"].items():
        rows.append([name, st["requests"], st["failures"], st["p50_ms"], st["p95_ms"], st["p99_ms"], st["max_ms"]])
    m = r["gateway_rss"]
    alive = r["processes_alive_at_end"]
    lines = [
        "## The gateway under load (issue 11)",
        "",
        f"`make load` (bench/load.py, locust headless), {r['measured_at']}: {r['users']} users, spawn rate "
        f"{r['spawn_rate']}/s, {r['duration_s']} s, each user waiting 0.5-2 s between requests; {r['mix']}; the "
        "gateway (`docsan serve`, its own process, the replay's configuration) in front of the vLLM CPU server "
        f"(SmolLM2, 8192 positions); load average of the 2 shared cores {r['load_average_before_after'][0]} → "
        f"{r['load_average_before_after'][1]}. Raw numbers: docs/load.json.",
        "",
        _table(["requests (locust's names)", "count", "failures", "p50 ms", "p95 ms", "p99 ms", "max ms"], rows),
        "",
        f'- Errors (anything but 200, 202, a 400 by design and 503 "memory limit"): {r["errors"]}, error rate '
        f"{_pct(r['error_rate'])} (target < 0.1 %: {'met' if r['target_met'] else 'not met'}).",
        "- The gateway's outcomes (`docsan_requests_total`): "
        + ", ".join(f"{k} {int(v)}" for k, v in sorted(r["gateway_outcomes"].items()))
        + ".",
        f"- Gateway RSS: {m.get('rss_mib_start')} MiB at the start, {m.get('rss_mib_max')} at most, "
        f"{m.get('rss_mib_end')} at the end; {m.get('rss_mib_growth_second_half')} MiB over the second half "
        f"({m.get('rss_mib_per_min_second_half')} MiB/min), {m.get('samples')} samples.",
        f"- Processes alive at the end (none killed, by the OOM killer or otherwise): gateway {alive['gateway']}, "
        f"vLLM {alive['vllm']}.",
    ]
    if r["failure_examples"]:
        lines.append("- Failures: " + "; ".join(f"`{f}`" for f in r["failure_examples"]) + ".")
    lines += [
        "",
        "Scale: this machine has 2 cores shared with other sessions and a CPU vLLM, so a few users saturate it; "
        'p99 is dominated by prefill on the CPU and by the admission queue (503s say "not now" instead of '
        "letting vLLM preempt). The incident's acceptance run, 100 users for an hour, is "
        "`.venv/bin/python bench/load.py --users 100 --spawn-rate 10 --duration 3600 --upstream URL` against a "
        "gateway configuration with one GPU `vllm serve` per tier (deploy/docsan.toml).",
    ]
    return "\n".join(lines) + "\n"


FAULT_ORDER = ("slow_clients", "upstream_killed", "capacity_cut_by_reload", "redis_stopped")


def faults_md(faults: dict[str, Any], when: str, seconds: float | None) -> str:
    rows = []
    for name in FAULT_ORDER:
        f = faults.get(name)
        if f is None:
            rows.append([name, "not run", "", ""])
            continue
        rest = {k: v for k, v in f.items() if k not in ("what", "client_sees")}
        rows.append([f["what"], f["client_sees"], "; ".join(f"{k} {v}" for k, v in rest.items()), "ends by itself"])
    took = f", {seconds:.0f} s" if seconds else ""
    return "\n".join(
        [
            "## Faults (issue 11)",
            "",
            f"`make faults` ({when}{took}): the fault tests (`pytest -m fault`: tests/test_serve_faults.py and "
            "the Redis test of tests/test_serve_sessions.py), each against real servers, each bounded in time; "
            "what each saw is docs/faults.json.",
            "",
            _table(["fault", "what the client sees", "measured", "recovery"], rows),
            "",
        ]
    )


def sessions_md(r: dict[str, Any]) -> str:
    w, s = r["whole_history_every_turn"], r["sessions_protocol"]
    rows = [
        [k.replace("_", " "), f"{w[k]:,}", f"{s[k]:,}"]
        for k in ("bytes_turn_1", "bytes_turn_50", "bytes_turn_100", "bytes_turn_200", "bytes_per_turn_mean",
                  "bytes_total")
    ]  # fmt: skip
    rows += [
        ["requests (409 resends)", f"{w['requests']}", f"{s['requests']} ({s['resends_after_409']})"],
        ["gateway's own time p50 / last 20 turns", f"{w['gateway_ms_p50']} / {w['gateway_ms_last_20_p50']} ms",
         f"{s['gateway_ms_p50']} / {s['gateway_ms_last_20_p50']} ms"],
        ["whole conversation", f"{w['seconds']} s", f"{s['seconds']} s"],
    ]  # fmt: skip
    return "\n".join(
        [
            "## Sessions: bytes sent per turn (issue 11)",
            "",
            f"bench/bench_sessions.py, {r['measured_at']}: one 200-turn conversation twice through the gateway "
            f"({r['upstream']}; history trimmed to 1,024 prompt tokens both ways), the whole history every turn and "
            "with `docsan.client.SessionClient`; load average "
            f"{r['load_average_before_after'][0]} → {r['load_average_before_after'][1]}.",
            "",
            _table(["", "whole history every turn", "sessions protocol"], rows),
            "",
            f"The client sent {100 * r['bytes_ratio']:.1f} % of the bytes with the protocol. The whole conversation's "
            "time is mostly vLLM's on shared cores (the load average above); the gateway's own time is the "
            "protocol's cost.",
            "",
        ]
    )


def ledger_md(r: dict[str, Any]) -> str:
    rows = []
    for shape, label in (("one_at_a_time", "one at a time"), ("32_at_once_room_for_16", "32 at once, room for 16")):
        s = r["shapes"][shape]
        m, red = s["memory"], s["redis"]
        rows.append(
            [label, f"{m['cycles_per_s']:,}", f"{red['cycles_per_s']:,}", f"{s['redis_over_memory']:.3f}",
             f"{m['acquire_us_p50']} / {red['acquire_us_p50']}", f"{m['acquire_us_p99']} / {red['acquire_us_p99']}"]
        )  # fmt: skip
    header = ["shape", "memory cycles/s", "Redis cycles/s", "Redis / memory", "acquire p50 µs (memory / Redis)",
              "acquire p99 µs (memory / Redis)"]  # fmt: skip
    return "\n".join(
        [
            "## The shared admission ledger: cost of Redis (`[serve.ledger]`)",
            "",
            f"bench/bench_ledger.py, {r['measured_at']}: reserve + release cycles through `Pool.acquire` and "
            f"`Reservation.release`, the in-process ledger and the Redis one (redis-server {r['redis_server']} on "
            f"loopback, started by the bench) in the same run; {r['nproc']} cores, load average "
            f"{r['load_average_before_after'][0]} → {r['load_average_before_after'][1]}.",
            "",
            _table(header, rows),
            "",
            "A cycle with Redis costs one script round trip to reserve (the release is sent by the pool's keeper, "
            "batched); the memory ledger costs a few Python operations. In the second shape an acquire includes "
            "its wait for room (half the requests wait), and with Redis the keeper grants the waiters one round "
            "trip each. Against a chat request's own cost in the gateway (milliseconds: \"The gateway's overhead "
            'per request" above) and in vLLM (far more), one round trip per admission is small; the ratio is '
            "what admission itself costs.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.serve_report faults docs/faults.json`` (make faults), or ``sessions FILE``."""
    import datetime as dt
    import json
    import sys

    args = argv if argv is not None else sys.argv[1:]
    kind, path = args[0], Path(args[1])
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
    if kind == "faults":
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        write_section(docs, "faults", faults_md(data, when, float(args[2]) if len(args) > 2 else None))
    elif kind == "sessions":
        write_section(docs, "sessions", sessions_md(data))
    else:
        raise SystemExit(f"unknown report {kind!r}: faults or sessions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
