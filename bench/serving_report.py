"""Aggregation, targets (example model; model profiles) and the Markdown of ``bench/serving.py``."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

SERVER_LABELS = {
    "smkit": "smkit (front end + model workers, example model)",
    "smkit-baseline": "smkit at the baseline commit (example model)",
    "toolkit": "sagemaker-inference 1.10.1 + MMS 1.1.11 (example model)",
    "constant": "smkit bare constant handler",
    "smkit-metrics-off": "smkit with SMKIT_METRICS=false (example model)",
    "gunicorn": "nginx + gunicorn sync workers + Flask (AWS's bring-your-own-container sample)",
    "fastapi": "FastAPI + uvicorn",
    "torchserve": "TorchServe 0.12.0 (custom handler calling the same hooks)",
}
METRICS_COST_TARGET = 1.03  # server CPU per request with /metrics on, over off (docs/observability.md)
PEERS = ("toolkit", "gunicorn", "fastapi", "torchserve")
HEADLINE_CONCURRENCY = 8  # the example model's targets are stated at concurrency 8
BASELINE_TOLERANCE = 0.03  # this tree serves within 3% of the baseline commit


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def aggregate(rounds: list[dict[str, Any]], levels: Sequence[int]) -> dict[str, Any]:
    """Median of every metric over rounds (a single round is reported as is)."""
    numbers = (
        "throughput_rps",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "max_ms",
        "mean_ms",
        "client_cpu_s",
        "server_cpu_s",
        "busiest_process_cpu_share",
    )
    summary: dict[str, Any] = {
        key: round(statistics.median(r[key] for r in rounds), 3)
        for key in ("cold_start_ping_s", "cold_start_first_invocation_s", "rss_mb_after_runs")
    }
    summary["answer_matches_expected"] = rounds[0]["answer_matches_expected"]
    summary["runs"] = {}
    for level in map(str, levels):
        per = [r["runs"][level] for r in rounds]
        merged: dict[str, Any] = {key: _median([p[key] for p in per]) for key in numbers}
        merged["requests"] = per[0]["requests"]
        merged["errors"] = sum(p["errors"] for p in per)
        if "ping_p99_ms" in per[0]:
            merged["ping_p50_ms"] = _median([p["ping_p50_ms"] for p in per])
            merged["ping_p99_ms"] = _median([p["ping_p99_ms"] for p in per])
            merged["ping_max_ms"] = max(p["ping_max_ms"] for p in per)  # the worst probe of any round
            merged["ping_failures"] = sum(p["ping_failures"] for p in per)
            merged["ping_probes"] = sum(p["ping_probes"] for p in per)
        merged["client_cpu_us_per_request"] = round(1e6 * merged["client_cpu_s"] / merged["requests"], 1)
        merged["server_cpu_us_per_request"] = round(1e6 * merged["server_cpu_s"] / merged["requests"], 1)
        summary["runs"][level] = merged
    return summary


def per_round_ratios(rounds: dict[str, list[dict[str, Any]]], key: str, level: str) -> list[float]:
    """smkit / toolkit of ``key`` for each round (servers of a round ran back to back)."""
    pairs = zip(rounds.get("smkit", []), rounds.get("toolkit", []), strict=False)
    return [round(a["runs"][level][key] / b["runs"][level][key], 2) for a, b in pairs]


def targets(
    servers: dict[str, Any],
    floor: dict[str, Any] | None = None,
    rounds: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The example model's target numbers, computed from this run's own reference measurements."""
    level = str(HEADLINE_CONCURRENCY)
    out: dict[str, Any] = {}
    ours = servers.get("smkit")
    if ours is None:
        return out
    mine = ours["runs"].get(level)
    if "toolkit" in servers and mine:
        ref = servers["toolkit"]["runs"][level]
        ratio = mine["throughput_rps"] / ref["throughput_rps"]
        out["throughput_vs_toolkit_c8"] = {"value": round(ratio, 2), "target": ">= 3.0", "met": ratio >= 3.0}
        p99 = mine["p99_ms"] / ref["p99_ms"]
        out["p99_vs_toolkit_c8"] = {"value": round(p99, 3), "target": "<= 0.5", "met": p99 <= 0.5}
        if rounds and len(rounds.get("smkit", [])) > 1:
            out["throughput_vs_toolkit_c8"]["per_round"] = per_round_ratios(rounds, "throughput_rps", level)
            out["p99_vs_toolkit_c8"]["per_round"] = per_round_ratios(rounds, "p99_ms", level)
        cpu = ref["server_cpu_us_per_request"] / mine["server_cpu_us_per_request"]
        # Not an issue-3 target: CPU per request is the number least moved by other load on the machine.
        out["server_cpu_per_request_toolkit_over_smkit_c8"] = {
            "value": round(cpu, 2),
            "target": "(info)",
            "met": None,
        }
    if "constant" in servers and mine:
        bare_run = servers["constant"]["runs"][level]
        bare = bare_run["throughput_rps"] / mine["throughput_rps"]
        out["bare_over_smkit_throughput_c8"] = {
            "value": round(bare, 2),
            "target": "<= 1.3",
            "met": bare <= 1.3,
        }
        if floor is not None:
            # Not issue-3 targets. Client and servers share the cores, so throughput follows the CPU per
            # request of client + server. A runtime that added nothing to the bare server but the model's
            # hooks (as timed alone) would still be this much slower than the bare handler:
            hooks = floor["cpu_us_per_call"]
            per_bare = bare_run["server_cpu_us_per_request"] + bare_run["client_cpu_us_per_request"]
            out["bare_ratio_with_hooks_alone_added_c8"] = {
                "value": round((per_bare + hooks) / per_bare, 2),
                "target": "(info)",
                "met": None,
            }
            # ... and this is the server CPU per request smkit spends beyond the bare server and the hooks.
            extra = mine["server_cpu_us_per_request"] - bare_run["server_cpu_us_per_request"] - hooks
            out["smkit_cpu_us_per_request_beyond_bare_and_hooks_c8"] = {
                "value": round(extra, 1),
                "target": "(info)",
                "met": None,
            }
    if "smkit-metrics-off" in servers:
        out.update(metrics_cost(servers, rounds))
    cold = ours["cold_start_ping_s"]
    out["cold_start_s"] = {"value": cold, "target": "<= 1.0", "met": cold <= 1.0}
    if rounds and rounds.get("gunicorn"):
        # Process start to the first answer of the example model, paired by round: at or below gunicorn's.
        pairs = zip(rounds.get("smkit", []), rounds["gunicorn"], strict=False)
        key = "cold_start_first_invocation_s"
        per_round = [round(a[key] / b[key], 2) for a, b in pairs if b[key]]
        median = round(statistics.median(per_round), 2) if per_round else None
        out["cold_start_first_invocation_vs_gunicorn"] = {
            "value": median,
            "target": "<= 1.0",
            "met": median is not None and median <= 1.0,
            "per_round": per_round,
        }
    return out


