"""Inference-component and shadow-variant configs: every rejection names the path, the value and the fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from config_harness import CONFIG_DIR, raw

from smkit.config import ConfigError, load_config, parse_config
from smkit.config.component_rules import instance_size

Mutation = Callable[[dict[str, Any]], None]
IC = "inference-components.yaml"
SHADOW = "realtime-shadow.yaml"


def _ic(data: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = data["endpoint"]["inference_components"]
    return spec


def _component(i: int, **changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        _ic(data)["components"][i].update(changes)

    return mutate


def _compute(i: int, **changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        _ic(data)["components"][i]["compute"].update(changes)

    return mutate


def _scaling(i: int, **changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        _ic(data)["components"][i]["autoscaling"].update(changes)

    return mutate


def _endpoint(**changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["endpoint"].update(changes)

    return mutate


def _remove_autoscaling(data: dict[str, Any]) -> None:
    del _ic(data)["components"][1]["autoscaling"]


def _second_variant(data: dict[str, Any]) -> None:
    data["endpoint"]["variants"].append(dict(data["endpoint"]["variants"][0], name="second"))


def _rolling(**changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        _ic(data).setdefault("rolling_update", {"batch_copies": 1}).update(changes)

    return mutate


def _shadow(**changes: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data["endpoint"]["shadow_variants"][0].update(changes)

    return mutate


def _no_capture(data: dict[str, Any]) -> None:
    del data["endpoint"]["data_capture"]


# (case, base file, mutation, YAML path in the message, words of the value and fix in the message)
INVALID: list[tuple[str, str, Mutation, str, str]] = [
    (
        "copies-zero-at-creation",
        IC,
        _component(0, copies=0),
        "components[0].copies",
        "greater than or equal to 1",
    ),
    (
        "copies-above-max",
        IC,
        _component(0, copies=5),
        "endpoint.inference_components.components[0].copies: 5",
        "between min_copies (0) and max_copies (4)",
    ),
    (
        "memory-below-api-min",
        IC,
        _compute(0, min_memory_mb=64),
        "compute.min_memory_mb",
        "greater than or equal to 128",
    ),
    (
        "memory-above-instance",
        IC,
        _compute(0, min_memory_mb=20000, max_memory_mb=20000),
        "components[0].compute.min_memory_mb: 20000",
        "one copy must fit on one ml.m5.xlarge (16384 MiB)",
    ),
    (
        "cores-above-instance",
        IC,
        _compute(1, cpu_cores=8),
        "components[1].compute.cpu_cores: 8",
        "ml.m5.xlarge (4 vCPUs)",
    ),
    (
        "gpu-on-cpu-instance",
        IC,
        _compute(1, accelerators=1),
        "components[1].compute.accelerators: 1",
        "pick a GPU instance type such as ml.g5.xlarge",
    ),
    (
        "max-below-min-memory",
        IC,
        _compute(0, max_memory_mb=512),
        "max_memory_mb: 512",
        "must be >= min_memory_mb (1024)",
    ),
    ("bad-component-name", IC, _component(0, name="-tabular"), "components[0].name: '-tabular'", "hyphens"),
    (
        "unknown-container",
        IC,
        _component(1, container="nope"),
        "components[1].container: 'nope'",
        "no such entry in model.containers; use one of: iris, tabular",
    ),
    (
        "container-twice",
        IC,
        _component(1, container="tabular"),
        "components[].container: 'tabular'",
        "each container backs one component",
    ),
    (
        "instances-to-zero-with-fixed-copies",
        IC,
        _remove_autoscaling,
        "instance_scaling.min_instances: 0",
        "give iris autoscaling with min_copies: 0",
    ),
    (
        "max-copies-below-min",
        IC,
        _scaling(
            0,
            min_copies=3,
            max_copies=2,
        ),
        "max_copies: 2",
        "must be >= min_copies (3)",
    ),
    ("two-variants", IC, _second_variant, "endpoint.variants: '2 variants'", "exactly one variant"),
    (
        "canary-on-components",
        IC,
        _endpoint(deployment={"strategy": "canary", "canary_size_percent": 10}),
        "endpoint.deployment.strategy: 'canary'",
        "use all-at-once here",
    ),
    (
        "capture-on-components",
        IC,
        _endpoint(data_capture={"enabled": True}),
        "endpoint.data_capture.enabled: True",
        "does not configure data capture for inference-component endpoints",
    ),
    (
        "both-batch-sizes",
        IC,
        _rolling(batch_percent=50),
        "rolling_update: 'batch size'",
        "set exactly one of batch_copies (COPY_COUNT) or batch_percent",
    ),
    (
        "shadow-without-capture",
        SHADOW,
        _no_capture,
        "endpoint.data_capture: None",
        "enable data capture with capture: [input, output]",
    ),
    (
        "shadow-unknown-container",
        SHADOW,
        _shadow(container="nope"),
        "shadow_variants[0].container: 'nope'",
        "use one of: candidate, tabular",
    ),
    (
        "shadow-sampling-over-100",
        SHADOW,
        _shadow(sampling_percentage=150),
        "shadow_variants[0].sampling_percentage: 150",
        "less than or equal to 100",
    ),
    (
        "shadow-same-name",
        SHADOW,
        _shadow(name="production"),
        "shadow_variants[0].name: 'production'",
        "must differ",
    ),
]


@pytest.mark.parametrize(
    ("base", "mutate", "path", "fix"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_component_and_shadow_configs(base: str, mutate: Mutation, path: str, fix: str) -> None:
    data = raw(base)
    mutate(data)
    with pytest.raises(ConfigError) as info:
        parse_config(data, source=base)
    message = str(info.value)
    assert path in message and fix in message, message


def test_components_section_only_on_its_type_and_shadows_only_on_realtime() -> None:
    data = raw("realtime.yaml")
    data["endpoint"]["inference_components"] = raw(IC)["endpoint"]["inference_components"]
    with pytest.raises(
        ConfigError, match="endpoint.inference_components: 'set': only endpoint.type: inference-comp"
    ):
        parse_config(data)
    data = raw("async.yaml")
    data["endpoint"]["shadow_variants"] = raw(SHADOW)["endpoint"]["shadow_variants"]
    with pytest.raises(ConfigError, match=r"endpoint.shadow_variants: \['shadow'\]: only realtime endpoints"):
        parse_config(data)
    data = raw(IC)
    del data["endpoint"]["inference_components"]
    with pytest.raises(ConfigError, match="endpoint.inference_components: None: inference-components needs"):
        parse_config(data)


def test_shipped_configs_parse() -> None:
    ic = load_config(CONFIG_DIR / IC)
    assert ic.endpoint.inference_components is not None
    assert [c.name for c in ic.endpoint.inference_components.components] == ["tabular", "iris"]
    shadow = load_config(CONFIG_DIR / SHADOW)
    assert shadow.endpoint.shadow_variants[0].sampling_percentage == 50


def test_instance_sizes_of_the_table() -> None:
    assert instance_size("ml.m5.xlarge") == (4, 16384, 0)
    assert instance_size("ml.c5.9xlarge") == (36, 73728, 0)
    assert instance_size("ml.g5.12xlarge") == (48, 196608, 4)
    assert instance_size("ml.inf2.xlarge") == (4, 16384, 1)
    assert instance_size("ml.m5.3xlarge") is None  # no such size: not checked
