"""Multi-model endpoint (config/multi-model.yaml): TargetModel loads an archive of the local prefix on first
use; missing, unknown and escaping TargetModel values are ValidationErrors."""

from __future__ import annotations

import json

import httpx
import pytest
import yaml

from smkit.config import parse_config
from smkit.local import LocalEndpoint
from smkit.local.target_model import model_name_for


@pytest.fixture(scope="module")
def endpoint(repo):
    # One worker: each worker loads every model it serves, and the count is not what this file tests
    # (tests/stacks/test_local_parity.py is).
    with LocalEndpoint(repo / "config" / "multi-model.yaml", root=repo, workers=1) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


@pytest.mark.parametrize("model", ["tabular", "iris"])
def test_target_model_is_loaded_on_first_use_and_answers(endpoint, runtime, sample, model):
    router = endpoint.runtime.variant("main").router
    loads = router.loads
    expected = json.loads(sample(model, "expected.json"))
    for _ in range(2):
        resp = runtime.invoke_endpoint(
            EndpointName=endpoint.name,
            TargetModel=f"{model}.tar.gz",
            ContentType="application/json",
            Accept="application/json",
            Body=sample(model, "request.json"),
        )
        assert resp["InvokedProductionVariant"] == "main"
        answer = json.loads(resp["Body"].read())
        if isinstance(expected["predictions"][0], str):
            assert answer["predictions"] == expected["predictions"]
        else:
            assert answer["predictions"] == pytest.approx(expected["predictions"], rel=expected["rtol"])
    assert router.loads == loads + 1, "loaded once, then served from the container's cache"
    assert f"{model}.tar.gz" in router.loaded


def test_missing_target_model_is_a_validation_error(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"1"),
        "ValidationError",
        "is a multi-model endpoint: set TargetModel",
    )


def test_response_stream_is_refused_for_multi_model(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint_with_response_stream(
            EndpointName=endpoint.name, ContentType="text/csv", Body=b"1"
        ),
        "ValidationError",
        "multi-model endpoints cannot stream",
    )


def test_unknown_target_model_is_a_validation_error(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, TargetModel="nope.tar.gz", Body=b"1"),
        "ValidationError",
        "Failed to download model data",
    )


def test_target_model_cannot_leave_the_prefix(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, TargetModel="../model.tar.gz", Body=b"1"),
        "ValidationError",
        "must be a key relative to the model prefix",
    )


def test_model_error_names_the_model(endpoint, runtime, client_error):
    err = client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, TargetModel="tabular.tar.gz", ContentType="text/csv", Body=b"a,b"
        ),
        "ModelError",
        "Received client error (400) from model with message",
    )
    assert err.response["OriginalStatusCode"] == 400


def test_model_unloaded_by_the_container_is_loaded_again(endpoint, runtime, sample):
    # The container unloads models on its own (LRU under memory pressure); the next call must reload it.
    router = endpoint.runtime.variant("main").router
    runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        TargetModel="iris.tar.gz",
        ContentType="text/csv",
        Body=sample("iris", "request.csv"),
    )
    name = model_name_for("iris.tar.gz")
    assert httpx.delete(f"http://127.0.0.1:{router.process.port}/models/{name}").status_code == 200
    loads = router.loads
    resp = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        TargetModel="iris.tar.gz",
        ContentType="text/csv",
        Body=sample("iris", "request.csv"),
    )
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert router.loads == loads + 1


def test_cache_disabled_unloads_after_every_call(repo, sample):
    data = yaml.safe_load((repo / "config" / "multi-model.yaml").read_text())
    data["model"]["containers"][0]["model_data"]["cache"] = "disabled"
    with LocalEndpoint(parse_config(data, base_dir=repo / "config"), root=repo, workers=1) as endpoint:
        router = endpoint.runtime.variant("main").router
        for _ in range(2):
            resp = endpoint.client().invoke_endpoint(
                EndpointName=endpoint.name,
                TargetModel="iris.tar.gz",
                ContentType="application/json",
                Body=sample("iris", "request.json"),
            )
            assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
            assert router.loaded == []
            models = httpx.get(f"http://127.0.0.1:{router.process.port}/models").json()["models"]
            assert models == []
        assert router.loads == 2, "ModelCacheSetting=Disabled: loaded again for every call"


def test_a_multi_model_endpoint_has_no_openai_route(endpoint, no_openai_route):
    no_openai_route(endpoint, "multi-model endpoints cannot stream")  # the route sends no TargetModel