def metrics_cost(servers: dict[str, Any], rounds: dict[str, list[dict[str, Any]]] | None) -> dict[str, Any]:
    """Server CPU per request and throughput with metrics on over off, per concurrency level."""
    out: dict[str, Any] = {}
    on, off = servers["smkit"]["runs"], servers["smkit-metrics-off"]["runs"]
    for level in on:
        if level not in off:
            continue
        cpu = on[level]["server_cpu_us_per_request"] / off[level]["server_cpu_us_per_request"]
        out[f"metrics_on_over_off_server_cpu_per_request_c{level}"] = {
            "value": round(cpu, 3),
            "target": f"<= {METRICS_COST_TARGET}",
            "met": cpu <= METRICS_COST_TARGET,
        }
        rps = on[level]["throughput_rps"] / off[level]["throughput_rps"]
        out[f"metrics_on_over_off_throughput_c{level}"] = {
            "value": round(rps, 3),
            "target": "(info)",
            "met": None,
        }
        if rounds and len(rounds.get("smkit", [])) > 1:
            pairs = zip(rounds["smkit"], rounds.get("smkit-metrics-off", []), strict=False)
            out[f"metrics_on_over_off_server_cpu_per_request_c{level}"]["per_round"] = [
                round(a["runs"][level]["server_cpu_s"] / b["runs"][level]["server_cpu_s"], 3)
                for a, b in pairs
            ]
    return out


PROFILE_LEVELS = ("8", "32")  # the profiles' targets are stated at concurrency 8 and 32
PING_P99_MS = 100.0
PING_MAX_MS = 1000.0


