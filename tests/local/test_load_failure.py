"""A model whose ``model_fn`` raises: the local endpoint, ``smkit serve`` and local batch stop as soon as
every worker slot has given up, say why once (the exception with its traceback), exit non-zero, and the
kit's own ``/ping`` probes do not flood the output (smkit/readiness.py, smkit/serving/front/lifecycle.py)."""

from __future__ import annotations

import http.client
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import TransformOptions
from smkit.config import load_deployment
from smkit.contract import READINESS_PROBE_AGENT
from smkit.local import LocalEndpoint, LocalEndpointError
from smkit.ops.server_process import Launch, ServerProcess
from smkit.process import ProcessStartError, free_port, runtime_command, stop_group

MESSAGE = "no weights in this model directory"
BROKEN = f"def model_fn(model_dir):\n    raise RuntimeError({MESSAGE!r})\n"
HEALTHY = "def model_fn(model_dir):\n    return None\n\n\ndef predict_fn(data, model):\n    return 'ok'\n"
CONFIG = """name: broken-model
environment: dev
image:
  source: build
model:
  containers:
    - name: broken
      model_data:
        source: archive
        path: model.tar.gz
endpoint:
  type: realtime
  variants:
    - name: only
      instance_type: ml.m5.large
"""


def _model(folder: Path, handler: str) -> Path:
    (folder / "code").mkdir(parents=True)
    (folder / "code" / "inference.py").write_text(handler)
    return folder


@pytest.fixture
def broken_config(tmp_path: Path) -> Path:
    model = _model(tmp_path / "model", BROKEN)
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as archive:
        archive.add(model / "code", arcname="code")
    (tmp_path / "broken.yaml").write_text(CONFIG)
    return tmp_path / "broken.yaml"


def _assert_said_once(output: str) -> None:
    assert f"RuntimeError: {MESSAGE}" in output, output
    assert output.count("Traceback (most recent call last)") == 1, output
    assert f"raise RuntimeError({MESSAGE!r})" in output  # the handler's own line, from the traceback
    assert sum("/ping" in line for line in output.splitlines()) <= 5, output


def test_local_endpoint_exits_with_the_load_error_once(broken_config: Path) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", str(broken_config), "--no-package",
         "--python", sys.executable, "--port", "0"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    _assert_said_once(output)
    assert "container 'only-broken' cannot serve: /ping 503 x " in output
    assert (
        f"the model failed to load: RuntimeError: {MESSAGE}; its traceback is in the output above" in output
    )
    print(
        f"local-endpoint exited {time.monotonic() - started:.1f} s after its start"
    )  # reported, not asserted


def test_local_endpoint_with_a_log_dir_puts_the_traceback_in_its_error(
    broken_config: Path, tmp_path: Path
) -> None:
    endpoint = LocalEndpoint(
        broken_config, root=broken_config.parent, log_dir=tmp_path / "logs", python=sys.executable
    )
    with pytest.raises(LocalEndpointError) as info:
        endpoint.start()
    message = str(info.value)
    assert f"the load error, from {tmp_path / 'logs' / 'only-broken.log'}:" in message
    _assert_said_once(message)
    log = (tmp_path / "logs" / "only-broken.log").read_text()
    assert "/ping" not in log  # the start's own probes are not access-logged
    assert not endpoint.serving


def test_smkit_serve_exits_non_zero_once_every_slot_gave_up(tmp_path: Path) -> None:
    model = _model(tmp_path / "model", BROKEN)
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "serve", "--model", str(model), "--port", str(free_port()),
         "--workers", "2", "--python", sys.executable],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    _assert_said_once(done.stderr)
    assert f"every worker slot gave up loading the model; stopping: RuntimeError: {MESSAGE}" in done.stderr


def test_local_batch_reports_the_load_error_with_its_traceback(tmp_path: Path) -> None:
    model = _model(tmp_path / "model", BROKEN)
    (tmp_path / "x.jsonl").write_text('{"a": 1}\n')
    with pytest.raises(ProcessStartError) as info:
        run_local_job(
            TransformOptions(), LocalModel(model), input_location=str(tmp_path / "x.jsonl"),
            output_location=str(tmp_path / "out"), container_log=tmp_path / "container.log",
        )  # fmt: skip
    message = str(info.value)
    assert message.startswith("the serving runtime cannot serve: /ping 503 x ")
    _assert_said_once(message)


