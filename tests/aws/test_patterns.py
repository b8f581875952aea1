"""Each format AWS's API models hold is the model's pattern (botocore, installed with the kit); the others
behave as the format they cite on real names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import botocore
import pytest

from smkit.aws import patterns
from smkit.aws.service_models import member, shape


def _model_pattern(service: str, structure: str, name: str | None) -> str:
    if name is None:
        return str(shape(service, structure).metadata["pattern"])
    found = member(service, structure, name).pattern
    assert found is not None, f"{service} {structure}.{name} has no pattern"
    return found


def _anchored(pattern: str) -> str:
    return pattern if pattern.startswith("^") else f"^{pattern}$"


@pytest.mark.parametrize("name", sorted(patterns.FROM_MODELS))
def test_pattern_is_the_models(name: str) -> None:
    ours = getattr(patterns, name)
    for read in patterns.FROM_MODELS[name]:
        assert ours == _anchored(_model_pattern(*read)), f"{name}: {ours!r} but the model says {read}"


SAMPLES = ["a", "a-b", "a--b", "-a", "a-", "A9", "x" * 63, "x" * 64, "a_b", "a.b", "9" * 62 + "-z", ""]


def test_component_name_is_the_models_pattern_and_length() -> None:
    model = re.compile(
        _anchored(_model_pattern("sagemaker", "CreateInferenceComponentInput", "InferenceComponentName"))
    )
    limit = member("sagemaker", "CreateInferenceComponentInput", "InferenceComponentName").max
    assert limit is not None
    ours = re.compile(patterns.COMPONENT_NAME)
    for sample in SAMPLES:
        assert bool(ours.match(sample)) == bool(model.match(sample) and len(sample) <= limit), sample


def test_codecommit_repository_is_the_models_pattern_and_length() -> None:
    read = member("codecommit", "GetRepositoryInput", "repositoryName")
    model = re.compile(_anchored(str(read.pattern)))
    assert read.max is not None
    ours = re.compile(patterns.CODECOMMIT_REPOSITORY)
    for sample in ["smkit", "my.repo-1", "a" * 100, "a" * 101, "a/b", ""]:
        assert bool(ours.match(sample)) == bool(model.match(sample) and 1 <= len(sample) <= read.max), sample


def test_reservation_arn_narrows_the_models_pattern() -> None:
    model = _model_pattern("sagemaker", "ProductionVariantCapacityReservationConfig", "MlReservationArn")
    assert _anchored(model).replace("/.*$", r"/\S+$") == patterns.ML_RESERVATION_ARN


def test_every_region_botocore_knows_is_a_region() -> None:
    endpoints = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text("utf-8"))
    regions = [r for partition in endpoints["partitions"] for r in partition["regions"]]
    assert len(regions) > 30
    assert [r for r in regions if not re.match(patterns.REGION, r)] == []
    for bad in ["us-east", "US-EAST-1", "us_east_1", "useast1", "us-east-1a"]:
        assert not re.match(patterns.REGION, bad), bad


def test_metrics_path_samples() -> None:
    ours = re.compile(patterns.METRICS_PATH)
    assert ours.match("/metrics") and ours.match("/server/metrics")
    for bad in ["/", "metrics", "/a/../b", "/a b"]:
        assert not ours.match(bad), bad
