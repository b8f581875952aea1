"""Rolling deployments, inference AMIs, capacity reservations, gated model data, data capture content types
and adapter components: what AWS rejects is rejected at load time, naming the field, the value and the fix."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from config_harness import CONFIG_DIR, raw

from smkit.config import ConfigError, parse_config

Data = dict[str, Any]


def _rejected(data: Data, path: str, *words: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test")
    lines = [str(i) for i in caught.value.issues if i.path == path]
    assert lines, f"no issue at {path}: {caught.value}"
    for word in words:
        assert any(word in line for line in lines), (word, lines)
    return lines[0]


def _single_variant(instances: int = 4) -> Data:
    data = raw("realtime.yaml")
    variant = data["endpoint"]["variants"][0]
    variant.pop("autoscaling")
    variant["initial_instance_count"] = instances
    data["endpoint"]["variants"] = [variant]
    data["endpoint"]["deployment"] = {
        "strategy": "rolling",
        "batch_percent": 25,
        "wait_interval_seconds": 120,
    }
    return data


def _deployment(**fields: Any) -> Data:
    data = _single_variant()
    data["endpoint"]["deployment"].update(fields)
    return {k: v for k, v in data.items()}


def test_a_rolling_deployment_of_one_variant_loads() -> None:
    d = parse_config(_single_variant(), source="test").endpoint.deployment
    assert (d.strategy, d.batch_percent, d.batch_instances) == ("rolling", 25, None)


def _without(data: Data, key: str) -> Data:
    data["endpoint"]["deployment"].pop(key, None)
    return data


ROLLING_CASES: list[tuple[str, Callable[[], Data], str, tuple[str, ...]]] = [
    ("no batch", lambda: _without(_single_variant(), "batch_percent"), "endpoint.deployment.batch_percent",
     ("needs a batch size", "batch_percent: 25")),
    ("batch 60%", lambda: _deployment(batch_percent=60), "endpoint.deployment.batch_percent", ("5-50%",)),
    ("batch 2%", lambda: _deployment(batch_percent=2), "endpoint.deployment.batch_percent", ("5-50%",)),
    ("both sizes", lambda: _deployment(batch_instances=1), "endpoint.deployment.batch_percent", ("not both",)),
    ("3 of 4 instances", lambda: _without(_deployment(batch_instances=3), "batch_percent"),
     "endpoint.deployment.batch_instances", ("at most 50%", "i.e. 2")),
    ("rollback 80%", lambda: _deployment(rollback_batch_percent=80),
     "endpoint.deployment.rollback_batch_percent", ("5-50%",)),
    ("termination wait", lambda: _deployment(termination_wait_seconds=60),
     "endpoint.deployment.termination_wait_seconds", ("no termination wait",)),
    ("timeout shorter than the batches", lambda: _deployment(max_execution_timeout_seconds=600, wait_interval_seconds=600),
     "endpoint.deployment.max_execution_timeout_seconds", ("4 batches", "2400 s")),
    ("canary size", lambda: _deployment(canary_size_percent=10), "endpoint.deployment.canary_size_percent",
     ("only to strategy: canary",)),
]  # fmt: skip


@pytest.mark.parametrize(
    "mutate,path,words", [c[1:] for c in ROLLING_CASES], ids=[c[0] for c in ROLLING_CASES]
)
def test_rolling_limits(mutate: Callable[[], Data], path: str, words: tuple[str, ...]) -> None:
    _rejected(mutate(), path, *words)


def test_rolling_takes_one_variant_and_no_inf1() -> None:
    data = raw("realtime.yaml")
    data["endpoint"]["deployment"] = {"strategy": "rolling", "batch_percent": 50}
    _rejected(data, "endpoint.deployment.strategy", "exactly one variant, this one has 2", "blue/green")
    data = _single_variant(2)
    data["endpoint"]["variants"][0]["instance_type"] = "ml.inf1.xlarge"
    _rejected(data, "endpoint.variants[0].instance_type", "Inf1", "ml.inf2")


def test_rolling_is_not_for_serverless_or_components() -> None:
    data = raw("serverless.yaml")
    data["endpoint"]["deployment"] = {"strategy": "rolling", "batch_percent": 50}
    _rejected(data, "endpoint.deployment.strategy", "not for serverless", "all-at-once")
    data = raw("inference-components.yaml")
    data["endpoint"]["deployment"] = {"strategy": "rolling", "batch_percent": 50}
    _rejected(data, "endpoint.deployment.strategy", "rolling_update")


def test_rolling_fields_on_blue_green_and_its_timeout_range() -> None:
    data = raw("realtime.yaml")
    data["endpoint"]["deployment"]["batch_percent"] = 20
    _rejected(data, "endpoint.deployment.batch_percent", "only to strategy: rolling, not canary")
    # BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds is 600-28800, as the rolling policy's
    # (botocore's model and the CloudFormation schema): 20000 s is AWS's to take.
    data = raw("realtime.yaml")
    data["endpoint"]["deployment"]["max_execution_timeout_seconds"] = 20000
    assert parse_config(data, source="test").endpoint.deployment.max_execution_timeout_seconds == 20000
    data["endpoint"]["deployment"]["max_execution_timeout_seconds"] = 28801
    _rejected(data, "endpoint.deployment.max_execution_timeout_seconds", "less than or equal to 28800")
    ok = _deployment(max_execution_timeout_seconds=20000)
    assert parse_config(ok, source="test").endpoint.deployment.max_execution_timeout_seconds == 20000


def test_component_rolling_batch_percent_range() -> None:
    data = raw("capacity.yaml")
    data["endpoint"]["inference_components"]["rolling_update"] = {"batch_percent": 75}
    _rejected(data, "endpoint.inference_components.rolling_update.batch_percent", "5-50%", "copies")


COMPONENT_BATCH = "The value must be between 5% to 50% of the copy count of the inference component."


@pytest.mark.parametrize(
    "config,rolling,copies,refused",
    [
        # llm.yaml's base component runs 0 or 1 copy: no batch of copies is 5-50% of that.
        ("llm.yaml", {"batch_copies": 1}, None, True),
        ("llm.yaml", {"batch_percent": 50}, None, True),
        # inference-components.yaml's components scale to zero.
        ("inference-components.yaml", {"batch_copies": 1}, None, True),
        # capacity.yaml runs two fixed copies: one is 50%, two are 100%.
        ("capacity.yaml", {"batch_copies": 1}, None, False),
        ("capacity.yaml", {"batch_copies": 2}, None, True),
        ("capacity.yaml", {"batch_percent": 50}, None, False),
        ("capacity.yaml", {"batch_percent": 25}, None, True),  # half a copy
        ("capacity.yaml", {"batch_copies": 1}, 30, True),  # one copy is 3% of 30
        ("capacity.yaml", {"batch_copies": 3}, 30, False),
    ],
)  # fmt: skip
def test_component_rolling_batch_against_the_copy_count(
    config: str, rolling: Data, copies: int | None, refused: bool
) -> None:
    data = raw(config)
    spec = data["endpoint"]["inference_components"]
    spec["rolling_update"] = rolling
    if copies is not None:
        spec["components"][0]["copies"] = copies
    field = "batch_copies" if "batch_copies" in rolling else "batch_percent"
    if refused:
        line = _rejected(data, f"endpoint.inference_components.rolling_update.{field}", COMPONENT_BATCH)
        assert "remove rolling_update" in line
    else:
        assert parse_config(data, source="test").endpoint.inference_components is not None


def test_shipped_component_configs_roll_only_what_they_can() -> None:
    """llm.yaml and inference-components.yaml scale to zero: no rolling policy (the reason in a comment);
    capacity.yaml rolls its two copies one at a time."""
    for name in ("llm.yaml", "inference-components.yaml"):
        assert "rolling_update" not in raw(name)["endpoint"]["inference_components"]
        assert "No rolling_update: a rolling batch must be 5-50%" in (CONFIG_DIR / name).read_text()
    assert raw("capacity.yaml")["endpoint"]["inference_components"]["rolling_update"]["batch_copies"] == 1


def test_inference_ami_must_fit_the_instance() -> None:
    data = _single_variant(1)
    data["endpoint"]["deployment"] = {"strategy": "all-at-once"}
    data["endpoint"]["variants"][0]["inference_ami_version"] = "al2-ami-sagemaker-inference-gpu-3-1"
    _rejected(data, "endpoint.variants[0].inference_ami_version", "GPU", "ml.m5.large")
    data["endpoint"]["variants"][0]["inference_ami_version"] = "al2-ami-sagemaker-inference-gpu-9"
    _rejected(data, "endpoint.variants[0].inference_ami_version", "al2-ami-sagemaker-inference-gpu-3-1")
    llm = raw("llm.yaml")
    llm["endpoint"]["variants"][0]["inference_ami_version"] = "al2-ami-sagemaker-inference-neuron-2"
    _rejected(llm, "endpoint.variants[0].inference_ami_version", "Inferentia/Trainium", "ml.g5.2xlarge")


def test_capacity_reservation_arn_and_region() -> None:
    llm = raw("llm.yaml")
    variant = llm["endpoint"]["variants"][0]
    variant["capacity_reservation"] = {
        "ml_reservation_arn": "arn:aws:sagemaker:eu-west-1:123456789012:training-plan/p5"
    }
    _rejected(llm, "endpoint.variants[0].capacity_reservation.ml_reservation_arn", "eu-west-1", "us-east-1")
    variant["capacity_reservation"] = {"ml_reservation_arn": "reservation-1"}
    _rejected(llm, "endpoint.variants[0].capacity_reservation.ml_reservation_arn", "arn:aws:sagemaker:REGION")
    variant["capacity_reservation"] = {
        "ml_reservation_arn": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5"
    }
    assert parse_config(llm, source="test").endpoint.variants[0].capacity_reservation is not None


def test_accept_eula_only_for_an_uncompressed_s3_prefix() -> None:
    data = raw("realtime.yaml")
    data["model"]["containers"][0]["model_data"]["accept_eula"] = True
    _rejected(data, "model.containers[0].model_data.accept_eula", "uncompressed model data in S3")
    llm = raw("llm.yaml")
    llm["model"]["containers"][0]["model_data"]["accept_eula"] = True
    assert parse_config(llm, source="test").model.containers[0].model_data.accept_eula


def test_capture_content_types_default_and_pattern() -> None:
    capture = parse_config(raw("realtime.yaml"), source="test").endpoint.data_capture
    assert capture is not None
    assert (capture.csv_content_types, capture.json_content_types) == (("text/csv",), ("application/json",))
    data = raw("realtime.yaml")
    data["endpoint"]["data_capture"]["json_content_types"] = ["application/json; charset=utf-8"]
    _rejected(data, "endpoint.data_capture.json_content_types[0]", "a media type such as text/csv")
    data["endpoint"]["data_capture"]["json_content_types"] = [f"application/x{i}" for i in range(11)]
    _rejected(data, "endpoint.data_capture.json_content_types", "at most 10")


def _components(llm: Data) -> list[Data]:
    components: list[Data] = llm["endpoint"]["inference_components"]["components"]
    return components


ADAPTER = "endpoint.inference_components.components[1]"


def test_an_adapter_names_a_base_component_and_its_weights() -> None:
    llm = raw("llm.yaml")
    _components(llm)[1]["base_component"] = "nope"
    _rejected(copy.deepcopy(llm), f"{ADAPTER}.base_component", "one of qwen")
    _components(llm)[1]["base_component"] = "qwen"
    _components(llm)[1]["artifact_url"] = "https://example.com/adapter"
    _rejected(copy.deepcopy(llm), f"{ADAPTER}.artifact_url", "s3://BUCKET/KEY.tar.gz")
    _components(llm)[1].pop("artifact_url")
    _rejected(llm, f"{ADAPTER}.artifact_url", "in S3 as one archive", "artifact_path: FOLDER")


def test_an_adapters_weights_are_one_tar_gz_archive() -> None:
    """AWS's sentence on InferenceComponentContainerSpecification.ArtifactUrl, quoted in the refusal."""
    llm = raw("llm.yaml")
    assert _components(llm)[1]["artifact_url"].endswith(".tar.gz")
    for prefix in ("s3://my-llm-weights/adapters/support/", "s3://my-llm-weights/adapters/support.zip"):
        _components(llm)[1]["artifact_url"] = prefix
        line = _rejected(
            copy.deepcopy(llm),
            f"{ADAPTER}.artifact_url",
            "This path must point to a single gzip compressed tar archive (.tar.gz suffix).",
            "tar -czf",
        )
        assert prefix in line


