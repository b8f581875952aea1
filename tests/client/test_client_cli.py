"""``smkit invoke`` and ``smkit smoke-test`` against a local endpoint, through boto3 exactly as against a
real endpoint; plus the smoke-test plan for every config. The async client runs in
tests/local/test_local_async.py, against moto's S3."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.client import smoke
from smkit.config import load_deployment
from smkit.local import LocalEndpoint


@pytest.fixture(scope="module")
def endpoint(repo):
    # serverless.yaml: one warm container (provisioned concurrency), the cheapest endpoint to start.
    with LocalEndpoint(repo / "config" / "serverless.yaml", root=repo) as ep:
        yield ep


def run(*args: str, stdin: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)


def test_invoke_csv_file_prints_the_deserialized_json_answer(endpoint, repo):
    result = run(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--content-type",
        "text/csv",
        "--accept",
        "application/json",
        "--data",
        f"@{repo / 'model_code/tabular/samples/request.csv'}",
    )
    assert result.exit_code == 0, result.output
    expected = json.loads((repo / "model_code/tabular/samples/expected.json").read_text())
    answer = json.loads(result.stdout)
    assert answer["predictions"] == pytest.approx(expected["predictions"], rel=expected["rtol"])
    assert "InvokedProductionVariant:" in result.stderr


def test_invoke_npy_literal_with_npy_accept_uses_the_response_type(endpoint, repo):
    row = (repo / "model_code/tabular/samples/request.csv").read_text().splitlines()[0]
    result = run(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--variant",
        "main",
        "--content-type",
        "application/x-npy",
        "--accept",
        "application/x-npy",
        "--data",
        f"[[{row}]]",
    )
    assert result.exit_code == 0, result.output
    assert "InvokedProductionVariant: main  Content-Type: application/x-npy" in result.stderr
    assert len(json.loads(result.stdout)) == 1


def test_invoke_from_stdin_with_raw_output(endpoint, repo, tmp_path):
    out = tmp_path / "answer.csv"
    result = run(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--content-type",
        "application/json",
        "--accept",
        "text/csv",
        "--data",
        "-",
        "--raw",
        "--output",
        str(out),
        stdin=(repo / "model_code/tabular/samples/request.json").read_bytes(),
    )
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 10
    assert result.stdout.encode() == out.read_bytes()


def test_invoke_model_error_exits_1_with_the_service_message(endpoint):
    result = run(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--content-type",
        "text/csv",
        "--data",
        "1,2,x",
    )
    assert result.exit_code == 1
    assert "ModelError: Received client error (400) from primary" in result.stderr
    assert "OriginalStatusCode 400" in result.stderr


def test_invoke_rejects_two_targets():
    result = run("invoke", "--endpoint", "e", "--variant", "a", "--target-model", "m", "--data", "1")
    assert result.exit_code == 2
    assert "--variant and --target-model are mutually exclusive" in result.stderr


def test_smoke_test_passes_against_the_local_endpoint(endpoint, repo):
    result = run(
        "smoke-test",
        "--config",
        str(repo / "config/serverless.yaml"),
        "--endpoint-url",
        endpoint.url,
        "--root",
        str(repo),
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count("PASS") == 3
    assert "smoke-test of tabular-serverless: 3 of 3 cases passed" in result.stdout


def test_smoke_test_fails_for_an_unknown_endpoint(endpoint, repo):
    result = run(
        "smoke-test",
        "--config",
        str(repo / "config/serverless.yaml"),
        "--endpoint-url",
        endpoint.url,
        "--endpoint",
        "missing",
        "--root",
        str(repo),
    )
    assert result.exit_code == 1
    assert "ValidationError: Endpoint missing of account 123456789012 not found." in result.stdout


@pytest.mark.parametrize(
    ("config", "targets"),
    [
        ("multi-model.yaml", {"TargetModel": {"iris.tar.gz", "tabular.tar.gz"}}),
        ("multi-container-direct.yaml", {"TargetContainerHostname": {"iris", "tabular"}}),
        ("multi-container.yaml", {}),
        ("serverless.yaml", {}),
    ],
)
def test_smoke_plan_follows_the_config(repo, config, targets):
    cases = smoke.plan(load_deployment(repo / "config" / config), repo)
    assert {c.content_type for c in cases} == {"text/csv", "application/json", "application/x-npy"}
    found: dict[str, set[str]] = {}
    for case in cases:
        for key, value in case.target.parameters().items():
            found.setdefault(key, set()).add(value)
    assert found == targets


def test_smoke_plan_names_missing_samples(repo, tmp_path):
    with pytest.raises(smoke.SmokeError, match="model_code/tabular/samples/expected.json does not exist"):
        smoke.plan(load_deployment(repo / "config" / "realtime.yaml"), tmp_path)


INVOKE_MODULES = """
import json, sys
from smkit.cli import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = {"sagemaker", "boto3", "numpy", "pandas", "pydantic", "aws_cdk"}
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & heavy)), file=sys.stderr)
"""


def test_a_json_invocation_imports_neither_the_sdk_nor_boto3_nor_numpy(endpoint, repo):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", INVOKE_MODULES, "invoke", "--endpoint", endpoint.name, "--endpoint-url",
         endpoint.url, "--content-type", "application/json", "--data",
         f"@{repo / 'model_code/tabular/samples/request.json'}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["predictions"]
    assert done.stderr.strip().splitlines()[-1] == "[]"
