"""Start-up and shutdown: 503 while loading and after a failed load, requirements, signals, entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import psutil
import pytest
from serving_harness import REPO, Response, Server, free_port, make_tarball, start_server, wait_ready
from serving_models import Models
from waiting import wait_until


def test_model_fn_failing_gives_503_with_reason(models: Models, tmp_path: Path) -> None:
    server = start_server(
        tmp_path, ["--model", str(models.failing)], ready=False, env={"SMKIT_WORKER_RETRIES": "0"}
    )
    try:
        ping = wait_until(
            lambda: server.ping_when(lambda r: r.json()["message"] != "the model is still loading"),
            timeout=20,
            what=server.log,
        )
        assert ping.status == 503
        assert ping.json()["type"] == "ModelNotReady"
        assert "RuntimeError: weights file is corrupt" in ping.json()["message"]
        invocation = server.invoke("1,2")
        assert invocation.status == 503 and "weights file is corrupt" in invocation.json()["message"]
        assert server.request("GET", "/ping").status == 503  # still serving after the bad request
    finally:
        assert server.stop() == 0


def test_transform_fn_mixed_with_predict_fn_is_a_value_error_at_start(models: Models, tmp_path: Path) -> None:
    server = start_server(tmp_path, ["--model", str(models.mixed)], ready=False)
    try:
        ping = wait_until(
            lambda: server.ping_when(lambda r: "HookError" in r.body.decode()), timeout=20, what=server.log
        )
        assert ping.status == 503
        assert "transform_fn: is defined together with" in ping.json()["message"]
    finally:
        server.stop()


def test_ping_is_503_while_loading_then_200(models: Models, tmp_path: Path) -> None:
    server = start_server(tmp_path, ["--model", str(models.slow_load)], ready=False)
    try:
        statuses: list[int] = []
        messages: list[str] = []

        def record(response: Response) -> bool:
            statuses.append(response.status)
            if response.status == 503:
                messages.append(response.json()["message"])
            return response.status == 200

        wait_until(lambda: server.ping_when(record), timeout=20, interval=0.01, what=server.log)
        assert 503 in statuses
        # The front end answers from the start: 503 until every worker has loaded the model.
        assert set(messages) == {"the model is still loading"}
        assert server.invoke("x").body == b"loaded"
    finally:
        server.stop()


def test_unmet_requirements_stop_the_start_with_a_clear_error(models: Models, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "smkit.serving",
            "--model",
            str(models.unmet_requirements),
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PIP_NO_INDEX": "1", "SMKIT_REQUIREMENTS_DIR": str(tmp_path / "req")},
    )
    assert result.returncode == 1
    assert "requirements.txt: pip could not install smkit-test-no-such-package==9.9.9" in result.stderr
    off = subprocess.run(
        [sys.executable, "-m", "smkit.serving", "--model", str(models.unmet_requirements)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "SMKIT_INSTALL_REQUIREMENTS": "false"},
    )
    assert off.returncode == 1 and "SMKIT_INSTALL_REQUIREMENTS=false" in off.stderr


def test_bad_environment_value_is_named(tmp_path: Path, models: Models) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "smkit.serving", "--model", str(models.echo)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "soon"},
    )
    assert result.returncode == 2
    assert "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS='soon' is not a number" in result.stderr


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly_without_children(models: Models, tmp_path: Path, sig: str) -> None:
    import signal

    server = start_server(tmp_path, ["--model", str(models.echo)])
    children = wait_until(lambda: len(c := server.children()) == 2 and c, timeout=10, what="two workers")
    assert server.stop(getattr(signal, sig)) == 0
    assert not any(map(alive, children))


def test_cli_serves_a_tarball_extracted_safely(models: Models, tmp_path: Path) -> None:
    tarball = make_tarball(models.chain, tmp_path / "model.tar.gz")
    port = free_port()
    log = tmp_path / "cli.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from smkit.cli import main; main()",
                "serve",
                "--model",
                str(tarball),
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    server = Server(proc, port, log)
    wait_ready(server)
    try:
        assert server.invoke("2,2").json() == [6.0, 6.0]  # one CSV row decodes to 1-D, as in the toolkit
        assert len(server.children()) == 1
    finally:
        assert server.stop() == 0


def test_cli_refuses_an_archive_with_a_link(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("code/inference.py")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    result = subprocess.run(
        [sys.executable, "-c", "from smkit.cli import main; main()", "serve", "--model", str(archive)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 1
    assert "symbolic link" in result.stderr and "evil.tar.gz" in result.stderr


def test_image_entrypoint_serves_on_all_interfaces(models: Models, tmp_path: Path) -> None:
    port = free_port()
    server = start_server(
        tmp_path,
        ["serve"],
        module="smkit.serving.entrypoint",
        env={"SM_MODEL_DIR": str(models.echo), "SAGEMAKER_BIND_TO_PORT": str(port)},
    )
    try:
        assert server.port == port
        assert server.invoke("1", "text/csv").json()["type"] == "str"
        listening = {
            line.split()[1]
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[3] == "0A"
        }
        assert f"00000000:{port:04X}" in listening  # bound to 0.0.0.0, as SageMaker needs
    finally:
        server.stop()
    wrong = subprocess.run(
        [sys.executable, "-m", "smkit.serving.entrypoint", "train"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    assert wrong.returncode == 2 and "expected the command 'serve', got 'train'" in wrong.stderr


def listening_sockets(port: int) -> list[str]:
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return [row[1] for row in rows if row[3] == "0A" and row[1].endswith(f":{port:04X}")]


def test_port_in_use_is_refused_clearly(models: Models) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        marker = f"port-in-use-{os.getpid()}-{port}"
        result = subprocess.run(
            [sys.executable, "-m", "smkit.serving", "--model", str(models.echo), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={**os.environ, "SMKIT_TEST_MARKER": marker},
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    # The worker template starts before the port is bound; a start that fails stops it again.
    left = [p.pid for p in psutil.process_iter() if _environ(p).get("SMKIT_TEST_MARKER") == marker]
    assert not left, f"processes of the failed start left behind: {left}"


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return dict(proc.environ())
    except psutil.Error:
        return {}


def test_constant_baseline_model_and_one_caller_served_by_the_warm_worker(tmp_path: Path) -> None:
    import http.client

    server = start_server(tmp_path, ["--constant", "--workers", "2"])
    try:
        assert (
            len(listening_sockets(server.port)) == 1
        )  # the front end's; workers take requests from its queue
        assert server.invoke("anything", "text/csv").json() == {"predictions": [0.0]}
        connections = [http.client.HTTPConnection("127.0.0.1", server.port) for _ in range(16)]
        for _ in range(3):
            for conn in connections:
                conn.request("POST", "/invocations", "1", {"Content-Type": "text/csv"})
                assert conn.getresponse().read()
        for conn in connections:
            conn.close()
    finally:
        server.stop()
    pids = {json.loads(line)["pid"] for line in server.log().splitlines() if '"/invocations"' in line}
    # One request at a time, over any of 16 keep-alive connections: each goes to the idle worker that
    # finished last (smkit/serving/front/pinning.py); connections are tied to no worker
    # (tests/serving/test_serving_scheduler.py shares them out when requests overlap).
    assert len(pids) == 1


def test_unsatisfied_requirements_are_installed_before_the_model_loads(tmp_path: Path) -> None:
    from serving_models import tiny_wheel, write_model

    wheel = tiny_wheel(tmp_path)
    model = write_model(
        tmp_path,
        "needs_dep",
        "import smkit_fixture_dep\n\n\ndef model_fn(model_dir):\n    return smkit_fixture_dep.VALUE\n\n\n"
        "def transform_fn(model, data, content_type, accept):\n    return str(model), 'text/plain'\n",
        **{"code__requirements.txt": f"{wheel}\n"},
    )
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={"PIP_NO_INDEX": "1", "SMKIT_REQUIREMENTS_DIR": str(tmp_path / "site")},
    )
    try:
        assert server.invoke("x").body == b"42"
    finally:
        server.stop()
    assert list((tmp_path / "site").glob("*/smkit_fixture_dep/__init__.py"))


def test_sigterm_during_a_slow_load_stops_at_once(models: Models, tmp_path: Path) -> None:
    import signal

    marker = tmp_path / "loaded"
    server = start_server(
        tmp_path,
        ["--model", str(models.slow_load)],
        ready=False,
        env={"SMKIT_TEST_LOADED_MARKER": str(marker)},
    )
    # The loading phase: the front end answers 503.
    wait_until(lambda: server.ping_when(lambda r: r.status == 503), timeout=20, what=server.log)
    assert server.stop(signal.SIGTERM) == 0
    assert not marker.exists()  # model_fn was still sleeping: the stop did not wait for the load


def test_workers_die_with_a_killed_arbiter(models: Models, tmp_path: Path) -> None:
    import signal

    server = start_server(tmp_path, ["--model", str(models.echo)])
    children = wait_until(lambda: len(c := server.children()) == 2 and c, timeout=10, what="two workers")
    server.stop(signal.SIGKILL)
    wait_until(lambda: not any(map(alive, children)), timeout=10, what=f"workers {children} to exit")


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False
