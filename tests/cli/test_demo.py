"""`smkit demo` end to end: emulated deploy, local endpoint, boto3 invocations, nothing left running."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MARKER = "SMKIT_TEST_RUN_ID"


def _still_running(run_id: str) -> list[str]:
    """Processes that inherited this run's marker variable and are still alive."""
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get(MARKER) == run_id:
                alive.append(" ".join(proc.info["cmdline"] or []))
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return alive


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.usefixtures("validated_elsewhere")
def test_demo_deploys_runs_locally_and_cleans_up() -> None:
    if not (ROOT / "build" / "model.tar.gz").is_file():
        subprocess.run(
            [sys.executable, "-m", "scripts.package_models", "--build-dir", "build"], cwd=ROOT, check=True
        )
    run_id = uuid.uuid4().hex
    env = dict(os.environ, JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", **{MARKER: run_id})
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "demo", "--config", "config/realtime.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "cdk bootstrap + cdk deploy --all" in out
    assert "InService" in out
    for content_type in ("text/csv", "application/json", "application/x-npy"):
        assert content_type in out
    assert "3/3 invocations answered as expected" in out
    assert _still_running(run_id) == []
    ports = [int(p) for p in re.findall(r"http://(?:localhost|127\.0\.0\.1):(\d+)", out)]
    assert len(ports) == 2
    assert not any(_listening(p) for p in ports)


@pytest.mark.usefixtures("validated_elsewhere")
def test_demo_interrupted_leaves_nothing_behind() -> None:
    """Ctrl-C while the local endpoint starts: exit 130, every child (moto, runtimes) gone."""
    run_id = uuid.uuid4().hex
    env = dict(
        os.environ,
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        PYTHONUNBUFFERED="1",
        **{MARKER: run_id},
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "Starting the local endpoint" in line:
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=60)
    output = "".join(seen) + rest
    assert proc.returncode == 130, output
    assert "interrupted: the local endpoint and the emulated AWS were shut down" in output
    assert _still_running(run_id) == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the discarded exception
def test_a_ctrl_c_whose_exception_python_discarded_still_stops_the_demo() -> None:
    """CPython drops an exception raised while a finalizer runs: the demo must not lose that Ctrl-C."""
    from smkit.cli.demo import Interrupts

    class Finalized:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)  # the handler's KeyboardInterrupt is "ignored" here

    before = signal.getsignal(signal.SIGINT)  # SIG_IGN in a run a non-interactive shell put in the background
    interrupts = Interrupts()
    with interrupts.installed():
        item = Finalized()
        del item  # no KeyboardInterrupt reaches this frame
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()  # what the demo does between steps
    assert signal.getsignal(signal.SIGINT) is before
