"""Multi-container endpoints: the serial featurizer -> regressor pipeline end to end
(config/multi-container.yaml) and direct invocation by TargetContainerHostname
(config/multi-container-direct.yaml)."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from smkit.local import LocalEndpoint


@pytest.fixture(scope="module")
def pipeline(repo):
    with LocalEndpoint(repo / "config" / "multi-container.yaml", root=repo) as ep:
        yield ep


@pytest.fixture(scope="module")
def direct(repo):
    with LocalEndpoint(repo / "config" / "multi-container-direct.yaml", root=repo) as ep:
        yield ep


def test_pipeline_csv_in_json_out(pipeline, sample):
    # The client's Content-Type (text/csv) reaches the featurizer, its CSV answer (its
    # SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT) feeds the regressor, and the client's Accept applies to the last.
    expected = json.loads(sample("featurizer", "expected.json"))
    resp = pipeline.client().invoke_endpoint(
        EndpointName=pipeline.name,
        ContentType="text/csv",
        Accept="application/json",
        Body=sample("featurizer", "request.csv"),
    )
    assert resp["ContentType"] == "application/json"
    assert resp["InvokedProductionVariant"] == "main"
    predictions = json.loads(resp["Body"].read())["predictions"]
    assert predictions == pytest.approx(expected["predictions"], rel=expected["rtol"])


def test_pipeline_accept_applies_to_the_last_container(pipeline, sample):
    expected = json.loads(sample("featurizer", "expected.json"))
    resp = pipeline.client().invoke_endpoint(
        EndpointName=pipeline.name,
        ContentType="text/csv",
        Accept="text/csv",
        Body=sample("featurizer", "request.csv"),
    )
    assert resp["ContentType"].startswith("text/csv")
    values = [float(line) for line in resp["Body"].read().decode().split()]
    assert values == pytest.approx(expected["predictions"], rel=expected["rtol"])


def test_pipeline_error_names_the_failing_container(pipeline, client_error):
    err = client_error(
        lambda: pipeline.client().invoke_endpoint(
            EndpointName=pipeline.name, ContentType="text/csv", Body=b"1,2"
        ),
        "ModelError",
        "from featurizer with message",
    )
    assert err.response["OriginalStatusCode"] == 400


FIRST = """
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    return "1,2", "text/csv; charset=utf-8"
"""

STRICT = """
class Unsupported(Exception):
    status_code = 415


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    if content_type != "text/csv; charset=utf-8":  # a strict input check, as users write them
        raise Unsupported(f"expected text/csv; charset=utf-8, got {content_type!r}")
    return "got " + content_type, "text/plain"
"""


def test_pipeline_forwards_the_previous_content_type_verbatim(tmp_path):
    """SageMaker passes a container's Content-Type on unchanged, charset included."""
    import asyncio

    from smkit.local.containers import ContainerLaunch, ContainerProcess
    from smkit.local.routers import Scope, SerialPipeline
    from smkit.local.runtime_api import Invocation

    specs = []
    for name, source in (("first", FIRST), ("strict", STRICT)):
        (tmp_path / name / "code").mkdir(parents=True)
        (tmp_path / name / "code" / "inference.py").write_text(source)
        specs.append(ContainerLaunch(name=name, model_dir=tmp_path / name))

    async def run():
        processes = [ContainerProcess(spec, label=spec.name, workers=1) for spec in specs]
        try:
            for process in processes:
                await process.start()
            pipeline = SerialPipeline(processes, endpoint="charset")
            return await pipeline.invoke(
                Invocation(body=b"x", content_type="application/octet-stream"),
                Scope(endpoint="charset", variant="main", region="us-east-1"),
            )
        finally:
            for process in processes:
                await process.stop()

    reply = asyncio.run(run())
    assert reply.status == 200 and reply.body == b"got text/csv; charset=utf-8"


@pytest.mark.parametrize(("host", "model"), [("tabular", "tabular"), ("iris", "iris")])
def test_direct_routes_by_target_container_hostname(direct, sample, host, model):
    expected = json.loads(sample(model, "expected.json"))
    resp = direct.client().invoke_endpoint(
        EndpointName=direct.name,
        TargetContainerHostname=host,
        ContentType="application/x-npy",
        Accept="application/json",
        Body=sample(model, "request.npy"),
    )
    answer = json.loads(resp["Body"].read())["predictions"]
    if isinstance(expected["predictions"][0], str):
        assert answer == expected["predictions"]
    else:
        assert answer == pytest.approx(expected["predictions"], rel=expected["rtol"])


def test_direct_without_hostname_is_a_validation_error(direct, client_error):
    client_error(
        lambda: direct.client().invoke_endpoint(EndpointName=direct.name, ContentType="text/csv", Body=b"1"),
        "ValidationError",
        "uses Direct inference mode: set TargetContainerHostname",
    )


def test_direct_with_unknown_hostname_is_a_validation_error(direct, client_error):
    client_error(
        lambda: direct.client().invoke_endpoint(
            EndpointName=direct.name, TargetContainerHostname="xgboost", ContentType="text/csv", Body=b"1"
        ),
        "ValidationError",
        "TargetContainerHostname 'xgboost' is not a container of endpoint tabular-direct; use one of: iris, tabular.",
    )


def test_a_stalled_container_does_not_block_the_others(direct, sample):
    # Freeze the tabular container (SIGSTOP its process group): its caller waits, iris still answers.
    tabular = direct.runtime.variant("main").router.by_hostname["tabular"]
    runtime = direct.client()
    answers = []
    os.killpg(tabular.pid, signal.SIGSTOP)
    try:
        stalled = threading.Thread(
            target=lambda: answers.append(
                runtime.invoke_endpoint(
                    EndpointName=direct.name,
                    TargetContainerHostname="tabular",
                    ContentType="text/csv",
                    Body=sample("tabular", "request.csv"),
                )
            )
        )
        stalled.start()
        resp = runtime.invoke_endpoint(
            EndpointName=direct.name,
            TargetContainerHostname="iris",
            ContentType="text/csv",
            Body=sample("iris", "request.csv"),
        )
        assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert not answers, "the tabular call cannot have finished while its container is stopped"
    finally:
        os.killpg(tabular.pid, signal.SIGCONT)
    stalled.join(timeout=30)
    assert answers and answers[0]["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_a_direct_multi_container_endpoint_has_no_openai_route(direct, no_openai_route):
    no_openai_route(direct, "set TargetContainerHostname")  # the route sends no TargetContainerHostname
