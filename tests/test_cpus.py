"""smkit.cpus: the CPUs a process may use, from fake cgroup v1 / v2 trees and from this machine."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smkit.cpus import affinity_count, available_cpus, cgroup_quota

V2_MOUNTS = (
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
)
V1_MOUNTS = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 {root} /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
)


def fake_root(tmp_path: Path, mounts: str, membership: str, files: dict[str, str]) -> str:
    """A directory holding proc/self/{mountinfo,cgroup} and the cgroup files given (path -> content)."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "mountinfo").write_text(mounts)
    (tmp_path / "proc" / "self" / "cgroup").write_text(membership)
    for path, content in files.items():
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return str(tmp_path)


@pytest.mark.parametrize(
    ("cpu_max", "quota", "count"),
    [
        ("max 100000\n", None, 8),
        ("200000 100000\n", 2.0, 2),
        ("150000 100000\n", 1.5, 2),
        ("50000 100000\n", 0.5, 1),
    ],
)
def test_cgroup_v2_cpu_max_in_a_container_namespace(tmp_path, cpu_max, quota, count):
    root = fake_root(tmp_path, V2_MOUNTS, "0::/\n", {"/sys/fs/cgroup/cpu.max": cpu_max})
    assert cgroup_quota(root) == quota
    assert available_cpus(root, affinity=8).count == count  # the quota rounded up, as the JVM does


def test_cgroup_v2_limit_of_a_parent_applies(tmp_path):
    """systemd / Kubernetes put the limit on a parent slice; the process's own cgroup says max."""
    root = fake_root(
        tmp_path,
        V2_MOUNTS,
        "0::/kubepods.slice/pod1/ctr\n",
        {
            "/sys/fs/cgroup/kubepods.slice/pod1/ctr/cpu.max": "max 100000\n",
            "/sys/fs/cgroup/kubepods.slice/pod1/cpu.max": "300000 100000\n",
            "/sys/fs/cgroup/kubepods.slice/cpu.max": "400000 100000\n",
        },
    )
    assert cgroup_quota(root) == 3.0
    assert available_cpus(root, affinity=16).describe() == "3 CPUs (affinity 16, cgroup quota 3)"


def test_cgroup_v1_cfs_quota_with_the_host_path_visible(tmp_path):
    """Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names /docker/ID, the mount's root too."""
    mounts = V1_MOUNTS.format(root="/docker/abc")
    membership = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n"
    files = {
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    root = fake_root(tmp_path, mounts, membership, files)
    assert cgroup_quota(root) == 2.5
    assert available_cpus(root, affinity=4).count == 3


def test_cgroup_v1_without_a_quota_and_affinity_decides(tmp_path):
    files = {
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    root = fake_root(tmp_path, V1_MOUNTS.format(root="/"), "4:cpu,cpuacct:/\n", files)
    assert cgroup_quota(root) is None
    assert available_cpus(root, affinity=3).describe() == "3 CPUs (affinity 3, no cgroup quota)"


def test_affinity_smaller_than_the_quota_wins(tmp_path):
    root = fake_root(tmp_path, V2_MOUNTS, "0::/\n", {"/sys/fs/cgroup/cpu.max": "800000 100000\n"})
    assert available_cpus(root, affinity=2).count == 2


def test_no_cgroup_files_at_all_means_no_quota(tmp_path):
    assert cgroup_quota(str(tmp_path)) is None
    root = fake_root(tmp_path, V2_MOUNTS, "0::/\n", {"/sys/fs/cgroup/cpu.max": "garbage\n"})
    assert cgroup_quota(root) is None
    assert available_cpus(root, affinity=1).describe() == "1 CPU (affinity 1, no cgroup quota)"


def test_this_machine() -> None:
    cpus = available_cpus()
    assert cpus.affinity == affinity_count() == len(os.sched_getaffinity(0))
    expected = cpus.affinity if cpus.quota is None else min(cpus.affinity, math.ceil(cpus.quota))
    assert cpus.count == max(1, expected)


def test_this_machine_with_the_affinity_narrowed_to_one_cpu() -> None:
    code = (
        "import json, os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
        "from smkit.cpus import available_cpus; c = available_cpus(); print(json.dumps([c.count, c.affinity]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [1, 1]
