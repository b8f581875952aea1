"""The capacity surface in synthesized templates: instance pools (InstancePools in place of InstanceType, with
VariantInstanceProvisionTimeoutInSeconds) on a real-time variant and on the instances of inference components,
consolidation scale-in (ManagedInstanceScaling.ScaleInPolicy) and AZ-balanced component placement. The app
passes cdk-nag (stack_support.synthesize) and cfn-lint; the emulator accepts the pools and refuses what the
loader refuses. https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from stack_support import (
    CONFIG_DIR,
    ROLE,
    ROOT,
    SUPPLIED_KEY,
    SynthesizedApp,
    cfn_lint_findings,
    synthesize,
)

from smkit.cdk.constructs.endpoint_config import (
    EndpointConfiguration,
    InstanceType,
    InstanceVariant,
    ManagedInstanceScaling,
    ScaleInStrategy,
)
from smkit.cdk.constructs.model import InferenceModel
from smkit.config import load_config, parse_config

ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
COMPONENT = "AWS::SageMaker::InferenceComponent"
POOLS = [
    {"instance_type": "ml.m5.large", "priority": 1},
    {"instance_type": "ml.m6i.large", "priority": 2},
]


def pooled_realtime() -> dict[str, Any]:
    """config/realtime.yaml with its first variant on two instance pools."""
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "realtime.yaml").read_text())
    data["name"] = "tabular-pooled"
    variant = data["endpoint"]["variants"][0]
    del variant["instance_type"]
    variant["instance_pools"] = list(reversed(POOLS))  # the template lists them by priority
    variant["instance_provision_timeout_seconds"] = 600
    return data


@pytest.fixture(scope="module")
def capacity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynthesizedApp]:
    configs = {
        "capacity": load_config(CONFIG_DIR / "capacity.yaml"),
        "pooled": parse_config(pooled_realtime(), source="pooled realtime", base_dir=CONFIG_DIR),
    }
    outdir = tmp_path_factory.mktemp("capacity.out")
    stacks = synthesize(configs, outdir)
    yield SynthesizedApp(outdir=outdir, configs=configs, stacks=stacks)


def test_a_pooled_variant_has_instance_pools_in_place_of_an_instance_type(capacity: SynthesizedApp) -> None:
    capacity.template("pooled").has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "ProductionVariants": [
                {
                    "VariantName": "general-purpose",
                    "InstanceType": Match.absent(),
                    "InstancePools": [
                        {"InstanceType": "ml.m5.large", "Priority": 1},
                        {"InstanceType": "ml.m6i.large", "Priority": 2},
                    ],
                    "VariantInstanceProvisionTimeoutInSeconds": 600,
                },
                Match.object_like({"VariantName": "compute-optimized", "InstanceType": "ml.c5.large"}),
            ]
        },
    )


def test_component_instances_pool_consolidate_and_spread_over_zones(capacity: SynthesizedApp) -> None:
    template = capacity.template("capacity")
    template.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": Match.absent(),
                        "InstancePools": [
                            {"InstanceType": "ml.m5.xlarge", "Priority": 1},
                            {"InstanceType": "ml.m6i.xlarge", "Priority": 2},
                            {"InstanceType": "ml.c5.2xlarge", "Priority": 3},
                        ],
                        "VariantInstanceProvisionTimeoutInSeconds": 900,
                        "ManagedInstanceScaling": {
                            "Status": "ENABLED",
                            "MinInstanceCount": 1,
                            "MaxInstanceCount": 4,
                            "ScaleInPolicy": {"Strategy": "CONSOLIDATION"},
                        },
                    }
                )
            ]
        },
    )
    scheduling = {
        "PlacementStrategy": "SPREAD",
        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 1},
    }

    def entry(instance_type: str, cores: int) -> dict[str, Any]:
        return {
            "InstanceType": instance_type,
            "ModelName": Match.any_value(),
            "ComputeResourceRequirements": {
                "NumberOfCpuCoresRequired": cores,
                "MinMemoryRequiredInMb": 1024,
                "MaxMemoryRequiredInMb": 2048,
            },
            "SchedulingConfig": scheduling,
        }

    # One Specifications entry per pool type: per_instance_type's compute on ml.c5.2xlarge, compute elsewhere.
    template.has_resource_properties(
        COMPONENT,
        {
            "Specification": Match.absent(),
            "Specifications": [
                entry("ml.m5.xlarge", 1),
                entry("ml.m6i.xlarge", 1),
                entry("ml.c5.2xlarge", 2),
            ],
        },
    )


def test_default_scale_in_is_left_to_sagemaker(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("inference-components")
    [config] = [r for r in template["Resources"].values() if r["Type"] == ENDPOINT_CONFIG]
    assert "ScaleInPolicy" not in config["Properties"]["ProductionVariants"][0]["ManagedInstanceScaling"]


def test_cfn_lint_is_clean_on_the_capacity_templates(capacity: SynthesizedApp) -> None:
    findings = cfn_lint_findings(capacity.template_files())
    assert findings == [], "\n".join(findings)


def test_a_variant_may_weigh_0_but_not_every_variant() -> None:
    # InitialVariantWeight: 0 or more (botocore's ProductionVariant); a share is the weight over the sum.
    def config(stack: cdk.Stack, *weights: float) -> EndpointConfiguration:
        return EndpointConfiguration(
            stack,
            "Config",
            model=InferenceModel.from_model_name(stack, "Model", "m"),
            key=kms.Key.from_key_arn(stack, "Key", SUPPLIED_KEY),
            variants=[
                InstanceVariant(name=f"v{i}", instance_type=InstanceType.of("ml.m5.large"), initial_weight=w)
                for i, w in enumerate(weights)
            ],
        )

    with pytest.raises(ValueError, match=r"initial_weight values sum to 0"):
        config(cdk.Stack(cdk.App()), 0, 0)
    with pytest.raises(ValueError, match=r"initial_weight=-1 \(must be >= 0\)"):
        config(cdk.Stack(cdk.App()), 1, -1)
    stack = cdk.Stack(cdk.App())
    config(stack, 1, 0)
    Template.from_stack(stack).has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like({"InitialVariantWeight": 1}),
                Match.object_like({"InitialVariantWeight": 0}),
            ]
        },
    )


@pytest.mark.parametrize(
    ("pools", "timeout", "message"),
    [
        (
            (("ml.m5.large", 1), ("ml.c5.large", 1)),
            None,
            r"instance pool priorities \[1, 1\] \(each of 1-5 once\)",
        ),
        ((("ml.m5.large", 1), ("ml.m5.large", 2)), None, r"instance pool types .* \(each type once\)"),
        (tuple((f"ml.m5.{s}", i + 1) for i, s in enumerate(["large"] * 6)), None, "6 instance pools"),
        ((), 600, r"instance_provision_timeout=600 s \(300-3600, with instance pools only\)"),
    ],
)
def test_constructs_refuse_what_create_endpoint_config_refuses(
    pools: tuple[tuple[str, int], ...], timeout: int | None, message: str
) -> None:
    stack = cdk.Stack(cdk.App())
    key = kms.Key.from_key_arn(stack, "Key", SUPPLIED_KEY)
    with pytest.raises(ValueError, match=message):
        EndpointConfiguration(
            stack,
            "Config",
            model=InferenceModel.from_model_name(stack, "Model", "m"),
            key=key,
            variants=[
                InstanceVariant(
                    name="main",
                    instance_type=InstanceType.of("ml.m5.large"),
                    instance_pools=tuple((InstanceType.of(t), p) for t, p in pools),
                    instance_provision_timeout=None if timeout is None else cdk.Duration.seconds(timeout),
                )
            ],
        )
    with pytest.raises(ValueError, match=message):
        EndpointConfiguration(
            stack,
            "Components",
            variants=[
                InstanceVariant(
                    name="main",
                    instance_type=InstanceType.of("ml.m5.large"),
                    managed_instance_scaling=ManagedInstanceScaling(min_instances=1, max_instances=2),
                    instance_pools=tuple((InstanceType.of(t), p) for t, p in pools),
                    instance_provision_timeout=None if timeout is None else cdk.Duration.seconds(timeout),
                )
            ],
            role=iam.Role.from_role_arn(stack, "Role", ROLE),
            key=key,
        )


def test_component_construct_refuses_an_unknown_scale_in() -> None:
    with pytest.raises(
        ValueError, match=r"ScaleInStrategy: 'drain' is not one of \['idle-release', 'consolidation'\]"
    ):
        stack = cdk.Stack(cdk.App())
        EndpointConfiguration(
            stack,
            "Components",
            variants=[
                InstanceVariant(
                    name="main",
                    instance_type=InstanceType.of("ml.m5.large"),
                    managed_instance_scaling=ManagedInstanceScaling(
                        min_instances=1, max_instances=2, scale_in=ScaleInStrategy.of("drain")
                    ),
                )
            ],
            role=iam.Role.from_role_arn(stack, "Role", ROLE),
            key=kms.Key.from_key_arn(stack, "Key", SUPPLIED_KEY),
        )


# The emulator's EndpointConfig, with its fixes applied, in a process of its own (the fixes patch moto).
EMULATOR_PROBE = """
import json, sys
from moto.sagemaker import models as sm
from smkit.emulator import moto_adapters
moto_adapters.current_instance_types()
moto_adapters.ebs_only_volumes()
out = []
for variant in json.loads(sys.argv[1]):
    try:
        sm.FakeEndpointConfig("123456789012", "eu-west-1", "c", [variant], {}, {}, [], None)
        out.append("accepted")
    except Exception as exc:
        out.append(str(exc))
