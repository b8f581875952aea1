"""Serverless endpoint: 4 MB limit, MaxConcurrency -> ThrottlingException, cold start on first use and
after idle (config/serverless.yaml without provisioned concurrency, MaxConcurrency 1)."""

from __future__ import annotations

import threading

import pytest
import yaml
from waiting import wait_until

from smkit.config import parse_config
from smkit.local import LocalEndpoint

IDLE_SECONDS = 1.0


@pytest.fixture(scope="module")
def endpoint(repo):
    data = yaml.safe_load((repo / "config" / "serverless.yaml").read_text())
    serverless = data["endpoint"]["serverless"]
    serverless.pop("provisioned_concurrency")
    serverless.pop("autoscaling")
    serverless["max_concurrency"] = 1
    config = parse_config(data, source="serverless without provisioned concurrency", base_dir=repo / "config")
    with LocalEndpoint(config, root=repo, serverless_idle_seconds=IDLE_SECONDS) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def test_first_call_cold_starts_and_a_second_concurrent_call_is_throttled(
    endpoint, runtime, sample, client_error
):
    variant = endpoint.runtime.variant("main")
    assert not variant.warm, "no provisioned concurrency: nothing runs before the first call"
    answers = []
    first = threading.Thread(
        target=lambda: answers.append(
            runtime.invoke_endpoint(
                EndpointName=endpoint.name, ContentType="text/csv", Body=sample("tabular", "request.csv")
            )
        )
    )
    first.start()
    wait_until(
        lambda: variant.in_flight == 1, timeout=30.0, interval=0.01
    )  # the first call is waiting for its cold start
    err = client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"1"),
        "ThrottlingException",
        "MaxConcurrency=1",
    )
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    first.join()
    assert answers[0]["InvokedProductionVariant"] == "main"
    assert variant.cold_starts == 1 and variant.warm


def test_idle_variant_goes_cold_and_the_next_call_starts_it_again(endpoint, runtime, sample):
    variant = endpoint.runtime.variant("main")
    if not variant.warm:
        runtime.invoke_endpoint(
            EndpointName=endpoint.name, ContentType="text/csv", Body=sample("tabular", "request.csv")
        )
    starts = variant.cold_starts
    wait_until(
        lambda: not variant.warm, timeout=30.0, interval=0.01
    )  # stopped after IDLE_SECONDS without traffic
    resp = runtime.invoke_endpoint(
        EndpointName=endpoint.name, ContentType="application/json", Body=sample("tabular", "request.json")
    )
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert variant.cold_starts == starts + 1


def test_payload_over_4_mb_is_rejected(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(
            EndpointName=endpoint.name, ContentType="text/csv", Body=b"1" * (4 * 1024 * 1024 + 1)
        ),
        "413",
        "HTTP content length exceeded 4194304 bytes.",
    )
