"""The BENCHMARKS.md section of ``bench/chaos.py``."""

from __future__ import annotations

from typing import Any


def markdown(result: dict[str, Any]) -> str:
    """The chaos table BENCHMARKS.md shows."""
    cfg = result["config"]
    counts = ", ".join(f"{k}: {v}" for k, v in result["status_counts"].items())
    met = {name: ("yes" if c["met"] else "NO") for name, c in result["criteria"].items()}
    return "\n".join(
        [
            f"Measured {result['generated_at']}: {cfg['requests']} requests at concurrency {cfg['concurrency']} "
            f"paced to {cfg['rate_rps']:g} req/s, "
            f"{cfg['workers']} workers, a worker SIGKILLed every {cfg['kill_every_s']:g} s "
            f"({result['workers_killed']} killed) and one killed again while reloading, a "
            f"{cfg['big_body_bytes'] / 2**20:.0f} MiB body every {cfg['big_every']} requests, a stalled upload every "
            f"{cfg['stall_every_s']:g} s ({result['machine']['cpus']} shared cores, load average "
            f"{result['machine']['loadavg_at_start']} at start, {result['machine']['loadavg_at_end']} at end).",
            "",
            "| answers by status | hung | /ping max (ms) | /ping p99 (ms) | req/s | p99 (ms) | RSS start -> end (MiB) "
            "| stalled uploads | result |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | :---: |",
            f"| {counts} | {result['status_counts'].get('hung', 0)} | {result['ping_max_ms']:.1f} | "
            f"{result['ping_p99_ms']:.1f} | {result['throughput_rps']:.0f} | {result['p99_ms']:.1f} | "
            f"{result['rss_mb_start']:.1f} -> {result['rss_mb_end']:.1f} ({100 * result['rss_growth']:+.2f}%) | "
            f"{', '.join(result['criteria']['stalled_uploads_408']['value'])} | "
            f"{'pass' if result['passed'] else 'FAIL'} |",
            "",
            "Criteria: " + "; ".join(f"{name.replace('_', ' ')}: {flag}" for name, flag in met.items()) + ".",
        ]
    )
