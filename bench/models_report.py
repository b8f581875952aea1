"""Medians, acceptance targets and the Markdown of ``bench/models.py``."""

from __future__ import annotations

import statistics
from typing import Any

SERVER_LABELS = {
    "smkit": "smkit (no thread setting)",
    "smkit-1thread": "smkit, OMP/OPENBLAS_NUM_THREADS=1 by hand",
    "smkit-share": "smkit, pools of cpus // workers threads by hand",
    "smkit-machine": "smkit, pools as large as the machine by hand",
    "toolkit": "toolkit 1.10.1 + MMS 1.1.11",
}
NUMBERS = ("throughput_rps", "p50_ms", "p99_ms", "max_ms")


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def aggregate(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Median of every number over rounds, per ``profile/size@level`` key."""
    out: dict[str, Any] = {"loadavg_1min_before": [r["loadavg_1min_before"] for r in rounds], "runs": {}}
    for key in rounds[0]["runs"]:
        per = [r["runs"][key] for r in rounds]
        merged: dict[str, Any] = {name: _median([p[name] for p in per]) for name in NUMBERS}
        merged["server_cpu_ms_per_request"] = _median([1e3 * p["server_cpu_s"] / p["requests"] for p in per])
        merged["client_cpu_ms_per_request"] = _median([1e3 * p["client_cpu_s"] / p["requests"] for p in per])
        merged["requests"] = per[0]["requests"]
        merged["errors"] = sum(p["errors"] for p in per)
        merged["worker_threads"] = per[-1]["worker_threads"]
        out["runs"][key] = merged
    return out


def _ratios(rounds: dict[str, list[dict[str, Any]]], a: str, b: str, key: str, number: str) -> list[float]:
    pairs = zip(rounds.get(a, []), rounds.get(b, []), strict=False)
    return [round(x["runs"][key][number] / y["runs"][key][number], 2) for x, y in pairs]


def targets(
    summary: dict[str, dict[str, Any]], rounds: dict[str, dict[str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    """For every profile, size and level: smkit vs the toolkit (>= 1.0x req/s, p99 <=) and vs the better
    of one thread by hand and its own choice (>= 0.9x)."""
    out: dict[str, Any] = {}
    for profile, servers in summary.items():
        ours = servers.get("smkit")
        if ours is None:
            continue
        for key, mine in ours["runs"].items():
            ref = servers.get("toolkit", {}).get("runs", {}).get(key)
            if ref is not None:
                ratio = mine["throughput_rps"] / ref["throughput_rps"]
                out[f"{key} req/s vs toolkit"] = {
                    "value": round(ratio, 2),
                    "per_round": _ratios(rounds[profile], "smkit", "toolkit", key, "throughput_rps"),
                    "target": ">= 1.0",
                    "met": ratio >= 1.0,
                }
                p99 = mine["p99_ms"] / ref["p99_ms"]
                out[f"{key} p99 vs toolkit"] = {
                    "value": round(p99, 2),
                    "per_round": _ratios(rounds[profile], "smkit", "toolkit", key, "p99_ms"),
                    "target": "<= 1.0",
                    "met": p99 <= 1.0,
                }
            # One thread and the worker's share, each by hand (with one worker per CPU they are the same).
            by_hand = {
                name: servers[name]["runs"][key]
                for name in ("smkit-1thread", "smkit-share")
                if key in servers.get(name, {}).get("runs", {})
            }
            if by_hand:
                best_name = max(by_hand, key=lambda name: by_hand[name]["throughput_rps"])
                best = max(by_hand[best_name]["throughput_rps"], mine["throughput_rps"])
                share = mine["throughput_rps"] / best
                out[f"{key} req/s vs best of (1 thread, share)"] = {
                    "value": round(share, 2),
                    "per_round": _ratios(rounds[profile], "smkit", best_name, key, "throughput_rps"),
                    "target": ">= 0.9",
                    "met": share >= 0.9,
                }
    return out


def markdown(result: dict[str, Any]) -> str:
    """The BENCHMARKS.md section: one table of runs (with the CPU-limit line) and one of targets."""
    machine, config = result["machine"], result["config"]
    lines = [
        f"Measured {result['generated_at']} on {machine['available_cpus']} shared by client and servers "
        f"(load average {machine['loadavg_at_start']} at start, {machine['loadavg_at_end']} at end; "
        f"nice {machine['nice']}; {config['hogs']} competing busy loops); {config['workers']} workers each, "
        f"{config['rounds']} interleaved round(s), median shown. Server CPU per request: every process of "
        "the server (psutil). Threads per worker: OS threads of each model worker process after the level.",
        "",
        "| profile | size | concurrency | server | req/s | p50 (ms) | p99 (ms) | server CPU/req (ms) "
        "| threads per worker | errors |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for profile, servers in result["profiles"].items():
        keys = list(next(iter(servers.values()))["runs"])
        for key in keys:
            shape, level = key.split("@")
            size = shape.split("/")[1]
            floor = result["handler_floor"][shape]
            lines.append(
                f"| {profile} | {size} | {level} | CPU limit: {machine['cpus']} CPUs / hooks alone "
                f"({floor['cpu_us_per_call'] / 1e3:.2f} ms CPU, 1 thread) | {floor['cpu_limit_rps']:.0f} | | | "
                f"{floor['cpu_us_per_call'] / 1e3:.2f} | 1 | |"
            )
            for server, data in servers.items():
                run = data["runs"][key]
                threads = "/".join(str(n) for n in run["worker_threads"])
                lines.append(
                    f"| {profile} | {size} | {level} | {SERVER_LABELS[server]} | {run['throughput_rps']:.1f} "
                    f"| {run['p50_ms']:.2f} | {run['p99_ms']:.2f} | {run['server_cpu_ms_per_request']:.2f} "
                    f"| {threads} | {run['errors']} |"
                )
    lines += ["", "| target | measured (rounds) | target | met |", "| --- | ---: | ---: | :---: |"]
    for name, target in result["targets"].items():
        rounds = ", ".join(str(x) for x in target.get("per_round", []))
        met = "yes" if target["met"] else "no"
        lines.append(f"| {name} | {target['value']} ({rounds}) | {target['target']} | {met} |")
    return "\n".join(lines) + "\n"
