"""Fixtures of the CI-script tests: one moto server for the session, its environment per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from smkit.emulator.server import MotoServer


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """moto's real server on 127.0.0.1 (the only emulated AWS) with smkit's repairs, shared by the session."""
    with MotoServer.start() as server:
        yield server


@pytest.fixture()
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """Point boto3 (and any child process) at moto with dummy credentials for one test."""
    for key, value in moto_server.environment().items():
        monkeypatch.setenv(key, value)
    return moto_server
