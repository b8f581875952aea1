"""``model.containers[].batching``: typed dynamic-batching settings that become the container's
``SAGEMAKER_TS_BATCH_SIZE`` / ``SAGEMAKER_TS_MAX_BATCH_DELAY``, the same on SageMaker and locally."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from config_harness import CONFIG_DIR, raw

from smkit.config import ConfigError, parse_config
from smkit.config.resolved import resolve
from smkit.hosting.env import ServingEnv


def _with_batching(batching: dict[str, Any], **environment: str) -> dict[str, Any]:
    data = copy.deepcopy(raw("realtime.yaml"))
    container = data["model"]["containers"][0]
    container["batching"] = batching
    container.setdefault("environment", {}).update(environment)
    return data


def test_batching_becomes_the_container_environment_the_runtime_reads() -> None:
    cfg = parse_config(_with_batching({"max_batch_size": 16, "max_batch_delay_ms": 5}))
    environment = resolve(cfg, CONFIG_DIR).containers[0].environment
    assert environment["SAGEMAKER_TS_BATCH_SIZE"] == "16"
    assert environment["SAGEMAKER_TS_MAX_BATCH_DELAY"] == "5"
    served = ServingEnv.from_environ(environment)
    assert (served.batch_size, served.max_batch_delay_ms, served.batching) == (16, 5.0, True)


def test_without_batching_the_environment_has_no_batching_variables() -> None:
    environment = resolve(parse_config(raw("realtime.yaml")), CONFIG_DIR).containers[0].environment
    assert "SAGEMAKER_TS_BATCH_SIZE" not in environment
    assert not ServingEnv.from_environ(environment).batching


@pytest.mark.parametrize(
    ("data", "path", "fix"),
    [
        (
            _with_batching({"max_batch_size": 0}),
            "model.containers[0].batching.max_batch_size",
            "greater than or equal to 1",
        ),
        (
            _with_batching({"max_batch_size": 8, "max_batch_delay_ms": 61000}),
            "model.containers[0].batching.max_batch_delay_ms",
            "over the invocation timeout of 60 s (SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS); use at most 60000",
        ),
        (
            _with_batching(
                {"max_batch_size": 8, "max_batch_delay_ms": 1500}, SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS="1"
            ),
            "model.containers[0].batching.max_batch_delay_ms",
            "over the invocation timeout of 1 s",
        ),
        (
            _with_batching({"max_batch_size": 8}, SAGEMAKER_TS_BATCH_SIZE="4"),
            "model.containers[0].environment.SAGEMAKER_TS_BATCH_SIZE",
            "set by model.containers[0].batching too; keep one of them",
        ),
    ],
    ids=["size-0", "delay-over-default-timeout", "delay-over-timeout", "both-forms"],
)
def test_bad_batching_is_refused_naming_the_field(data: dict[str, Any], path: str, fix: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="config/realtime.yaml")
    matching = [str(i) for i in caught.value.issues if i.path == path]
    assert matching, str(caught.value)
    assert any(fix in m for m in matching), str(caught.value)
