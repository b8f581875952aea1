"""Cross-field config rules that shape the stacks: the loader rejects them, and the constructs refuse the
same input if the config layer were bypassed (constructs validate at their boundary too)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from stack_support import CONFIG_DIR, ROLE, SUPPLIED_KEY, cdk_context

from smkit.aws.instances import has_instance_storage
from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.constructs.autoscaling import EndpointAutoscaling, ScalingSettings, ScalingTarget
from smkit.cdk.constructs.endpoint import DeploymentGuardrails, DeploymentStrategy, InferenceEndpoint
from smkit.cdk.constructs.endpoint_config import (
    CaptureMode,
    DataCaptureSettings,
    EndpointConfiguration,
    InstanceType,
    InstanceVariant,
    ManagedInstanceScaling,
    ServerlessVariant,
)
from smkit.cdk.constructs.model import ContainerSpec, InferenceModel
from smkit.cdk.constructs.model_data import BoundModelData
from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import ConfigError, load_config, parse_config
from smkit.config.resolved import resolve


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / name).read_text())
    return data


def _moved(name: str, project: Path) -> Path:
    """A shipped config copied into ``project/config``: its relative paths now point into ``project``."""
    (project / "config").mkdir(exist_ok=True)
    target = project / "config" / name
    target.write_text((CONFIG_DIR / name).read_text())
    return target


def _set(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if key.isdigit() else node[key]
    last = keys[-1]
    if value is DELETE:
        del node[last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


DELETE = object()


KEY = SUPPLIED_KEY


def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Guard")


def _role() -> iam.IRole:
    return iam.Role.from_role_arn(_stack(), "Role", ROLE)


def _autoscale_t2() -> None:
    settings = ScalingSettings(ScalingTarget.INVOCATIONS_PER_INSTANCE, 1, 2, 100)
    EndpointAutoscaling(
        _stack(),
        "A",
        endpoint_name="e",
        variant_name="blue",
        settings=settings,
        instance_type=InstanceType.of("ml.t2.medium"),
    )


def _scale_to_zero_realtime() -> None:
    settings = ScalingSettings(ScalingTarget.INVOCATIONS_PER_INSTANCE, 0, 2, 100)
    EndpointAutoscaling(_stack(), "A", endpoint_name="e", variant_name="blue", settings=settings)


def _direct_without_hostname() -> None:
    data = BoundModelData(model_data_url="s3://b/m.tar.gz")
    containers = [ContainerSpec("img", data, {}, "a"), ContainerSpec("img", data, {}, None)]
    InferenceModel(_stack(), "M", role=_role(), containers=containers, inference_mode="direct")


def _serverless_with_capture() -> None:
    stack = _stack()
    EndpointConfiguration(
        stack,
        "C",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        serverless=ServerlessVariant("main", cdk.Size.mebibytes(2048), 20),
        data_capture=DataCaptureSettings("s3://b/c", 10, (CaptureMode.INPUT,)),
    )


def _serverless_provisioned_over_max() -> None:
    stack = _stack()
    EndpointConfiguration(
        stack,
        "C",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        serverless=ServerlessVariant("main", cdk.Size.mebibytes(2048), 5, 10),
    )


def _canary_without_size() -> None:
    stack = _stack()
    InferenceEndpoint(
        stack,
        "E",
        endpoint_config=EndpointConfiguration.from_endpoint_config_name(stack, "C", "c"),
        deployment=DeploymentGuardrails(strategy=DeploymentStrategy.CANARY),
    )


def _variants_and_serverless() -> None:
    stack = _stack()
    EndpointConfiguration(
        stack,
        "C",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        variants=[InstanceVariant("blue", InstanceType.of("ml.m5.large"))],
        serverless=ServerlessVariant("main", cdk.Size.mebibytes(2048), 20),
    )


def _multi_model_with_two_containers() -> None:
    mme = BoundModelData(model_data_url="s3://b/models/", multi_model=True)
    containers = [ContainerSpec("img", mme), ContainerSpec("img", mme)]
    InferenceModel(_stack(), "M", role=_role(), containers=containers, inference_mode="serial")


# (case, yaml file, path, value, fragment of the loader's message, construct-level check, its message)
RULES: list[tuple[str, str, str, Any, str, Callable[[], None], str]] = [
    (
        "burstable-autoscaling",
        "realtime.yaml",
        "endpoint.variants.0.instance_type",
        "ml.t2.medium",
        "burstable ml.t* instances cannot autoscale",
        _autoscale_t2,
        "burstable ml.t",
    ),
    (
        "scale-to-zero-realtime",
        "realtime.yaml",
        "endpoint.variants.0.autoscaling.min_capacity",
        0,
        "only async endpoints can scale to zero",
        _scale_to_zero_realtime,
        "only async scales to zero",
    ),
    (
        "direct-needs-hostnames",
        "multi-container-direct.yaml",
        "model.containers.1.hostname",
        DELETE,
        "model.containers[1].hostname",
        _direct_without_hostname,
        "hostname missing",
    ),
    (
        "serverless-no-capture",
        "serverless.yaml",
        "endpoint.data_capture",
        {"enabled": True},
        "serverless endpoints do not support data capture",
        _serverless_with_capture,
        "do not support data capture",
    ),
    (
        "serverless-provisioned-over-max",
        "serverless.yaml",
        "endpoint.serverless.max_concurrency",
        1,
        "must be <= max_concurrency",
        _serverless_provisioned_over_max,
        "provisioned_concurrency must be <= max_concurrency",
    ),
    (
        "canary-needs-size",
        "realtime.yaml",
        "endpoint.deployment.canary_size_percent",
        DELETE,
        "strategy canary needs canary_size_percent",
        _canary_without_size,
        "need a traffic percentage",
    ),
    (
        "serverless-has-no-variants",
        "serverless.yaml",
        "endpoint.variants",
        [{"name": "blue", "instance_type": "ml.m5.large"}],
        "serverless has exactly one variant",
        _variants_and_serverless,
        "either instance variants or one serverless variant",
    ),
    (
        "multi-model-single-container",
        "multi-model.yaml",
        "model.containers",
        [
            {"name": "a", "model_data": {"source": "multi-model", "path": "build/models"}},
            {"name": "b", "model_data": {"source": "multi-model", "path": "build/models"}},
        ],
        "takes exactly one container",
        _multi_model_with_two_containers,
        "must be the only container",
    ),
]


@pytest.mark.parametrize("case,file,path,value,message,guard,guard_message", RULES, ids=[r[0] for r in RULES])
def test_rule_is_enforced_by_config_and_constructs(
    case: str,
    file: str,
    path: str,
    value: Any,
    message: str,
    guard: Callable[[], None],
    guard_message: str,
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(_set(_load(file), path, value), source=case)
    with pytest.raises(ValueError, match=re.escape(guard_message)):
        guard()


def test_supplied_and_created_key_are_exclusive() -> None:
    data = _set(
        _load("realtime.yaml"),
        "security.kms",
        {"create": True, "key_arn": "arn:aws:kms:eu-west-1:123456789012:key/abc"},
    )
    with pytest.raises(ConfigError, match="choose one"):
        parse_config(data)


def test_missing_model_archive_names_the_packaging_command(tmp_path: Path) -> None:
    (tmp_path / "container").mkdir()
    (tmp_path / "container" / "Dockerfile").write_text("FROM scratch\n")
    cfg = load_config(_moved("realtime.yaml", tmp_path))
    with pytest.raises(
        FileNotFoundError, match=r"build/model\.tar\.gz: no such file .*`smkit package --config CONFIG`"
    ):
        add_serving_stacks(cdk.App(context=cdk_context()), deployment=resolve(cfg, Path.cwd()))


def test_missing_multi_model_folder_names_the_packaging_command(tmp_path: Path) -> None:
    (tmp_path / "container").mkdir()
    (tmp_path / "container" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "container" / "requirements-sklearn.txt").write_text("scikit-learn==1.9.1\n")
    (tmp_path / "build" / "models").mkdir(parents=True)
    cfg = load_config(_moved("multi-model.yaml", tmp_path))
    with pytest.raises(
        FileNotFoundError, match=r"no \*\.tar\.gz models in it; package it first: `smkit package --config"
    ):
        add_serving_stacks(cdk.App(context=cdk_context()), deployment=resolve(cfg, Path.cwd()))


def test_build_image_needs_a_dockerfile(tmp_path: Path) -> None:
    path = _moved("realtime.yaml", tmp_path)
    (tmp_path / "docker").mkdir()
    path.write_text(path.read_text().replace("  source: build ", "  context: ../docker\n  source: build "))
    cfg = load_config(path)
    with pytest.raises(
        ValueError,
        match=r"image.dockerfile 'Dockerfile' not found in image.context .*relative to the config file",
    ):
        add_serving_stacks(cdk.App(context=cdk_context()), deployment=resolve(cfg, Path.cwd()))


def test_ecr_image_uses_this_deployments_repository() -> None:
    # A config rule: the local endpoint refuses the config exactly as synth does.
    data = _set(_load("realtime.yaml"), "image", {"source": "ecr", "repository": "elsewhere", "tag": "v1"})
    with pytest.raises(
        ConfigError, match=r"image.repository: 'elsewhere': the stacks pull from this deployment"
    ):
        parse_config(data, base_dir=CONFIG_DIR)


@pytest.mark.parametrize(
    "instance_type,local",
    [
        ("ml.m5.large", False),
        ("ml.c5.xlarge", False),
        ("ml.inf2.xlarge", False),
        ("ml.m5d.large", True),
        ("ml.g4dn.xlarge", True),
        ("ml.g5.2xlarge", True),
        ("ml.p4d.24xlarge", True),
        ("ml.r7gd.large", True),
        ("ml.p6e-gb200.36xlarge", True),
        ("ml.g7e.2xlarge", False),  # not in the table: not claimed
    ],
)
def test_instance_store_families(instance_type: str, local: bool) -> None:
    assert has_instance_storage(instance_type) is local


def _volume_on_instance_storage(kind: str) -> None:
    if kind == "component-pool":
        stack = _stack()
        EndpointConfiguration(
            stack,
            "C",
            variants=[
                InstanceVariant(
                    "gpu",
                    InstanceType.of("ml.g5.2xlarge"),
                    volume_size=cdk.Size.gibibytes(100),
                    managed_instance_scaling=ManagedInstanceScaling(min_instances=0, max_instances=1),
                )
            ],
            role=iam.Role.from_role_arn(stack, "Role", ROLE),
            key=kms.Key.from_key_arn(stack, "Key", KEY),
        )
        return
    gpu = InstanceVariant("gpu", InstanceType.of("ml.g5.2xlarge"), volume_size=cdk.Size.gibibytes(100))
    cpu = InstanceVariant("cpu", InstanceType.of("ml.m5.large"))
    production, shadow = (gpu, cpu) if kind == "production" else (cpu, gpu)
    stack = _stack()
    EndpointConfiguration(
        stack,
        "C",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        variants=[production],
        shadow_variants=[shadow],
    )


@pytest.mark.parametrize("kind", ["production", "shadow", "component-pool"])
def test_constructs_refuse_a_volume_size_on_instance_storage(kind: str) -> None:
    with pytest.raises(
        ValueError, match="volume_size=100 GiB: ml.g5.2xlarge has local NVMe instance storage"
    ):
        _volume_on_instance_storage(kind)


def test_instance_store_endpoint_keeps_kms_for_capture_and_passes_the_gates(tmp_path: Path) -> None:
    app = cdk.App(context=cdk_context(), outdir=str(tmp_path))
    stack = cdk.Stack(app, "Gpu")
    EndpointConfiguration(
        stack,
        "EndpointConfig",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        key=kms.Key.from_key_arn(stack, "Key", KEY),
        variants=[InstanceVariant("main", InstanceType.of("ml.g5.xlarge"))],
        data_capture=DataCaptureSettings("s3://bucket/capture", 10, (CaptureMode.INPUT,)),
    )
    add_compliance_checks(app)
    assembly = app.synth()  # the packs fail the synth unless the KMS finding is acknowledged
    template = Template.from_json(assembly.get_stack_by_name("Gpu").template)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"KmsKeyId": Match.absent(), "DataCaptureConfig": Match.object_like({"KmsKeyId": Match.any_value()})},
    )
