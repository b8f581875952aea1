"""Each limit that AWS's API models hold is the model's number (botocore, installed with the kit)."""

from __future__ import annotations

import re

import pytest

from smkit.aws import limits
from smkit.aws.service_models import member, plain, shape


@pytest.mark.parametrize("name", sorted(limits.FROM_MODELS))
def test_limit_is_the_models(name: str) -> None:
    value = getattr(limits, name)
    reads = limits.FROM_MODELS[name]
    read = [getattr(member(service, structure, field), bound) for service, structure, field, bound in reads]
    if isinstance(value, tuple):  # (min, max) read from one member or more, each pair in turn
        pairs = [tuple(read[i : i + len(value)]) for i in range(0, len(read), len(value))]
        assert pairs == [value] * len(pairs), f"{name}: {value} but the model says {pairs}"
    else:
        assert {value} == set(read), f"{name}: {value} but the model says {read}"


def test_environment_keys_and_values() -> None:
    env = shape("sagemaker", "EnvironmentMap")
    assert env.metadata["max"] == limits.MAX_ENV_ENTRIES
    assert env.key.metadata["max"] == env.value.metadata["max"] == limits.MAX_ENV_BYTES


def test_serverless_memory_sizes_span_the_models_range() -> None:
    size = member("sagemaker", "ProductionVariantServerlessConfig", "MemorySizeInMB")
    assert (limits.SERVERLESS_MEMORY_MB[0], limits.SERVERLESS_MEMORY_MB[-1]) == (size.min, size.max)
    # "Valid values are in 1 GB increments: 1024 MB, ..., or 6144 MB." (the member's documentation)
    assert tuple(range(int(size.min), int(size.max) + 1, 1024)) == limits.SERVERLESS_MEMORY_MB
    listed = re.search(r"1 GB increments: ([^.]*)\.", plain(size.documentation))
    assert listed is not None
    assert tuple(int(n) for n in re.findall(r"(\d+) MB", listed.group(1))) == limits.SERVERLESS_MEMORY_MB


def test_metrics_publish_frequencies_are_the_documented_values() -> None:
    """The model has no enum on the integer; its documentation lists the values, read here."""
    frequency = member("sagemaker", "MetricsConfig", "MetricPublishFrequencyInSeconds")
    listed = re.search(r"Valid values: ([\d, ]+)\.", plain(frequency.documentation))
    assert listed is not None
    assert tuple(int(n) for n in listed.group(1).split(",")) == limits.METRICS_PUBLISH_FREQUENCIES_S


def test_the_alarm_period_is_one_cloudwatch_takes() -> None:
    """PutMetricAlarm's Period: "Valid values are 10, 20, 30, and any multiple of 60." (its documentation)."""
    period = member("cloudwatch", "PutMetricAlarmInput", "Period")
    listed = re.search(
        r"Valid values are ([\d, ]+), and any multiple of (\d+)\.", plain(period.documentation)
    )
    assert listed is not None
    exact, multiple = {int(n) for n in listed.group(1).split(",")}, int(listed.group(2))
    assert limits.ALARM_PERIOD_S in exact or limits.ALARM_PERIOD_S % multiple == 0
    assert period.min is not None and period.min <= limits.ALARM_PERIOD_S


def test_defaults_are_the_ones_the_models_documentation_states() -> None:
    timeout = member("sagemaker", "ModelClientConfig", "InvocationsTimeoutInSeconds").documentation
    retries = member("sagemaker", "ModelClientConfig", "InvocationsMaxRetries").documentation
    assert f"The default value is {limits.DEFAULT_INVOCATIONS_TIMEOUT_S}." in timeout
    assert f"The default value is {limits.MAX_INVOCATIONS_RETRIES}." in retries
    transforms = member("sagemaker", "CreateTransformJobRequest", "MaxConcurrentTransforms").documentation
    assert f"the default value is <code>{limits.DEFAULT_MAX_CONCURRENT_TRANSFORMS}</code>" in transforms


def test_content_type_entries() -> None:
    for name in ("CsvContentTypes", "JsonContentTypes"):
        entry = shape("sagemaker", name).member.metadata
        assert entry["max"] == limits.CONTENT_TYPE_MAX_LENGTH, name


def test_limits_stated_in_the_members_documentation() -> None:
    shadows = member("sagemaker", "CreateEndpointConfigInput", "ShadowProductionVariants").documentation
    assert limits.MAX_SHADOW_VARIANTS == 1
    assert (
        "If you use this field, you can only specify one variant for <code>ProductionVariants</code> and one "
        "variant for <code>ShadowProductionVariants</code>." in shadows
    )
    period = member("cloudwatch", "PutMetricAlarmInput", "Period").documentation
    assert (
        f"the total evaluation period can't be longer than one day ({limits.MAX_SUB_HOUR_EVALUATION_S:,} seconds)"
        in period
    )
