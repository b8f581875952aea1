"""Fixtures of the CI-script tests: one moto server for the session, its environment per test."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smkit.emulator.server import HOST, MotoServer, free_port, port_in_use

UPDATES = Path(__file__).with_name("moto_updates.py")
START_TIMEOUT_S = 30.0


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """moto's real server on 127.0.0.1 (the only emulated AWS), with smkit's repairs and the stack-update
    repairs of moto_updates.py, shared by the whole session."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(UPDATES), "-H", HOST, "-p", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = MotoServer(port=port, pid=process.pid, _process=process)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not port_in_use(port) or not server.is_running():
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"moto's server did not start on port {port} (exit status {process.returncode})")
        time.sleep(0.05)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """Point boto3 (and any child process) at moto with dummy credentials for one test."""
    for key, value in moto_server.environment().items():
        monkeypatch.setenv(key, value)
    return moto_server