def profile_targets(
    profiles: dict[str, dict[str, Any]], rounds: dict[str, dict[str, list[dict[str, Any]]]], workers: int
) -> dict[str, Any]:
    """The target numbers for every model profile, against this run's toolkit."""
    out: dict[str, Any] = {}
    for profile, servers in profiles.items():
        ours, ref = servers.get("smkit"), servers.get("toolkit")
        if ours is None:
            continue
        for level, run in ours["runs"].items():
            ping_ok = run.get("ping_p99_ms", 0.0) <= PING_P99_MS and run.get("ping_max_ms", 0.0) < PING_MAX_MS
            out[f"{profile}_ping_c{level}"] = {
                "value": f"p99 {run.get('ping_p99_ms')} ms, max {run.get('ping_max_ms')} ms",
                "target": f"p99 <= {PING_P99_MS:.0f} ms, max < {PING_MAX_MS:.0f} ms",
                "met": ping_ok and not run.get("ping_failures"),
            }
        if ref is None:
            continue
        if profile == "example":
            level = str(HEADLINE_CONCURRENCY)
            ratio = ours["runs"][level]["throughput_rps"] / ref["runs"][level]["throughput_rps"]
            out["example_throughput_vs_toolkit_c8"] = {
                "value": round(ratio, 2),
                "target": ">= 3.0",
                "met": ratio >= 3.0,
                "per_round": per_round_ratios(rounds.get(profile, {}), "throughput_rps", level),
            }
            continue
        for level in PROFILE_LEVELS:
            if level not in ours["runs"] or level not in ref["runs"]:
                continue
            mine, theirs = ours["runs"][level], ref["runs"][level]
            ratio = mine["throughput_rps"] / theirs["throughput_rps"]
            out[f"{profile}_throughput_vs_toolkit_c{level}"] = {
                "value": round(ratio, 2),
                "target": ">= 1.0",
                "met": ratio >= 1.0,
                "per_round": per_round_ratios(rounds.get(profile, {}), "throughput_rps", level),
            }
            p99 = mine["p99_ms"] / theirs["p99_ms"]
            out[f"{profile}_p99_vs_toolkit_c{level}"] = {
                "value": round(p99, 2),
                "target": "<= 1.0",
                "met": p99 <= 1.0,
                "per_round": per_round_ratios(rounds.get(profile, {}), "p99_ms", level),
            }
            if profile == "sleep1s":
                # smkit serves it with SMKIT_WORKER_CONCURRENCY=32: the bound is the callers, up to workers x 32.
                bound = mine["throughput_rps"] / min(int(level), workers * 32)
                out[f"sleep1s_share_of_worker_bound_c{level}"] = {
                    "value": round(bound, 3),
                    "target": ">= 0.95",
                    "met": bound >= 0.95,
                }
    return out


def _ratios(
    rounds: dict[str, list[dict[str, Any]]], peer: str, key: str, level: str, digits: int = 3
) -> list[float]:
    """smkit / ``peer`` of ``key`` per round (the servers of a round ran back to back)."""
    pairs = zip(rounds.get("smkit", []), rounds.get(peer, []), strict=False)
    return [
        round(a["runs"][level][key] / b["runs"][level][key], digits)
        for a, b in pairs
        if b["runs"][level][key]
    ]


