"""The config schema: every shipped file loads; every rejection names path, value and the fix."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from smkit.config import ConfigError, DeploymentConfig, load_config, parse_config

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
SHIPPED = sorted(CONFIG_DIR.glob("*.yaml"))


def raw(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CONFIG_DIR / name).read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_load(path: Path) -> None:
    cfg = load_config(path)
    assert isinstance(cfg, DeploymentConfig)
    assert cfg.name


def test_shipped_configs_cover_every_endpoint_type() -> None:
    types = {load_config(p).endpoint.type for p in SHIPPED}
    assert types == {"realtime", "serverless", "multi-model", "multi-container", "async"}
    modes = {load_config(p).model.inference_mode for p in SHIPPED}
    assert {"serial", "direct"} <= modes


def test_config_is_frozen() -> None:
    cfg = load_config(CONFIG_DIR / "realtime.yaml")
    with pytest.raises(ValueError, match="frozen"):
        cfg.endpoint.variants[0].initial_weight = 2.0  # type: ignore[misc]


def test_async_section_uses_yaml_key() -> None:
    cfg = load_config(CONFIG_DIR / "async.yaml")
    assert cfg.endpoint.async_ is not None
    assert cfg.endpoint.async_.failure_prefix == "async/failure"


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """Set a dotted path (list indexes as numbers) in the raw YAML data."""

    def mutate(data: dict[str, Any]) -> None:
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
        node: Any = data
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
        node: Any = data
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        for m in mutations:
            m(data)

    return mutate


# (base file, mutation, YAML path in the message, words of the fix in the message)
INVALID: list[tuple[str, str, Mutation, str, str]] = [
    (
        "unknown-key-typo",
        "realtime.yaml",
        _set("endpoint.variants.0.initial_wieght", 1),
        "endpoint.variants[0].initial_wieght",
        "did you mean 'initial_weight'",
    ),
    (
        "weight-not-positive",
        "realtime.yaml",
        _set("endpoint.variants.0.initial_weight", 0),
        "endpoint.variants[0].initial_weight",
        "greater than 0",
    ),
    (
        "bad-instance-type",
        "realtime.yaml",
        _set("endpoint.variants.0.instance_type", "m5.large"),
        "endpoint.variants[0].instance_type",
        "such as ml.m5.large",
    ),
    (
        "burstable-autoscaling",
        "realtime.yaml",
        _set("endpoint.variants.0.instance_type", "ml.t2.medium"),
        "endpoint.variants[0].instance_type",
        "burstable ml.t* instances cannot autoscale",
    ),
    (
        "initial-above-max",
        "realtime.yaml",
        _set("endpoint.variants.0.initial_instance_count", 9),
        "endpoint.variants[0].initial_instance_count",
        "between autoscaling min_capacity (2) and max_capacity (6)",
    ),
    (
        "min-above-max",
        "realtime.yaml",
        _set("endpoint.variants.0.autoscaling.min_capacity", 7),
        "endpoint.variants[0].autoscaling.max_capacity",
        "must be >= min_capacity (7)",
    ),
    (
        "realtime-scale-to-zero",
        "realtime.yaml",
        _both(_set("endpoint.variants.0.autoscaling.min_capacity", 0)),
        "endpoint.variants[0].autoscaling.min_capacity",
        "only async endpoints can scale to zero",
    ),
    (
        "duplicate-variant",
        "realtime.yaml",
        _set("endpoint.variants.1.name", "blue"),
        "endpoint.variants[].name",
        "must be unique",
    ),
    (
        "canary-without-size",
        "realtime.yaml",
        _delete("endpoint.deployment.canary_size_percent"),
        "endpoint.deployment.canary_size_percent",
        "strategy canary needs canary_size_percent",
    ),
    (
        "linear-step-on-canary",
        "realtime.yaml",
        _set("endpoint.deployment.linear_step_percent", 20),
        "endpoint.deployment.linear_step_percent",
        "applies only to strategy: linear",
    ),
    (
        "unknown-strategy",
        "realtime.yaml",
        _set("endpoint.deployment.strategy", "blue-green"),
        "endpoint.deployment.strategy",
        "'all-at-once', 'canary' or 'linear'",
    ),
    (
        "bad-image-source",
        "realtime.yaml",
        _set("image", {"source": "docker-hub", "uri": "x"}),
        "image",
        "'build', 'ecr', 'dlc'",
    ),
    (
        "ecr-latest-tag",
        "realtime.yaml",
        _set("image", {"source": "ecr", "tag": "latest"}),
        "image.tag",
        "immutable tags",
    ),
    (
        "dlc-bad-uri",
        "realtime.yaml",
        _set("image", {"source": "dlc", "uri": "python:3.11"}),
        "image.uri",
        "ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG",
    ),
    (
        "kms-both",
        "realtime.yaml",
        _set("security.kms", {"create": True, "key_arn": "arn:aws:kms:eu-west-1:123456789012:key/abc"}),
        "security.kms",
        "choose one",
    ),
    ("bad-name", "realtime.yaml", _set("name", "Tabular_RT"), "name", "lowercase letters"),
    (
        "two-containers-realtime",
        "realtime.yaml",
        lambda d: d["model"]["containers"].append(
            {"name": "b", "model_data": {"source": "archive", "path": "b.tar.gz"}}
        ),
        "model.containers",
        "use endpoint.type: multi-container",
    ),
    (
        "serverless-memory",
        "serverless.yaml",
        _set("endpoint.serverless.memory_size_mb", 1500),
        "endpoint.serverless.memory_size_mb",
        "1024, 2048, 3072, 4096, 5120 or 6144",
    ),
    (
        "serverless-concurrency-range",
        "serverless.yaml",
        _set("endpoint.serverless.max_concurrency", 500),
        "endpoint.serverless.max_concurrency",
        "less than or equal to 200",
    ),
    (
        "serverless-provisioned-above-max",
        "serverless.yaml",
        _both(
            _delete("endpoint.serverless.autoscaling"),
            _set("endpoint.serverless.provisioned_concurrency", 30),
        ),
        "endpoint.serverless.provisioned_concurrency",
        "must be <= max_concurrency (20)",
    ),
    (
        "serverless-vpc",
        "serverless.yaml",
        _set("security.vpc", {"subnet_ids": ["subnet-1"], "security_group_ids": ["sg-1"]}),
        "security.vpc",
        "cannot run in a VPC",
    ),
    (
        "serverless-data-capture",
        "serverless.yaml",
        _set("endpoint.data_capture", {"enabled": True}),
        "endpoint.data_capture.enabled",
        "do not support data capture",
    ),
    (
        "serverless-network-isolation",
        "serverless.yaml",
        _set("model.network_isolation", True),
        "model.network_isolation",
        "do not support network isolation",
    ),
    (
        "serverless-with-variants",
        "serverless.yaml",
        _set("endpoint.variants", [{"name": "a", "instance_type": "ml.m5.large"}]),
        "endpoint.variants",
        "exactly one variant",
    ),
    (
        "serverless-missing-section",
        "serverless.yaml",
        _delete("endpoint.serverless"),
        "endpoint.serverless",
        "needs a serverless section",
    ),
    (
        "mme-archive-source",
        "multi-model.yaml",
        _set("model.containers.0.model_data", {"source": "archive", "path": "build/model.tar.gz"}),
        "model.containers[0].model_data.source",
        "needs source: multi-model",
    ),
    (
        "cache-outside-mme",
        "realtime.yaml",
        _set("model.containers.0.model_data.cache", "disabled"),
        "model.containers[0].model_data.cache",
        "only to source: multi-model",
    ),
    (
        "pipeline-one-container",
        "multi-container.yaml",
        lambda d: d["model"]["containers"].pop(),
        "model.containers",
        "2 to 15 containers",
    ),
    (
        "pipeline-no-mode",
        "multi-container.yaml",
        _delete("model.inference_mode"),
        "model.inference_mode",
        "serial (pipeline) or direct",
    ),
    (
        "pipeline-too-many",
        "multi-container.yaml",
        lambda d: d["model"]["containers"].extend(
            [{"name": f"c{i}", "model_data": {"source": "archive", "path": "x.tar.gz"}} for i in range(14)]
        ),
        "model.containers",
        "at most 15 items",
    ),
    (
        "direct-missing-hostname",
        "multi-container-direct.yaml",
        _delete("model.containers.1.hostname"),
        "model.containers[1].hostname",
        "set e.g. hostname: iris",
    ),
    (
        "async-missing-section",
        "async.yaml",
        _delete("endpoint.async"),
        "endpoint.async",
        "needs an async section",
    ),
    (
        "async-on-realtime",
        "realtime.yaml",
        _set("endpoint.async", {"notifications": True}),
        "endpoint.async",
        "only async endpoints take it",
    ),
    (
        "backlog-target-on-realtime",
        "realtime.yaml",
        _both(
            _delete("endpoint.variants.0.autoscaling.target_invocations_per_instance"),
            _set("endpoint.variants.0.autoscaling.target_backlog_per_instance", 3),
        ),
        "endpoint.variants[0].autoscaling.target_backlog_per_instance",
        "for async endpoints",
    ),
    (
        "backlog-alarm-on-realtime",
        "realtime.yaml",
        _set("monitoring.backlog_age_seconds", 600),
        "monitoring.backlog_age_seconds",
        "only to async endpoints",
    ),
    (
        "async-concurrency-range",
        "async.yaml",
        _set("endpoint.async.max_concurrent_invocations_per_instance", 0),
        "endpoint.async.max_concurrent_invocations_per_instance",
        "greater than or equal to 1",
    ),
    (
        "env-too-long",
        "realtime.yaml",
        _set("model.containers.0.environment.BIG", "x" * 2000),
        "model.containers[0].environment.BIG",
        "<= 1024 bytes",
    ),
    ("missing-endpoint", "realtime.yaml", _delete("endpoint"), "endpoint", "required key is missing"),
]


@pytest.mark.parametrize(
    ("base", "mutate", "path", "fix"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_config_names_path_value_and_fix(base: str, mutate: Mutation, path: str, fix: str) -> None:
    data = copy.deepcopy(raw(base))
    mutate(data)
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data, source=f"config/{base}")
    message = str(excinfo.value)
    assert f"config/{base} is not a valid deployment config" in message
    matching = [str(i) for i in excinfo.value.issues if i.path == path]
    assert matching, f"no issue at {path}: {message}"
    assert any(fix in m for m in matching), message


def test_all_problems_reported_together() -> None:
    data = raw("realtime.yaml")
    data["endpoint"]["variants"][0]["instance_type"] = "ml.t3.large"
    data["endpoint"]["deployment"]["strategy"] = "linear"
    data["monitoring"]["backlog_age_seconds"] = 600
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data)
    paths = {i.path for i in excinfo.value.issues}
    assert {
        "endpoint.variants[0].instance_type",
        "endpoint.deployment.linear_step_percent",
        "endpoint.deployment.canary_size_percent",
        "monitoring.backlog_age_seconds",
    } <= paths
    assert "(4 problems)" in str(excinfo.value) or "(5 problems)" in str(excinfo.value)


def test_missing_file_lists_known_configs(tmp_path: Path) -> None:
    (tmp_path / "realtime.yaml").write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"no such file; files in .*: realtime.yaml"):
        load_config(tmp_path / "realtme.yaml")


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nendpoint: [unclosed\n")
    with pytest.raises(ConfigError, match=r"line \d+, column \d+.*not valid YAML"):
        load_config(bad)


def test_empty_document(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="an empty document.*expected a mapping"):
        load_config(empty)


def test_build_image_dockerfile_is_relative_to_the_context() -> None:
    for path in SHIPPED:
        image = load_config(path).image
        assert image.source == "build"
        assert (CONFIG_DIR.parent / image.context / image.dockerfile).is_file(), path.name
    data = raw("realtime.yaml")
    data["image"] = {"source": "build"}
    image = parse_config(data).image
    assert image.source == "build" and (image.context, image.dockerfile) == ("container", "Dockerfile")