print(json.dumps(out))
"""


def test_the_emulator_accepts_instance_pools_and_refuses_the_loaders_rows() -> None:
    def variant(**extra: Any) -> dict[str, Any]:
        return {"VariantName": "main", "ModelName": "m", "InitialInstanceCount": 1, **extra}

    pools = [{"InstanceType": "ml.m5.large", "Priority": 1}, {"InstanceType": "ml.m6i.large", "Priority": 2}]
    cases = [
        variant(InstancePools=pools, VariantInstanceProvisionTimeoutInSeconds=600),
        variant(InstancePools=[{**pools[0]}, {**pools[1], "Priority": 1}]),
        variant(InstancePools=pools, InstanceType="ml.m5.large"),
        variant(InstancePools=[pools[0], {"InstanceType": "ml.m6i.larg", "Priority": 2}]),
        variant(InstanceType="ml.m5.large", VariantInstanceProvisionTimeoutInSeconds=600),
        variant(InstancePools=pools, VariantInstanceProvisionTimeoutInSeconds=60),
    ]
    result = subprocess.run(
        [sys.executable, "-c", EMULATOR_PROBE, json.dumps(cases)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    accepted, priorities, both, unknown, lone_timeout, short = json.loads(result.stdout)
    assert accepted == "accepted"
    assert "InstancePools priorities [1, 1] must be distinct values 1-5" in priorities
    assert "give InstanceType or InstancePools, not both" in both
    assert "InstancePools instance type ml.m6i.larg is not a hosting instance type" in unknown
    assert "VariantInstanceProvisionTimeoutInSeconds needs InstancePools" in lone_timeout
    assert "VariantInstanceProvisionTimeoutInSeconds 60 is outside 300-3600" in short


def test_the_pooled_template_holds_the_priority_one_type_for_the_local_endpoint(
    capacity: SynthesizedApp,
) -> None:
    # The local endpoint has one machine: a pooled variant runs as its priority-1 type.
    cfg = capacity.configs["pooled"]
    assert cfg.endpoint.variants[0].instance_type == "ml.m5.large"
    assert cfg.endpoint.variants[0].pool_types == ("ml.m5.large", "ml.m6i.large")
    template = Template.from_json(capacity.template_json("pooled"))
    template.resource_count_is(ENDPOINT_CONFIG, 1)
