"""Shared helpers for the benchmark scripts: server processes, a closed-loop load client, reports.

Every server is started in its own session (``start_new_session=True``) so that the whole process
tree, including processes that re-parent themselves (the Multi Model Server's Java frontend and its
Python workers), can be found again by session id, measured (RSS, CPU) and stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

import psutil

from smkit import process

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
BENCHMARKS_MD = REPO_ROOT / "BENCHMARKS.md"
LOOPBACK = "127.0.0.1"  # every server under test binds here (no other address is ever a target)
# Multi Model Server 1.1.11 rejects ports >= 32767 ("Invalid port number"), so the kernel's ephemeral range
# (32768+) cannot be used; every server in a run gets a port below this: free_port(LOOPBACK, below=PORTS_BELOW).
PORTS_BELOW = 32767


class BenchError(RuntimeError):
    """A benchmark could not run (server did not start, bad payload, ...)."""


@dataclass
class ServerSpec:
    """How to start one server under test."""

    name: str
    argv: Sequence[str]
    port: int
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    startup_timeout_s: float = 120.0


def smkit_spec(*, name: str, python: Path, args: Sequence[str], port: int, workers: int) -> ServerSpec:
    """``python -m smkit.serving ARGS`` on 127.0.0.1:``port``, smkit imported from this source tree."""
    argv = [str(python), "-m", "smkit.serving", *args, "--host", LOOPBACK, "--port", str(port)]
    argv += ["--workers", str(workers)]
    return ServerSpec(name=name, argv=argv, port=port, env={"PYTHONPATH": str(REPO_ROOT)}, cwd=REPO_ROOT)


def export_tree(commit: str, into: Path) -> Path:
    """``smkit/`` as it was at ``commit`` (``git archive``), extracted into ``into`` to import smkit from."""
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, "smkit"],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = (
            exc.stderr.decode(errors="replace").strip()
            if isinstance(exc, subprocess.CalledProcessError)
            else exc
        )
        raise BenchError(f"cannot export smkit at commit {commit}: {detail}") from None
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


class ManagedServer:
    """A running server: its session, cold-start time, process-tree RSS/CPU, and a clean stop."""

    def __init__(self, spec: ServerSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self._log = log_path.open("wb")
        env = {**os.environ, **spec.env}
        self.started_at = time.perf_counter()
        self.process = process.start_group(spec.argv, env=env, log=self._log, cwd=spec.cwd)
        self.session_id = self.process.pid
        if _PRIORITY["nice"]:
            _set_autogroup_nice(self.process.pid, _PRIORITY["nice"])
        self.cold_start_s: float | None = None
        self.stopped_pids: list[int] = []

    @property
    def port(self) -> int:
        return self.spec.port

    def wait_ready(self) -> float:
        """Poll ``GET /ping`` until 200; return seconds from process start to the first 200."""
        deadline = self.started_at + self.spec.startup_timeout_s
        while time.perf_counter() < deadline:
            if process.ping(self.port, host=LOOPBACK)[0] == 200:
                self.cold_start_s = time.perf_counter() - self.started_at
                return self.cold_start_s
            if self.process.poll() is not None and not self.processes():
                raise BenchError(
                    f"{self.spec.name} exited with code {self.process.returncode} before /ping answered 200; "
                    f"see its log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.005)
        raise BenchError(
            f"{self.spec.name} did not answer 200 on /ping within {self.spec.startup_timeout_s:.0f} s; "
            f"see its log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def processes(self) -> list[psutil.Process]:
        """Every live process in the server's session (the server tree, re-parented or not)."""
        found = []
        for proc in psutil.process_iter():
            try:
                if os.getsid(proc.pid) == self.session_id and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except (OSError, psutil.Error):
                continue
        return found

    def rss_bytes(self) -> int:
        """Resident set size summed over the server's processes."""
        total = 0
        for proc in self.processes():
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total

    def cpu_by_pid(self) -> dict[int, float]:
        """User + system CPU seconds consumed so far by each live process of the server."""
        found = {}
        for proc in self.processes():
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            found[proc.pid] = times.user + times.system
        return found

    def schedstat(self) -> dict[int, tuple[int, int, int]]:
        """Per process, summed over its threads: ns on a CPU, ns runnable but waiting, timeslices
        (``/proc/PID/task/TID/schedstat``): waiting time is CPU the scheduler gave to someone else."""
        found = {}
        for proc in self.processes():
            total = [0, 0, 0]
            for stat in Path(f"/proc/{proc.pid}/task").glob("*/schedstat"):
                with suppress(OSError, ValueError):
                    for i, value in enumerate(stat.read_text().split()[:3]):
                        total[i] += int(value)
            found[proc.pid] = (total[0], total[1], total[2])
        return found

    def cpu_seconds(self) -> float:
        """User + system CPU seconds consumed so far by the server's live processes."""
        return sum(self.cpu_by_pid().values())

    def stop(self, grace_s: float = 10.0) -> list[int]:
        """SIGTERM the session, SIGKILL what is left after ``grace_s``; return the pids that needed SIGKILL.

        The Multi Model Server leaves its Python worker behind when its frontend stops (docs/toolchain.md),
        so every process of the session is signalled by pid, not only the one we started.
        """
        self.stopped_pids = sorted(proc.pid for proc in self.processes())
        for pid in self.stopped_pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and self.processes():
            time.sleep(0.05)
        killed = []
        for proc in self.processes():
            _signal(proc.pid, signal.SIGKILL)
            killed.append(proc.pid)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _signal(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        self._log.close()
        return killed


def _signal(pid: int, signo: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signo)


@contextmanager
def running(spec: ServerSpec, log_dir: Path) -> Iterator[ManagedServer]:
    """Start ``spec``, wait for its first 200 on /ping, and always stop the whole session afterwards."""
    log_dir.mkdir(parents=True, exist_ok=True)
    server = ManagedServer(spec, log_dir / f"{spec.name}.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def machine_facts() -> dict[str, Any]:
    """What the numbers were measured on (cores are shared by client and servers)."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
    }


_PRIORITY = {"nice": 0}


def _set_autogroup_nice(pid: int | str, value: int) -> None:
    # With kernel.sched_autogroup_enabled=1 the CPU is shared between sessions first and nice values
    # only order tasks inside a session, so the session's own nice has to be raised as well.
    path = Path(f"/proc/{pid}/autogroup")
    if path.exists():
        with suppress(OSError):
            path.write_text(f"{value}\n")


def apply_niceness(value: int) -> int:
    """Set the nice value of this process, its session and every server session started after it.

    On a shared machine a negative value (root only) keeps other people's jobs from landing in the
    middle of a measurement; client and servers get the same priority. Returns the nice value in force.
    """
    if value != 0:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, value)
        except OSError as exc:
            print(f"--nice {value}: not applied ({exc.strerror}); measuring at the current priority")
            return os.getpriority(os.PRIO_PROCESS, 0)
        _set_autogroup_nice("self", value)
        _PRIORITY["nice"] = value
    return os.getpriority(os.PRIO_PROCESS, 0)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so ``running()`` still stops every server session on the way out."""

    def _exit(signo: int, frame: object) -> None:
        raise SystemExit(128 + signo)

    signal.signal(signal.SIGTERM, _exit)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def replace_section(markdown_path: Path, section: str, body: str) -> None:
    """Replace the text between ``<!-- section:start -->`` and ``<!-- section:end -->`` markers.

    The markers are appended at the end of the file when missing, so the prose around them stays
    hand-written while the tables are always the ones the scripts last measured.
    """
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    text = markdown_path.read_text() if markdown_path.exists() else "# Benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    markdown_path.write_text(text)


def add_output_options(parser: argparse.ArgumentParser, *, out: Path) -> None:
    """The options every server benchmark shares: result path, smkit's interpreter, priority, markdown."""
    parser.add_argument("--out", type=Path, default=out, help="JSON result path")
    parser.add_argument(
        "--smkit-python",
        default="image",
        help="interpreter for smkit: 'image' (venv with the image's and the model's requirements) or a path",
    )
    parser.add_argument(
        "--nice", type=int, default=0, help="nice value for client and servers (e.g. -10 as root)"
    )
    parser.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")


def run_benchmark(
    name: str,
    args: argparse.Namespace,
    measure: Callable[[argparse.Namespace, Path], dict[str, Any]],
    markdown: Callable[[dict[str, Any]], str],
) -> int:
    """Priority, SIGTERM handling and machine facts; ``measure`` in a scratch folder; JSON, table, BENCHMARKS.md.

    Returns the exit status: 1 when the benchmark failed to run or its result says it did not pass.
    """
    apply_niceness(args.nice)
    exit_on_sigterm()
    args.machine = machine_facts()
    with tempfile.TemporaryDirectory(prefix=f"smkit-bench-{name}-") as tmp:
        try:
            result = measure(args, Path(tmp))
        except BenchError as exc:
            print(f"bench.{name}: {exc}", file=sys.stderr)
            return 1
    write_json(args.out, result)
    table = markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, name, table)
    return 0 if result["passed"] else 1


def rotated(servers: Sequence[str], by: int) -> list[str]:
    """``servers`` starting at index ``by`` (mod their count), so every server takes every position."""
    k = by % len(servers)
    return [*servers[k:], *servers[:k]]
