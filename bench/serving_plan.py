"""What a ``bench.serving`` run will cost before it starts: its wall time, estimated from its configuration.

The estimate adds, for every round, profile and server: the server's start and stop, its warm-up and
every concurrency level's requests, each divided by the throughput that server is expected to reach
there. The expected throughputs are conservative figures for 2 quiet cores and 2 workers (the previous
runs' medians, rounded down); a server that runs one request per worker on a 1 s handler is held to
``workers`` requests per second. The run prints the estimate at start and its own wall time at the end, so
the two can be compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.profiles import PROFILES, Profile

# Seconds from Popen to the first answer, plus the stop (SIGTERM to every process gone), per server.
START_STOP_S = {
    "smkit": 1.5,
    "smkit-baseline": 1.5,
    "smkit-metrics-off": 1.5,
    "constant": 1.0,
    "gunicorn": 1.5,
    "fastapi": 2.5,
    "toolkit": 7.0,
    "torchserve": 12.0,
}
# Loading a RandomForest (scikit-learn's import, 100 trees unpickled) adds to every server's start.
PROFILE_START_S = {"rf": 2.5, "rf-batched": 2.5}
# Expected requests per second by profile and concurrency level, for a server of each kind.
RPS = {
    "example": {1: 500, 8: 1200, 32: 1200},
    "cpu20ms": {1: 40, 8: 80, 32: 80},
    "rf": {1: 60, 8: 100, 32: 100},
    "rf-batched": {1: 120, 8: 500, 32: 1500},
}
# Servers that run one request per worker at a time whatever the handler declares (the 1 s profiles).
SERIAL = ("toolkit", "gunicorn", "torchserve")
# The serving cores are shared with the client: the harness's own time per level (prober, threads).
PER_LEVEL_S = 0.3


@dataclass(frozen=True)
class Estimate:
    """Seconds per profile (all rounds and servers) and in total."""

    by_profile: Mapping[str, float]
    total_s: float

    def describe(self) -> str:
        parts = ", ".join(f"{name} {seconds / 60:.1f}" for name, seconds in self.by_profile.items())
        return f"estimated wall time {self.total_s / 60:.0f} min on 2 quiet cores ({parts} min)"


def expected_rps(server: str, profile: Profile, level: int, workers: int) -> float:
    """The throughput the estimate assumes for ``server`` on ``profile`` at ``level`` callers."""
    if profile.name.startswith("sleep1s"):
        waits_side_by_side = server not in SERIAL
        return float(level if waits_side_by_side else min(level, workers))
    return float(RPS[profile.name].get(level, RPS[profile.name][max(RPS[profile.name])]))


def server_seconds(
    server: str, profile: Profile, levels: Sequence[int], requests: int, warmup: int, workers: int
) -> float:
    """One server's share of one round on one profile."""
    top = max(levels)
    seconds = START_STOP_S.get(server, 3.0) + PROFILE_START_S.get(profile.name, 0.0)
    seconds += warmup / expected_rps(server, profile, top, workers)
    for level in levels:
        seconds += (
            profile.count(level, requests) / expected_rps(server, profile, level, workers) + PER_LEVEL_S
        )
    return seconds


def estimate(
    servers: Sequence[str],
    profiles: Sequence[str],
    *,
    levels: Sequence[int],
    requests: int,
    rounds: int,
    workers: int,
    warmup_for: Mapping[str, int],
    slow_requests: int = 0,
) -> Estimate:
    """The run's wall time; ``warmup_for``: the example model's warm-up requests per server."""
    by_profile: dict[str, float] = {}
    for name in profiles:
        profile = PROFILES[name].capped(slow_requests) if name != "example" else PROFILES[name]
        total = 0.0
        for server in servers:
            if name != "example" and (server == "constant" or server in profile.cannot_serve):
                continue
            warmup = warmup_for.get(server, 0) if name == "example" else profile.warmup
            total += server_seconds(server, profile, levels, requests, warmup, workers)
        by_profile[name] = rounds * total
    return Estimate(by_profile=by_profile, total_s=sum(by_profile.values()))
