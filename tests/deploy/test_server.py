"""MotoServer: readiness, clean shutdown of the whole process group, detached servers, the environment."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from smkit.emulator import (
    EmulatorError,
    MotoServer,
    aws_environment,
    child_environment,
    endpoint_url_for,
)
from smkit.emulator.moto_server import port_in_use
from smkit.process import group_alive


def _gone(pid: int) -> bool:
    return not group_alive(pid)


def test_context_manager_serves_resets_then_frees_port_and_process_group(tmp_path: Path) -> None:
    with MotoServer.start(log_path=tmp_path / "moto.log") as server:
        assert server.is_running()
        assert server.endpoint_url == f"http://localhost:{server.port}"
        assert server.client("sts").get_caller_identity()["Account"] == "123456789012"
        s3 = server.client("s3")
        s3.create_bucket(Bucket="smkit-reset-test")
        server.reset()
        assert s3.list_buckets()["Buckets"] == []
    assert not port_in_use(server.port)
    assert _gone(server.pid)
    assert "Running on http://127.0.0.1" in (tmp_path / "moto.log").read_text()


@pytest.fixture()
def detached(tmp_path: Path) -> Iterator[tuple[MotoServer, Path]]:
    state = tmp_path / "state" / "moto.json"
    server = MotoServer.start(detach=True, log_path=tmp_path / "moto.log")
    server.save(state)
    try:
        yield server, state
    finally:
        if not _gone(server.pid):
            server.stop()


def test_detached_server_is_found_again_through_its_state_file(detached: tuple[MotoServer, Path]) -> None:
    server, state = detached
    found = MotoServer.attach(state)
    assert found is not None
    assert (found.port, found.pid, found.region) == (server.port, server.pid, server.region)
    found.stop()
    assert _gone(server.pid)
    assert not port_in_use(server.port)
    # A stale record is removed, not trusted.
    assert MotoServer.attach(state) is None
    assert not state.exists()


def test_attach_without_state_file_is_none(tmp_path: Path) -> None:
    assert MotoServer.attach(tmp_path / "missing.json") is None


def test_attach_refuses_a_file_that_is_not_a_state_file(tmp_path: Path) -> None:
    state = tmp_path / "moto.json"
    state.write_text("{not json")
    with pytest.raises(EmulatorError, match=r"moto.json is not a moto state file .*delete it"):
        MotoServer.attach(state)


def test_a_busy_port_is_refused_with_the_fix() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(EmulatorError, match=rf"port {port} is already in use; pick another port"):
            MotoServer.start(port=port)


def test_environment_points_everything_at_the_emulator() -> None:
    env = aws_environment(endpoint_url_for(4566), region="eu-west-1")
    assert env["AWS_ENDPOINT_URL"] == "http://localhost:4566"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == ("testing", "testing")
    assert env["AWS_DEFAULT_REGION"] == env["AWS_REGION"] == "eu-west-1"
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["CDK_DISABLE_VERSION_CHECK"] == env["CDK_DISABLE_CLI_TELEMETRY"] == "true"
    assert env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] == "20"


def test_child_environment_drops_real_aws_settings() -> None:
    base = {"PATH": "/bin", "AWS_PROFILE": "prod", "AWS_SESSION_TOKEN": "t", "AWS_ACCESS_KEY_ID": "AKIAREAL"}
    env = child_environment("http://localhost:1", base=base)
    assert env["PATH"] == "/bin"
    assert "AWS_PROFILE" not in env and "AWS_SESSION_TOKEN" not in env
    assert env["AWS_ACCESS_KEY_ID"] == "testing"
    assert env["AWS_CONFIG_FILE"] == env["AWS_SHARED_CREDENTIALS_FILE"] == os.devnull


def test_last_traceback_is_the_cause_behind_a_bare_http_500(tmp_path: Path) -> None:
    log = tmp_path / "moto.log"
    log.write_text(
        '127.0.0.1 - - [22/Nov/2026 04:31:56] "POST / HTTP/1.1" 200 -\n'
        "Traceback (most recent call last):\n"
        '  File "old.py", line 1, in <module>\n'
        "ValueError: an older one\n"
        "Error on request:\n"
        "Traceback (most recent call last):\n"
        '  File "models.py", line 845, in <dictcomp>\n'
        "    instance.parameters[key]\n"
        "KeyError: 'BootstrapVersion'\n"
        '127.0.0.1 - - [22/Nov/2026 04:31:56] "POST / HTTP/1.1" 500 -\n'
    )
    server = MotoServer(port=1, pid=1, log_path=log)
    assert server.last_traceback().splitlines() == [
        "Traceback (most recent call last):",
        '  File "models.py", line 845, in <dictcomp>',
        "    instance.parameters[key]",
        "KeyError: 'BootstrapVersion'",
    ]
    assert MotoServer(port=1, pid=1).last_traceback() == ""
