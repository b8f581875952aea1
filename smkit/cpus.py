"""How many CPUs this process may use: its CPU affinity and its cgroup's CPU quota, not the host's count.

``os.cpu_count()`` is the host's count. A container on a SageMaker instance, in Kubernetes or in CI
gets a CPU quota (``docker run --cpus``: cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``) and may be pinned to some CPUs (``--cpuset-cpus``: the affinity mask). Starting a
worker or a thread per host CPU under a quota of two CPUs makes them queue for the quota and be
throttled. The count here is the smaller of the affinity mask and the quota rounded up, with the
quota read at every level of the process's cgroup path (a limit set on a parent applies too): what
the JVM's container support reports, so Multi Model Server's default worker count agrees with ours.
CPU shares (``cpu.weight``) are a relative weight, not a limit, and are not read.

Sources: https://docs.kernel.org/admin-guide/cgroup-v2.html (``cpu.max``),
https://docs.kernel.org/scheduler/sched-bwc.html (v1 CFS bandwidth), docs/serving-runtime.md.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CpuCount:
    """The CPUs this process may use, and where the number comes from.

    Attributes:
        count: min(affinity, ceil(quota)), at least 1.
        affinity: CPUs in the affinity mask (``os.sched_getaffinity``; the host count without it).
        quota: the tightest cgroup quota in CPUs (e.g. 1.5), or None when no level sets one.
    """

    count: int
    affinity: int
    quota: float | None

    def describe(self) -> str:
        """``2 CPUs (affinity 4, cgroup quota 1.5)``, for start-up logs."""
        quota = "no cgroup quota" if self.quota is None else f"cgroup quota {self.quota:g}"
        return f"{self.count} CPU{'s' if self.count != 1 else ''} (affinity {self.affinity}, {quota})"


def affinity_count() -> int:
    """CPUs in this process's affinity mask (the host's count where the call does not exist)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_cpus(root: str = "/", affinity: int | None = None) -> CpuCount:
    """The CPUs this process may use. ``root`` prefixes ``/proc`` and the cgroup mounts (tests)."""
    mask = affinity_count() if affinity is None else affinity
    quota = cgroup_quota(root)
    count = mask if quota is None else min(mask, math.ceil(quota))
    return CpuCount(count=max(1, count), affinity=mask, quota=quota)


def cgroup_quota(root: str = "/") -> float | None:
    """The tightest CPU quota (in CPUs) on this process's cgroup path, v2 or v1; None when unlimited."""
    base = Path(root)
    try:
        mounts = (base / "proc/self/mountinfo").read_text()
        membership = (base / "proc/self/cgroup").read_text()
    except OSError:
        return None
    limits = []
    for mount, parts in _cpu_cgroups(mounts, membership):
        # Every level from this process's cgroup up to the mount: a parent's limit applies too.
        for depth in range(len(parts), -1, -1):
            limit = _level_limit(base / mount.lstrip("/") / "/".join(parts[:depth]))
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def _cpu_cgroups(mounts: str, membership: str) -> list[tuple[str, list[str]]]:
    """(mount point, this process's cgroup path below it) for the v2 hierarchy and the v1 cpu controller."""
    paths: dict[str, str] = {}  # "v2" or "cpu" -> cgroup path from /proc/self/cgroup
    for line in membership.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            paths["v2"] = path
        elif "cpu" in controllers.split(","):
            paths["cpu"] = path
    found = []
    for line in mounts.splitlines():
        # mountinfo: id parent major:minor root mount-point options [optional...] - fstype source super
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        mount_root, mount_point, fstype = fields[3], fields[4], tail[0]
        if fstype == "cgroup2":
            kind = "v2"
        elif fstype == "cgroup" and "cpu" in tail[2].split(","):
            kind = "cpu"
        else:
            continue
        member = paths.get(kind)
        if member is None:
            continue
        # Without a cgroup namespace the mount's root is a prefix of the path (/docker/ID/...).
        relative = member[len(mount_root) :] if member.startswith(mount_root) else ""
        found.append((mount_point, [part for part in relative.split("/") if part]))
    return found


def _level_limit(directory: Path) -> float | None:
    try:
        text = (directory / "cpu.max").read_text().split()  # v2: "max 100000" or "150000 100000"
        if len(text) == 2 and text[0] != "max":
            return _ratio(text[0], text[1])
        return None
    except OSError:
        pass
    try:
        quota = (directory / "cpu.cfs_quota_us").read_text().strip()  # v1: -1 = no limit
        period = (directory / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None