def test_placement_states_the_availability_zone_balance() -> None:
    """CloudFormation requires AvailabilityZoneBalance with PlacementStrategy and AWS's MaxImbalance defaults
    to 0: placement alone would ask for zones kept equal without saying so."""
    llm = raw("llm.yaml")
    assert _components(llm)[0]["scheduling"] == {"placement": "binpack", "max_az_imbalance": 100}
    _components(llm)[0]["scheduling"] = {"placement": "binpack"}
    _rejected(
        llm,
        "endpoint.inference_components.components[0].scheduling.max_az_imbalance",
        "placement: binpack",
        "default MaxImbalance is 0",
        "max_az_imbalance: 0 keeps zones equal",
    )


@pytest.mark.parametrize(
    "field,value",
    [("copies", 2), ("container", "qwen"), ("data_cache", True), ("autoscaling", {"min_copies": 0, "max_copies": 1, "target_invocations_per_copy": 1})],
)  # fmt: skip
def test_an_adapter_shares_its_base_components_settings(field: str, value: Any) -> None:
    llm = raw("llm.yaml")
    _components(llm)[1][field] = value
    _rejected(llm, f"{ADAPTER}.{field}", "remove", "'qwen'")


def test_a_base_component_needs_container_and_compute_and_no_artifact() -> None:
    llm = raw("llm.yaml")
    del _components(llm)[0]["compute"]
    _components(llm)[0]["artifact_url"] = "s3://b/x/"
    _rejected(copy.deepcopy(llm), "endpoint.inference_components.components[0].compute", "needs compute")
    _rejected(llm, "endpoint.inference_components.components[0].artifact_url", "only adapter components")


def test_scheduling_placement_values() -> None:
    llm = raw("llm.yaml")
    _components(llm)[0]["scheduling"] = {"placement": "random"}
    _rejected(
        llm, "endpoint.inference_components.components[0].scheduling.placement", "'spread' or 'binpack'"
    )