def test_own_probes_are_not_access_logged_and_others_are(tmp_path: Path) -> None:
    model = _model(tmp_path / "model", HEALTHY)
    log_path = tmp_path / "runtime.log"
    launch = Launch(
        name="runtime",
        command=lambda port: runtime_command(model, port=port, workers=1),
        log_path=log_path,
        stop_grace_s=10,
    )
    with ServerProcess.start(launch) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", "/ping", headers={"User-Agent": "curl/8"})
        assert conn.getresponse().read() and conn.close() is None
    pings = [line for line in log_path.read_text().splitlines() if '"/ping"' in line]
    assert len(pings) == 1, pings  # curl's, not the start's own (User-Agent: READINESS_PROBE_AGENT)
    assert READINESS_PROBE_AGENT not in log_path.read_text()


def test_the_start_limit_is_the_variants_health_check_timeout(tmp_path: Path) -> None:
    from smkit.local.runtime import startup_limit

    (tmp_path / "c.yaml").write_text(CONFIG)
    (unset,) = load_deployment(tmp_path / "c.yaml").variants
    assert startup_limit(unset, None) == (
        120.0,
        "variant 'only' sets no container_startup_health_check_timeout_seconds, so the local default of "
        "120 s applies; set it (60 to 3600) in the config to wait longer",
    )
    (tmp_path / "c.yaml").write_text(CONFIG + "      container_startup_health_check_timeout_seconds: 90\n")
    (variant,) = load_deployment(tmp_path / "c.yaml").variants
    assert startup_limit(variant, None) == (
        90.0,
        "the limit is variant 'only''s container_startup_health_check_timeout_seconds, as on SageMaker; "
        "raise it (up to 3600) in the config",
    )
    assert startup_limit(variant, 5.0)[0] == 5.0


def test_a_start_that_times_out_summarizes_its_pings_and_names_its_limit(tmp_path: Path) -> None:
    # model_fn never returns: /ping stays 503 "still loading" (or unanswered) until the limit.
    slow = _model(tmp_path / "slow", "import time\n\ntime.sleep(600)\n")
    launch = Launch(
        name="runtime",
        command=lambda port: runtime_command(slow, port=port, workers=1),
        discard_output=True,
        timeout_s=1,
        limit="raise X",
        stop_grace_s=10,
    )
    with pytest.raises(ProcessStartError) as info:
        ServerProcess.start(launch)
    assert info.value.args[0].startswith("runtime was not ready within 1 s (/ping ")
    assert "; raise X; see its output above" in info.value.args[0]


def test_a_components_start_limit_is_its_own_health_check_timeout() -> None:
    from smkit.local.components import ComponentEndpointRuntime, create_runtime
    from smkit.local.runtime import LocalSettings

    config = Path(__file__).resolve().parents[2] / "config" / "inference-components.yaml"
    runtime = create_runtime(load_deployment(config), settings=LocalSettings(model_envs=False))
    assert isinstance(runtime, ComponentEndpointRuntime)
    tabular, iris = runtime.component("tabular").process, runtime.component("iris").process
    assert (tabular.startup_timeout_s, iris.startup_timeout_s) == (300.0, 120.0)
    assert tabular.startup_limit == (
        "the limit is inference component 'tabular''s container_startup_health_check_timeout_seconds, as on "
        "SageMaker; raise it (up to 3600) in the config"
    )
    assert iris.startup_limit.startswith("inference component 'iris' sets no container_startup_health_check")
    assert tabular.stop_grace_s == 30.0  # SageMaker's SIGTERM-to-SIGKILL interval


def test_a_container_that_exits_while_serving_is_named_and_the_gateway_keeps_serving(
    tmp_path: Path, client_error
) -> None:
    model = _model(tmp_path / "model", HEALTHY)
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as archive:
        archive.add(model / "code", arcname="code")
    (tmp_path / "healthy.yaml").write_text(CONFIG)
    with LocalEndpoint(tmp_path / "healthy.yaml", root=tmp_path, python=sys.executable) as endpoint:
        runtime = endpoint.client()

        def call() -> dict:
            return runtime.invoke_endpoint(
                EndpointName=endpoint.name, ContentType="application/json", Body=b"1"
            )

        assert call()["Body"].read() == b'"ok"'
        (variant,) = endpoint.runtime.variants
        (process,) = variant.processes
        assert process._server is not None
        stop_group(
            process._server.process, grace_s=0
        )  # the container dies under the endpoint (SIGKILL at once)
        for _ in range(2):  # the same answer each time: the gateway does not fall over
            client_error(
                call,
                "ServiceUnavailable",
                "Container primary of variant only is not running; restart the local",
            )
        assert endpoint.serving
