"""Realtime endpoint (config/realtime.yaml): weighted variants, TargetVariant, the service's errors."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter

import pytest
import yaml

from smkit.config import parse_config
from smkit.config.resolved import resolve
from smkit.local import LocalEndpoint
from smkit.local.components import create_runtime
from smkit.local.variants import choose_variant

REQUEST = "request.csv"


@pytest.fixture(scope="module")
def endpoint(repo, tmp_path_factory):
    with LocalEndpoint(
        repo / "config" / "realtime.yaml",
        root=repo,
        seed=7,
        log_dir=tmp_path_factory.mktemp("logs"),
        data_capture_dir=tmp_path_factory.mktemp("capture"),
    ) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def test_both_variants_serve_by_weight_and_report_the_invoked_variant(endpoint, runtime, sample):
    body = sample("tabular", REQUEST)
    expected = json.loads(sample("tabular", "expected.json"))
    seen = Counter()
    for _ in range(40):
        resp = runtime.invoke_endpoint(
            EndpointName=endpoint.name, ContentType="text/csv", Accept="application/json", Body=body
        )
        seen[resp["InvokedProductionVariant"]] += 1
        assert resp["ContentType"] == "application/json"
        predictions = json.loads(resp["Body"].read())["predictions"]
        assert predictions == pytest.approx(expected["predictions"], rel=expected["rtol"])
    # Weights 0.9 / 0.1 with a fixed seed: both variants get traffic, general-purpose most of it.
    assert set(seen) == {"general-purpose", "compute-optimized"}
    assert seen["general-purpose"] > seen["compute-optimized"]


def test_a_variant_of_weight_0_takes_only_the_calls_that_target_it(repo):
    # InitialVariantWeight is 0 or more (botocore's ProductionVariant); the share is the weight over the sum.
    data = yaml.safe_load((repo / "config" / "realtime.yaml").read_text(encoding="utf-8"))
    data["endpoint"]["variants"][1]["initial_weight"] = 0
    config = parse_config(data, source="realtime.yaml", base_dir=repo / "config")
    runtime = create_runtime(resolve(config, repo / "config"))
    rng = random.Random(7)
    chosen = {choose_variant(runtime.variants, None, rng, endpoint=runtime.name).name for _ in range(200)}
    assert chosen == {"general-purpose"}
    targeted = choose_variant(runtime.variants, "compute-optimized", rng, endpoint=runtime.name)
    assert targeted.name == "compute-optimized"


def test_every_answer_and_error_carries_its_own_request_id_in_the_services_form(
    endpoint, runtime, sample, client_error
):
    ids = []
    for _ in range(3):
        resp = runtime.invoke_endpoint(
            EndpointName=endpoint.name, ContentType="text/csv", Body=sample("tabular", REQUEST)
        )
        ids.append(resp["ResponseMetadata"]["RequestId"])
    err = client_error(
        lambda: runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"1"),
        "ValidationError",
        "no-such",
    )
    ids.append(err.response["ResponseMetadata"]["RequestId"])
    # A random UUID in its text form, as the service sends (and botocore reads from x-amzn-RequestId).
    assert [str(uuid.UUID(i)) for i in ids] == ids
    assert {uuid.UUID(i).version for i in ids} == {4}
    assert {uuid.UUID(i).variant for i in ids} == {uuid.RFC_4122}
    assert len(set(ids)) == len(ids)


def test_target_variant_overrides_the_weights(endpoint, runtime, sample):
    for _ in range(3):
        resp = runtime.invoke_endpoint(
            EndpointName=endpoint.name,
            ContentType="text/csv",
            Body=sample("tabular", REQUEST),
            TargetVariant="compute-optimized",
        )
        assert resp["InvokedProductionVariant"] == "compute-optimized"


def test_response_content_type_follows_accept(endpoint, runtime, sample):
    resp = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        ContentType="application/json",
        Accept="text/csv",
        Body=sample("tabular", "request.json"),
    )
    assert resp["ContentType"].startswith("text/csv")
    assert len(resp["Body"].read().decode().splitlines()) == 10


def test_unknown_variant_is_a_validation_error(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, Body=b"1", TargetVariant="purple"),
        "ValidationError",
        "TargetVariant 'purple' is not a production variant of endpoint tabular-realtime; use one of: general-purpose, compute-optimized",
    )


def test_unknown_endpoint_is_a_validation_error(runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName="no-such-endpoint", Body=b"1"),
        "ValidationError",
        "Endpoint no-such-endpoint of account 123456789012 not found.",
    )


def test_multi_model_and_direct_headers_are_rejected(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, Body=b"1", TargetModel="tabular.tar.gz"),
        "ValidationError",
        "is not a multi-model endpoint",
    )
    client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, Body=b"1", TargetContainerHostname="tabular"
        ),
        "ValidationError",
        "does not use Direct inference mode",
    )


def test_handler_error_is_a_model_error_with_the_original_status_and_message(endpoint, runtime, client_error):
    err = client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"1,2,x"),
        "ModelError",
        "Received client error (400) from primary with message",
    )
    assert err.response["OriginalStatusCode"] == 400
    assert "could not convert string to float" in err.response["OriginalMessage"]
    assert err.response["LogStreamArn"].startswith(
        "arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/Endpoints/tabular-realtime:log-stream:"
    )
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 424


def test_oversize_payload_gets_the_front_end_413(endpoint, runtime, client_error):
    err = client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, ContentType="text/csv", Body=b"1" * 6_291_457
        ),
        "413",
        "HTTP content length exceeded 6291456 bytes.",
    )
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 413


def test_async_call_to_a_realtime_endpoint_is_rejected(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint_async(EndpointName=endpoint.name, InputLocation="s3://bucket/key"),
        "ValidationError",
        "is not an asynchronous endpoint",
    )


def test_gateway_keeps_serving_after_bad_requests(endpoint, runtime, sample):
    # Runs after the error tests above (file order): the same gateway still answers.
    resp = runtime.invoke_endpoint(
        EndpointName=endpoint.name, ContentType="text/csv", Body=sample("tabular", REQUEST)
    )
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert all(v.warm for v in endpoint.runtime.variants)


def test_data_capture_writes_the_sampled_share_in_sagemakers_format(endpoint, runtime, sample):
    # config/realtime.yaml captures input and output of 20% of the calls: 60 calls capture 2..30.
    # Other tests of this module invoke the same endpoint (in any order, on the same capture files):
    # this test's records are the ones carrying its own InferenceIds.
    capture = endpoint.runtime.capture
    sent = {f"capture-share-{i}" for i in range(60)}
    for inference_id in sorted(sent):
        runtime.invoke_endpoint(
            EndpointName=endpoint.name,
            ContentType="text/csv",
            Body=sample("tabular", REQUEST),
            InferenceId=inference_id,
        )
    files = sorted(capture.root.rglob("capture.jsonl"))
    assert files, "no capture file written"
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(records) == capture.captured
    mine = [r for r in records if r["eventMetadata"].get("inferenceId") in sent]
    assert 2 <= len(mine) <= 30
    assert len({r["eventMetadata"]["inferenceId"] for r in mine}) == len(mine)
    assert {f.relative_to(capture.root).parts[0] for f in files} <= {"general-purpose", "compute-optimized"}
    for record in mine:
        assert record["captureData"]["endpointInput"]["encoding"] == "CSV"
        assert record["captureData"]["endpointInput"]["mode"] == "INPUT"
        assert record["captureData"]["endpointOutput"]["observedContentType"] == "application/json"
        assert "predictions" in json.loads(record["captureData"]["endpointOutput"]["data"])
        assert set(record["eventMetadata"]) >= {"eventId", "inferenceTime", "inferenceId"}


def test_each_containers_metrics_are_served_as_sagemaker_scrapes_them(endpoint, runtime, sample):
    """GET /endpoints/NAME/metrics: every container's /metrics, labelled with its variant and container."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    def invocations() -> dict[str, float]:
        url = f"{endpoint.url}/endpoints/{endpoint.name}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
            text = response.read().decode()
        counts: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == "smkit_requests_total" and s.labels["route"] == "/invocations":
                    assert s.labels["container"]  # every sample says where it came from
                    counts[s.labels["variant"]] = counts.get(s.labels["variant"], 0.0) + s.value
        return counts

    before = invocations()
    seen = Counter()
    for _ in range(6):
        resp = runtime.invoke_endpoint(
            EndpointName=endpoint.name,
            ContentType="text/csv",
            Body=sample("tabular", REQUEST),
            TargetVariant="compute-optimized",
        )
        seen[resp["InvokedProductionVariant"]] += 1
    after = invocations()
    assert seen == {"compute-optimized": 6}
    assert after.get("compute-optimized", 0) - before.get("compute-optimized", 0) == 6
    assert after.get("general-purpose", 0) == before.get("general-purpose", 0)
