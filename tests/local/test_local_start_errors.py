"""Start-up errors of the local endpoint: clear messages, nothing left running or behind."""

from __future__ import annotations

import socket

import pytest
import yaml
from click.testing import CliRunner

from smkit.cli import main
from smkit.config import parse_config
from smkit.local import LocalEndpoint, LocalEndpointError


def _config(repo, path: str):
    data = yaml.safe_load((repo / "config" / "realtime.yaml").read_text())
    data["model"]["containers"][0]["model_data"]["path"] = path
    return parse_config(data)


def test_missing_model_archive_names_the_file_and_the_fix(repo):
    endpoint = LocalEndpoint(_config(repo, "build/no-such-model.tar.gz"), root=repo)
    with pytest.raises(LocalEndpointError, match=r"no-such-model\.tar\.gz does not exist; build it first"):
        endpoint.start()
    assert not endpoint.serving
    assert not endpoint.runtime.workdir.exists()


def test_unreadable_archive_is_reported(repo, tmp_path):
    (tmp_path / "broken.tar.gz").write_bytes(b"not a tar file")
    endpoint = LocalEndpoint(_config(repo, "broken.tar.gz"), root=tmp_path)
    with pytest.raises(LocalEndpointError, match=r"broken\.tar\.gz is not a readable tar\.gz archive"):
        endpoint.start()


def test_port_in_use_is_reported(repo):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LocalEndpointError, match=f"cannot listen on 127.0.0.1:{port}"):
            LocalEndpoint(repo / "config" / "realtime.yaml", root=repo, port=port).start()


def test_cli_rejects_an_unsupported_async_output(repo):
    result = CliRunner().invoke(
        main,
        ["local-endpoint", "--config", str(repo / "config" / "async.yaml"), "--async-output", "ftp://x/y"],
    )
    assert result.exit_code == 2
    assert "'ftp://x/y' is not supported; use s3://BUCKET/KEY" in result.output


def test_cli_reports_an_invalid_config(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: Bad_Name\n")
    result = CliRunner().invoke(main, ["local-endpoint", "--config", str(bad)])
    assert result.exit_code == 1
    assert "is not a valid deployment config" in result.output
