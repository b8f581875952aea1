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


def test_a_container_whose_free_port_was_taken_starts_on_another(tmp_path, monkeypatch):
    """free_port() cannot reserve its answer: when another process binds the port first, start moves on."""
    import asyncio

    from smkit.local import containers
    from smkit.ops import server_process
    from smkit.process import free_port

    (tmp_path / "model" / "code").mkdir(parents=True)
    (tmp_path / "model" / "code" / "inference.py").write_text(
        "def model_fn(model_dir):\n    return None\n\n\ndef predict_fn(data, model):\n    return 'ok'\n"
    )
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", 0))
        thief.listen()
        stolen = thief.getsockname()[1]
        # The race, made certain: the first port free_port() answers is bound by someone else.
        answers = iter([stolen])
        monkeypatch.setattr(server_process, "free_port", lambda: next(answers, None) or free_port())

        async def run() -> tuple[int | None, int]:
            process = containers.ContainerProcess(
                containers.ContainerLaunch(name="model", model_dir=tmp_path / "model"),
                label="model",
                workers=1,
            )
            try:
                await process.start()
                return process.port, (await process.request("GET", "/ping")).status
            finally:
                await process.stop()

        port, status = asyncio.run(run())
    assert port != stolen and status == 200
