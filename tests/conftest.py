"""Fixtures every test folder shares: the session's one moto server (the only emulated AWS) and the AWS
variables that point boto3 and child processes at it. Tests wait with ``waiting.wait_until``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from smkit.emulator.server import MotoServer


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto's real server on 127.0.0.1 with smkit's repairs, for the whole session (one per xdist worker).

    Tests share it, so each uses names of its own (buckets, stacks, parameters) and checks only what it
    created. Its request log is in the session's temporary folder.
    """
    with MotoServer.start(log_path=tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture()
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """The session's moto server, with this test's environment pointing boto3 (and children) at it."""
    for key, value in moto_server.environment().items():
        monkeypatch.setenv(key, value)
    return moto_server
