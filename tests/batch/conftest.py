"""Shared fixtures for batch transform tests: moto's server (session), AWS variables per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from smkit.emulator.server import MotoServer


@pytest.fixture(scope="session")
def moto() -> Iterator[MotoServer]:
    """One moto server for every batch test that needs S3 or SageMaker."""
    with MotoServer.start() as server:
        yield server


@pytest.fixture
def aws(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """moto's server, with this test's environment pointing boto3 (and child processes) at it."""
    for name, value in moto.environment().items():
        monkeypatch.setenv(name, value)
    return moto