def _cold_starts(rounds: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Process start to the first 200 invocation of the example model, every server, every round."""
    lines = [
        "",
        "Cold start, process start to the first 200 invocation of the example model (s), per round:",
        "",
        "| server | rounds | median | smkit / server (rounds) |",
        "| --- | --- | ---: | --- |",
    ]
    ours = [r["cold_start_first_invocation_s"] for r in rounds["smkit"]]
    for name, per in rounds.items():
        if name not in ("smkit", "smkit-baseline", *PEERS) or not per:
            continue
        times = [r["cold_start_first_invocation_s"] for r in per]
        ratios = [round(a / b, 2) for a, b in zip(ours, times, strict=False) if b]
        lines.append(
            f"| {name} | {', '.join(f'{t:.3f}' for t in times)} | {statistics.median(times):.3f} | "
            f"{', '.join(map(str, ratios)) if name != 'smkit' else '-'} |"
        )
    return [*lines, ""]


def peer_table(result: dict[str, Any]) -> list[str]:
    """One row per shape, peer and concurrency: both servers' numbers and smkit's ratio with its spread."""
    raw = {**(result.get("raw_profile_rounds") or {}), "example": result.get("raw_rounds") or {}}
    profiles = result.get("profiles") or {}
    lines = [
        "",
        "smkit against each peer, same handler, same workers, same client, servers alternated every round "
        "(ratio: smkit / peer, median of the rounds' ratios with their range; throughput above 1 and p99 "
        "below 1 favour smkit).",
        "",
        "| shape | peer | concurrency | smkit req/s | peer req/s | throughput ratio (rounds) | smkit p99 (ms) "
        "| peer p99 (ms) | p99 ratio (rounds) | smkit /ping p99 (ms) | peer /ping p99 (ms) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    starts = raw.get("example", {})
    if starts.get("smkit"):
        lines[1:1] = _cold_starts(starts)
    for shape, servers in profiles.items():
        ours = servers.get("smkit")
        if ours is None:
            continue
        for peer in (p for p in PEERS if p in servers):
            for level, run in servers[peer]["runs"].items():
                mine = ours["runs"][level]
                cells = []
                for key in ("throughput_rps", "p99_ms"):
                    values = _ratios(raw.get(shape, {}), peer, key, level)
                    cells.append(
                        f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"
                        if values
                        else "-"
                    )
                lines.append(
                    f"| {shape} | {peer} | {level} | {mine['throughput_rps']:.1f} | {run['throughput_rps']:.1f} | "
                    f"{cells[0]} | {mine['p99_ms']:.1f} | {run['p99_ms']:.1f} | {cells[1]} | "
                    f"{mine.get('ping_p99_ms', 0):.1f} | {run.get('ping_p99_ms', 0):.1f} |"
                )
    return lines


def _profile_tables(result: dict[str, Any]) -> list[str]:
    profiles = result.get("profiles") or {}
    if not profiles:
        return []
    lines = [
        "",
        "Model profiles: the same model directory for both servers; `/ping` probed every 50 ms on a "
        "fresh connection during every level (max: worst probe of any round).",
        "",
        "| profile | server | concurrency | throughput (req/s) | p50 (ms) | p99 (ms) | /ping p50 (ms) "
        "| /ping p99 (ms) | /ping max (ms) | errors |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for profile, servers in profiles.items():
        for name, data in servers.items():
            for level, run in data["runs"].items():
                lines.append(
                    f"| {profile} | {name} | {level} | {run['throughput_rps']:.1f} | {run['p50_ms']:.1f} | "
                    f"{run['p99_ms']:.1f} | {run.get('ping_p50_ms', 0):.1f} | {run.get('ping_p99_ms', 0):.1f} | "
                    f"{run.get('ping_max_ms', 0):.1f} | {run['errors']} |"
                )
    targets_10 = result.get("profile_targets") or {}
    if targets_10:
        lines += [
            "",
            "| target (model profiles) | measured | target | met |",
            "| --- | ---: | ---: | :---: |",
        ]
        for key, t in targets_10.items():
            met = "-" if t["met"] is None else "yes" if t["met"] else "no"
            spread = t.get("per_round")
            value = f"{t['value']} (rounds: {', '.join(map(str, spread))})" if spread else t["value"]
            lines.append(f"| {key} | {value} | {t['target']} | {met} |")
    return lines


def failures(result: dict[str, Any]) -> list[str]:
    """Rows whose requests failed (non-200 or an answer unlike the first): their numbers are not results."""
    bad = []
    for shape, servers in (result.get("profiles") or {}).items():
        for name, data in servers.items():
            for level, run in data["runs"].items():
                if run["errors"]:
                    bad.append(f"{shape} {name} c={level}: {run['errors']} failed requests")
    return bad


def _within(values: list[float], higher_is_better: bool) -> bool:
    if not values:
        return False
    median = statistics.median(values)
    return median >= 1 - BASELINE_TOLERANCE if higher_is_better else median <= 1 + BASELINE_TOLERANCE


def baseline_table(result: dict[str, Any]) -> list[str]:
    """smkit over smkit-baseline per shape and concurrency: the same runtime before and after a change."""
    raw = {**(result.get("raw_profile_rounds") or {}), "example": result.get("raw_rounds") or {}}
    shapes = [
        s
        for s, servers in (result.get("profiles") or {}).items()
        if {"smkit", "smkit-baseline"} <= set(servers)
    ]
    if not shapes:
        return []
    commit = result["config"].get("baseline", "")
    lines = [
        "",
        f"This tree (smkit) against the baseline commit {commit} (smkit-baseline: the same interpreter and "
        "venv, its `smkit/` on PYTHONPATH), per shape and concurrency, rounds paired as they ran back to back: "
        "median of the rounds' ratios (range). Within 3% means a throughput ratio of at least 0.97 and a server "
        "CPU per request ratio of at most 1.03.",
        "",
        "| shape | concurrency | smkit req/s | baseline req/s | throughput ratio (rounds) | server CPU/req ratio "
        "(rounds) | p99 ratio (rounds) | within 3% |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    verdicts = []
    for shape in shapes:
        ours, base = result["profiles"][shape]["smkit"], result["profiles"][shape]["smkit-baseline"]
        for level, run in ours["runs"].items():
            cells, rows = [], {}
            for key in ("throughput_rps", "server_cpu_s", "p99_ms"):
                values = _ratios(raw.get(shape, {}), "smkit-baseline", key, level)
                rows[key] = values
                cells.append(
                    f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"
                    if values
                    else "-"
                )
            # Each round sends the same requests to both, so total server CPU compares CPU per request.
            ok = _within(rows["throughput_rps"], True) and _within(rows["server_cpu_s"], False)
            verdicts.append(ok)
            lines.append(
                f"| {shape} | {level} | {run['throughput_rps']:.1f} | {base['runs'][level]['throughput_rps']:.1f} | "
                f"{cells[0]} | {cells[1]} | {cells[2]} | {'yes' if ok else 'no'} |"
            )
    lines += ["", f"Within 3% of the baseline on {sum(verdicts)} of {len(verdicts)} rows.", ""]
    return lines


def warmup_line(result: dict[str, Any]) -> list[str]:
    """What warm-up each server had, and why."""
    warm = (result.get("method") or {}).get("warmup")
    if not warm:
        return []
    profiles = ", ".join(f"{name} {count}" for name, count in warm["profiles"].items())
    return [
        "",
        f"Warm-up: on the example model, {warm['example_jit_servers']:,} requests for the JIT-compiled front "
        f"ends ({', '.join(warm['jit_servers'])}: the warm-up curve's steady state) and "
        f"{warm['example_other_servers']:,} for the CPython servers (level from their first block on the curve); "
        f"on the model profiles the same count for every server ({profiles or 'none'}). Native thread pools: "
        f"{', '.join(f'{k}={v}' for k, v in (result['method'].get('native_threads') or {}).items())} in every "
        "server's environment.",
    ]


def markdown(result: dict[str, Any]) -> str:
    """The tables BENCHMARKS.md shows for this run."""
    cfg = result["config"]
    lines = [
        f"Measured {result['generated_at']} on {result['machine']['cpus']} cores shared by client and server "
        f"(load average {result['machine']['loadavg_at_start']} at start, "
        f"{result['machine']['loadavg_at_end']} at end); {cfg['workers']} workers each, "
        f"{cfg['requests_per_level']} example-model requests per level, {cfg['rounds']} round(s), median shown"
        + (
            f"; {cfg['hogs']} competing busy loop(s) in other sessions at nice 0." if cfg.get("hogs") else "."
        ),
        "",
        "| server | concurrency | throughput (req/s) | p50 (ms) | p99 (ms) | server CPU/req (us) "
        "| busiest process share | errors |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, data in result["servers"].items():
        for level, run in data["runs"].items():
            lines.append(
                f"| {SERVER_LABELS[name]} | {level} | {run['throughput_rps']:.0f} | {run['p50_ms']:.2f} | "
                f"{run['p99_ms']:.2f} | {run['server_cpu_us_per_request']:.0f} | "
                f"{100 * (run['busiest_process_cpu_share'] or 0):.0f}% | {run['errors']} |"
            )
    lines += [
        "",
        "| server | cold start to first 200 /ping (s) | to first 200 invocation (s) | RSS after runs (MiB) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, data in result["servers"].items():
        lines.append(
            f"| {SERVER_LABELS[name]} | {data['cold_start_ping_s']:.3f} | "
            f"{data['cold_start_first_invocation_s']:.3f} | {data['rss_mb_after_runs']:.0f} |"
        )
    floor = result.get("handler_floor")
    if floor:
        lines += [
            "",
            f"Handler floor: the example's `input_fn -> predict_fn -> output_fn` alone, in the same interpreter "
            f"and without any server, costs {floor['cpu_us_per_call']:.0f} us of CPU per call.",
        ]
    if result["targets"]:
        lines += ["", "| target (example model) | measured | target | met |", "| --- | ---: | ---: | :---: |"]
        for key, t in result["targets"].items():
            met = "-" if t["met"] is None else "yes" if t["met"] else "no"
            spread = t.get("per_round")
            value = f"{t['value']} (rounds: {', '.join(map(str, spread))})" if spread else t["value"]
            lines.append(f"| {key} | {value} | {t['target']} | {met} |")
    lines += warmup_line(result)
    lines += _profile_tables(result)
    lines += peer_table(result)
    lines += baseline_table(result)
    wall = result["machine"].get("wall_time_s")
    if wall:
        lines += [
            f"Wall time of the run: {wall / 60:.1f} min (estimated at start: "
            f"{result['machine'].get('estimated_wall_time_s', 0) / 60:.1f} min)."
        ]
    return "\n".join(lines)
