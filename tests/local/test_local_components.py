"""Inference components locally (config/inference-components.yaml): InferenceComponentName picks the
component's own serving-runtime process; missing, unknown and scaled-to-zero components get the
service's ValidationError."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from waiting import wait_until

from smkit.cli import main
from smkit.cli.local_endpoint import _describe
from smkit.client import smoke
from smkit.local import LocalEndpoint
from smkit.local.components import MISSING, NO_CAPACITY

CONFIG = "inference-components.yaml"


@pytest.fixture(scope="module")
def endpoint(repo, tmp_path_factory):
    with LocalEndpoint(repo / "config" / CONFIG, root=repo, log_dir=tmp_path_factory.mktemp("logs")) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def test_each_component_answers_from_its_own_model(endpoint, runtime, sample):
    components = endpoint.runtime.components
    before = (components["tabular"].invocations, components["iris"].invocations)
    tabular = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName="tabular",
        ContentType="text/csv",
        Accept="application/json",
        Body=sample("tabular", "request.csv"),
    )
    expected = json.loads(sample("tabular", "expected.json"))
    assert json.loads(tabular["Body"].read())["predictions"] == pytest.approx(
        expected["predictions"], rel=expected["rtol"]
    )
    assert tabular["InvokedProductionVariant"] == "main"
    iris = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName="iris",
        ContentType="text/csv",
        Accept="application/json",
        Body=sample("iris", "request.csv"),
    )
    assert (
        json.loads(iris["Body"].read())["predictions"]
        == json.loads(sample("iris", "expected.json"))["predictions"]
    )
    assert components["tabular"].process.pid != components["iris"].process.pid
    assert (components["tabular"].invocations, components["iris"].invocations) == (
        before[0] + 1,
        before[1] + 1,
    )


def test_missing_component_name_is_the_services_validation_error(endpoint, runtime, client_error):
    err = client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"1"),
        "ValidationError",
        MISSING,
    )
    assert err.response["Error"]["Message"].startswith("Inference Component Name header is required")
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_unknown_component_is_a_validation_error_naming_the_known_ones(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, InferenceComponentName="nope", ContentType="text/csv", Body=b"1"
        ),
        "ValidationError",
        "Inference component nope of endpoint tabular-components not found; InferenceComponentName must be "
        "one of: iris, tabular.",
    )


def test_component_name_on_an_endpoint_without_components_is_refused(repo, runtime, client_error, sample):
    with LocalEndpoint(repo / "config" / "serverless.yaml", root=repo) as plain:
        client_error(
            lambda: plain.client().invoke_endpoint(
                EndpointName=plain.name,
                InferenceComponentName="tabular",
                ContentType="text/csv",
                Body=sample("tabular", "request.csv"),
            ),
            "ValidationError",
            "Inference Component Name header is not allowed for endpoints to which you dont plan to deploy "
            "inference components. Please remove the Inference Component Name header and try again.",
        )


def test_handler_errors_are_model_errors_and_the_endpoint_keeps_serving(
    endpoint, runtime, client_error, sample
):
    err = client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, InferenceComponentName="iris", ContentType="text/csv", Body=b"1,2,x"
        ),
        "ModelError",
        "Received client error (400) from primary",
    )
    assert err.response["OriginalStatusCode"] == 400
    answer = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName="iris",
        ContentType="text/csv",
        Body=sample("iris", "request.csv"),
    )
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_a_component_scaled_to_zero_answers_no_capacity_until_its_copy_starts(repo, sample, client_error):
    with LocalEndpoint(repo / "config" / CONFIG, root=repo, component_idle_seconds=0.5) as ep:
        runtime = ep.client()
        tabular = ep.runtime.component("tabular")
        assert tabular.scales_to_zero
        wait_until(
            lambda: tabular.scale_ins == 1, timeout=60.0, interval=0.01
        )  # created with one copy, idle: scaled in to zero
        assert tabular.copies == 0
        tabular.idle_seconds = 300.0  # the copy started below stays for the rest of the test
        call = lambda: runtime.invoke_endpoint(  # noqa: E731
            EndpointName=ep.name,
            InferenceComponentName="tabular",
            ContentType="text/csv",
            Body=sample("tabular", "request.csv"),
        )
        err = client_error(call, "ValidationError", NO_CAPACITY)
        assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert tabular.scale_from_zero_starts == 1  # the failed request started a copy
        wait_until(lambda: tabular.warm, timeout=60.0, interval=0.01)
        assert call()["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_smoke_test_plan_calls_every_component_with_its_samples(endpoint, runtime, repo):
    cases = smoke.plan(endpoint.deployment, repo)
    assert {case.target.component for case in cases} == {"tabular", "iris"}
    results = smoke.run(runtime, endpoint.name, cases)
    assert results and all(r.ok for r in results), [(r.case.label, r.detail) for r in results if not r.ok]
    deployed = smoke.plan(
        endpoint.deployment, repo, component_names={"tabular": "Stack-ComponentTabular-1A2B"}
    )
    assert {case.target.parameters()["InferenceComponentName"] for case in deployed} == {
        "Stack-ComponentTabular-1A2B",
        "iris",
    }


def test_cli_invoke_and_smoke_test_name_the_component(endpoint, repo):
    config = str(repo / "config" / CONFIG)
    result = CliRunner().invoke(
        main,
        [
            "invoke",
            "--endpoint",
            endpoint.name,
            "--endpoint-url",
            endpoint.url,
            "--inference-component",
            "iris",
            "--content-type",
            "text/csv",
            "--data",
            f"@{repo / 'model_code' / 'iris' / 'samples' / 'request.csv'}",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "setosa" in result.stdout
    result = CliRunner().invoke(main, ["smoke-test", "--config", config, "--endpoint-url", endpoint.url])
    assert result.exit_code == 0, result.stdout
    assert "smoke-test of tabular-components: " in result.stdout
    result = CliRunner().invoke(main, ["smoke-test", "--config", config, "--component-names", "tabular"])
    assert result.exit_code == 2
    assert "--component-names: 'tabular': expected name=deployed-name pairs" in result.stderr


def test_local_endpoint_banner_lists_the_components(endpoint):
    banner = _describe(endpoint)
    assert "local endpoint tabular-components (inference-components)" in banner
    assert "inference component tabular: main-tabular pid " in banner
    assert "inference component iris: main-iris pid " in banner and "(scales to zero)" in banner


@pytest.mark.parametrize(
    ("session_id", "stream", "pattern"),
    [
        ("bad id!", False, "Member must satisfy regular expression pattern"),
        ("NEW_SESSION", True, "a session is created with invoke_endpoint, not with a response stream"),
        ("a" * 257, False, "Member must have length less than or equal to 256"),
    ],
)
def test_a_session_id_the_api_refuses_is_a_validation_error_on_components_too(
    endpoint, runtime, client_error, session_id, stream, pattern
):
    """The same check as on a model's variants (tests/local/test_local_sessions.py), before the container."""
    before = endpoint.runtime.components["iris"].invocations
    call = runtime.invoke_endpoint_with_response_stream if stream else runtime.invoke_endpoint
    client_error(
        lambda: call(
            EndpointName=endpoint.name,
            InferenceComponentName="iris",
            ContentType="text/csv",
            Body=b"1,2,3,4",
            SessionId=session_id,
        ),
        "ValidationError",
        pattern,
    )
    assert endpoint.runtime.components["iris"].invocations == before
