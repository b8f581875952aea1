"""Invalid configs: each rejection names the YAML path, the bad value and the fix."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from config_harness import raw

from smkit.config import ConfigError, parse_config

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
        "weight-negative",
        "realtime.yaml",
        _set("endpoint.variants.0.initial_weight", -1),
        "endpoint.variants[0].initial_weight",
        "greater than or equal to 0",
    ),
    (
        "weights-all-zero",
        "realtime.yaml",
        _both(_set("endpoint.variants.0.initial_weight", 0), _set("endpoint.variants.1.initial_weight", 0)),
        "endpoint.variants",
        "these sum to 0: give at least one variant a weight above 0",
    ),
    (
        "alarm-actions-over-five",
        "realtime.yaml",
        _set(
            "monitoring.subscriptions",
            [{"type": "sns", "topic_arn": f"arn:aws:sns:us-east-1:123456789012:ops-{i}"} for i in range(5)],
        ),
        "monitoring.subscriptions",
        "6 actions, but an alarm takes at most 5 AlarmActions: forward to at most 4 topics",
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
        "autoscaling-without-max",
        "realtime.yaml",
        _delete("endpoint.variants.0.autoscaling.max_capacity"),
        "endpoint.variants[0].autoscaling.max_capacity",
        "required key is missing",
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
        _set("endpoint.variants.1.name", "general-purpose"),
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
        "'all-at-once', 'canary', 'linear' or 'rolling'",
    ),
    (
        "bad-image-source",
        "realtime.yaml",
        _set("image", {"source": "docker-hub", "uri": "x"}),
        "image",
        "'build', 'ecr', 'dlc'",
    ),
    (
        "image-requirements-twice",
        "multi-model.yaml",
        _set("image.build_args", {"IMAGE_REQUIREMENTS": "other.txt"}),
        "image.build_args.IMAGE_REQUIREMENTS",
        "image.requirements sets this build argument; keep one of the two",
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
        "use one of 1024, 2048, 3072, 4096, 5120, 6144",
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
    (
        "env-timeout-not-a-number",
        "realtime.yaml",
        _set("model.containers.0.environment.SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS", "soon"),
        "model.containers[0].environment.SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS",
        "is not a number; use e.g. SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS=60",
    ),
    (
        "env-workers-not-whole",
        "realtime.yaml",
        _set("model.containers.0.environment.SAGEMAKER_MODEL_SERVER_WORKERS", "1.5"),
        "model.containers[0].environment.SAGEMAKER_MODEL_SERVER_WORKERS",
        "is not a whole number",
    ),
    (
        "env-worker-concurrency-too-high",
        "realtime.yaml",
        _set("model.containers.0.environment.SMKIT_WORKER_CONCURRENCY", "5000"),
        "model.containers[0].environment.SMKIT_WORKER_CONCURRENCY",
        "is more than 1024 requests per worker; use at most 1024",
    ),
    ("missing-endpoint", "realtime.yaml", _delete("endpoint"), "endpoint", "required key is missing"),
    (
        "gpu-instance-with-cpu-image",
        "realtime.yaml",
        _set("endpoint.variants.1.instance_type", "ml.g5.xlarge"),
        "endpoint.variants[1].instance_type",
        "the kit's image is CPU-only; use a CPU instance type such as ml.m5.xlarge",
    ),
    (
        "misspelled-instance-type",
        "realtime.yaml",
        _set("endpoint.variants.0.instance_type", "ml.m5.larg"),
        "endpoint.variants[0].instance_type",
        "not an instance type SageMaker hosts endpoints on; did you mean 'ml.m5.large'?",
    ),
    (
        "unknown-shadow-instance-type",
        "realtime-shadow.yaml",
        _set("endpoint.shadow_variants.0.instance_type", "ml.m5.huge"),
        "endpoint.shadow_variants[0].instance_type",
        "ProductionVariantInstanceType",
    ),
    (
        "component-variant-download-timeout",
        "llm.yaml",
        _set("endpoint.variants.0.model_data_download_timeout_seconds", 1200),
        "endpoint.variants[0].model_data_download_timeout_seconds",
        "set model_data_download_timeout_seconds on each component",
    ),
    (
        "component-variant-startup-timeout",
        "inference-components.yaml",
        _set("endpoint.variants.0.container_startup_health_check_timeout_seconds", 600),
        "endpoint.variants[0].container_startup_health_check_timeout_seconds",
        "runs no model, so SageMaker would ignore it",
    ),
    (
        "volume-on-instance-storage",
        "realtime.yaml",
        _both(
            _set("endpoint.variants.0.instance_type", "ml.m5d.large"),
            _set("endpoint.variants.0.volume_size_gb", 100),
        ),
        "endpoint.variants[0].volume_size_gb",
        '"Currently only Amazon EBS gp2 storage volumes are supported"); remove volume_size_gb',
    ),
    (
        "shadow-volume-on-instance-storage",
        "realtime-shadow.yaml",
        _both(
            _set("endpoint.shadow_variants.0.instance_type", "ml.c5d.large"),
            _set("endpoint.shadow_variants.0.volume_size_gb", 30),
        ),
        "endpoint.shadow_variants[0].volume_size_gb",
        "API_ProductionVariant.html",
    ),
    (
        "component-pool-volume-on-instance-storage",
        "llm.yaml",
        _set("endpoint.variants.0.volume_size_gb", 100),
        "endpoint.variants[0].volume_size_gb",
        "ml.g5.2xlarge has local NVMe instance storage",
    ),
    (
        "pools-and-instance-type",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_type", "ml.m5.xlarge"),
        "endpoint.variants[0]",
        "instance_type='ml.m5.xlarge' and instance_pools are both set; instance pools replace the variant's "
        "InstanceType: remove instance_type",
    ),
    (
        "pool-priority-repeated",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.1.priority", 1),
        "endpoint.variants[0].instance_pools",
        "priority 1 appears more than once; give each pool its own instance type and priority",
    ),
    (
        "pool-type-repeated",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.2.instance_type", "ml.m5.xlarge"),
        "endpoint.variants[0].instance_pools",
        "instance_type ml.m5.xlarge appears more than once",
    ),
    (
        "pool-type-misspelled",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.1.instance_type", "ml.m6i.xlarg"),
        "endpoint.variants[0].instance_pools[1].instance_type",
        "not an instance type SageMaker hosts endpoints on; did you mean 'ml.m6i.xlarge'?",
    ),
    (
        "six-pools",
        "capacity.yaml",
        _set(
            "endpoint.variants.0.instance_pools",
            [
                {"instance_type": t, "priority": i % 5 + 1}
                for i, t in enumerate(
                    [
                        "ml.m5.xlarge",
                        "ml.m6i.xlarge",
                        "ml.c5.2xlarge",
                        "ml.c6i.xlarge",
                        "ml.r5.xlarge",
                        "ml.m5.2xlarge",
                    ]
                )
            ],
        ),
        "endpoint.variants[0].instance_pools",
        "at most 5 items",
    ),
    (
        "pool-priority-out-of-range",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.2.priority", 6),
        "endpoint.variants[0].instance_pools[2].priority",
        "less than or equal to 5",
    ),
    (
        "pools-mix-gpu-and-cpu",
        "llm.yaml",
        _both(
            _delete("endpoint.variants.0.instance_type"),
            _set(
                "endpoint.variants.0.instance_pools",
                [
                    {"instance_type": "ml.g5.2xlarge", "priority": 1},
                    {"instance_type": "ml.m5.2xlarge", "priority": 2},
                ],
            ),
        ),
        "endpoint.variants[0].instance_pools",
        "mixes CPU and NVIDIA GPU instance types",
    ),
    (
        "pools-on-multi-model",
        "multi-model.yaml",
        _both(
            _delete("endpoint.variants.0.instance_type"),
            _set("endpoint.variants.0.instance_pools", [{"instance_type": "ml.m5.large", "priority": 1}]),
        ),
        "endpoint.variants[0].instance_pools",
        "a multi-model endpoint takes one instance_type per variant",
    ),
    (
        "provision-timeout-without-pools",
        "realtime.yaml",
        _set("endpoint.variants.0.instance_provision_timeout_seconds", 900),
        "endpoint.variants[0].instance_provision_timeout_seconds",
        "give instance_pools or remove it",
    ),
    (
        "provision-timeout-too-short",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_provision_timeout_seconds", 120),
        "endpoint.variants[0].instance_provision_timeout_seconds",
        "greater than or equal to 300",
    ),
    (
        "gpu-fallback-pool-on-cpu-image",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.2.instance_type", "ml.g5.xlarge"),
        "endpoint.variants[0].instance_pools[2].instance_type",
        "needs a GPU/accelerator image",
    ),
    (
        "az-imbalance-over-100",
        "capacity.yaml",
        _set("endpoint.inference_components.components.0.scheduling.max_az_imbalance", 101),
        "endpoint.inference_components.components[0].scheduling.max_az_imbalance",
        "less than or equal to 100",
    ),
    (
        "component-does-not-fit-a-fallback-pool",
        "capacity.yaml",
        _both(
            _set("endpoint.variants.0.instance_pools.2.instance_type", "ml.c5.large"),
            _set(
                "endpoint.inference_components.components.0.compute", {"cpu_cores": 1, "min_memory_mb": 6144}
            ),
        ),
        "endpoint.inference_components.components[0].compute.min_memory_mb",
        "one copy must fit on one ml.c5.large (4096 MiB)",
    ),
    (
        "per-instance-type-not-a-pool",
        "capacity.yaml",
        _set("endpoint.inference_components.components.0.per_instance_type.0.instance_type", "ml.r5.xlarge"),
        "endpoint.inference_components.components[0].per_instance_type[0].instance_type",
        "not one of the variant's instance pools (ml.m5.xlarge, ml.m6i.xlarge, ml.c5.2xlarge)",
    ),
    (
        "per-instance-type-without-pools",
        "inference-components.yaml",
        _set(
            "endpoint.inference_components.components.0.per_instance_type",
            [{"instance_type": "ml.m5.xlarge", "compute": {"min_memory_mb": 1024}}],
        ),
        "endpoint.inference_components.components[0].per_instance_type",
        "Specifications need a variant with at least two instance_pools",
    ),
    (
        "per-instance-type-does-not-fit",
        "capacity.yaml",
        _set("endpoint.inference_components.components.0.per_instance_type.0.compute.cpu_cores", 16),
        "endpoint.inference_components.components[0].per_instance_type[0].compute.cpu_cores",
        "one copy must fit on one ml.c5.2xlarge (8 vCPUs)",
    ),
    (
        "unknown-scale-in",
        "capacity.yaml",
        _set("endpoint.inference_components.instance_scaling.scale_in", "drain"),
        "endpoint.inference_components.instance_scaling.scale_in",
        "'idle-release' or 'consolidation'",
    ),
    (
        # 40 variables of 1,000-byte values: each within 1024 bytes, 40 KB together.
        "env-over-32-kb",
        "realtime.yaml",
        _set("model.containers.0.environment", {f"SETTING_{i:02d}": "x" * 1000 for i in range(40)}),
        "model.containers[0].environment",
        "The maximum length of all keys and values in the map, combined, is 32 KB.",
    ),
    (
        # Two containers of 20 KB each: within 32 KB apiece, over it as the one Model they make.
        "env-over-32-kb-per-model",
        "multi-container.yaml",
        _both(
            _set("model.containers.0.environment", {f"A_{i:02d}": "x" * 1000 for i in range(20)}),
            _set("model.containers.1.environment", {f"B_{i:02d}": "x" * 1000 for i in range(20)}),
        ),
        "model.containers",
        "If you pass multiple containers to a CreateModel request, then the maximum length of all of their "
        "maps, combined, is also 32 KB.",
    ),
    (
        "publish-frequency-not-offered",
        "realtime.yaml",
        _set("endpoint.metrics", {"publish_frequency_seconds": 45}),
        "endpoint.metrics.publish_frequency_seconds",
        "300",
    ),
    (
        "pool-priority-six",
        "capacity.yaml",
        _set("endpoint.variants.0.instance_pools.2.priority", 6),
        "endpoint.variants[0].instance_pools[2].priority",
        "less than or equal to 5",
    ),
    (
        "alarm-evaluation-over-a-day",
        "realtime.yaml",
        _set("monitoring.evaluation_periods", 1441),
        "monitoring.evaluation_periods",
        "less than or equal to 1440",
    ),
    (
        "scaling-target-past-2-to-the-360",
        "realtime.yaml",
        _set("endpoint.variants.0.autoscaling.target_invocations_per_instance", 2**361),
        "endpoint.variants[0].autoscaling.target_invocations_per_instance",
        "must be less than or equal to",
    ),
    (
        "hostname-on-one-serial-container",
        "multi-container.yaml",
        _set("model.containers.0.hostname", "preprocess"),
        "model.containers[1].hostname",
        "ContainerHostName parameter of every ContainerDefinition in that pipeline",
    ),
    (
        "shadow-beside-two-production-variants",
        "realtime-shadow.yaml",
        lambda data: data["endpoint"]["variants"].append(
            {**data["endpoint"]["variants"][0], "name": "second"}
        ),
        "endpoint.variants",
        "exactly one production variant",
    ),
    (
        "models-of-a-set-on-an-archive",
        "realtime.yaml",
        _set("model.containers.0.model_data.models", ["churn"]),
        "model.containers[0].model_data.models",
        "only with source: multi-model",
    ),
    (
        "model-of-a-set-with-a-dot",
        "multi-model.yaml",
        _set("model.containers.0.model_data.models", ["churn.tar.gz"]),
        "model.containers[0].model_data.models[0]",
        "archived as NAME.tar.gz: e.g. churn",
    ),
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
