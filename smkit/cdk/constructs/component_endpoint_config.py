"""AWS::SageMaker::EndpointConfig of an endpoint that hosts inference components.

Its one production variant names no model: it is the pool of instances that the components' copies are
placed on, grown and shrunk by ManagedInstanceScaling (down to zero instances where the region supports
it). SageMaker starts the components' containers with the config's ExecutionRoleArn, in its VpcConfig and
with its EnableNetworkIsolation, which mirror the models' settings
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html).
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-deploy-models.html
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScaling.html
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.endpoint_config import (
    INSTANCE_STORE,
    KMS_REASON,
    ROUTING_STRATEGIES,
    capacity_reservation,
    instance_pools,
    pool_problems,
)
from smkit.cdk.constructs.model import VpcSettings
from smkit.config.aws_rules import volume_message

SCALE_IN_STRATEGIES = {"idle-release": "IDLE_RELEASE", "consolidation": "CONSOLIDATION"}


@dataclass(frozen=True)
class ComponentVariant:
    """The instance pool of an inference-component endpoint."""

    name: str
    instance_type: str
    initial_instance_count: int
    min_instances: int
    max_instances: int
    volume_size_gb: int | None = None
    routing: str | None = None  # least-outstanding-requests | random (RoutingConfig.RoutingStrategy)
    inference_ami_version: str | None = None
    capacity_reservation_arn: str | None = None
    # ScaleInPolicy.Strategy: IDLE_RELEASE or CONSOLIDATION (None: SageMaker's default).
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScalingScaleInPolicy.html
    scale_in: str | None = None
    instance_pools: tuple[tuple[str, int], ...] = ()
    instance_provision_timeout_seconds: int | None = None


class ComponentEndpointConfiguration(Construct):
    """A model-less EndpointConfig with managed instance scaling, the execution role and KMS key."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        variant: ComponentVariant,
        execution_role_arn: str,
        kms_key_arn: str,
        network_isolation: bool = True,
        vpc: VpcSettings | None = None,
    ) -> None:
        super().__init__(scope, id_)
        _validate(variant)
        self.variant_names = [variant.name]
        types = tuple(t for t, _ in variant.instance_pools) or (variant.instance_type,)
        self.instance_storage = any(INSTANCE_STORE.match(t) for t in types)
        self.resource = sagemaker.CfnEndpointConfig(
            self,
            "Resource",
            execution_role_arn=execution_role_arn,
            enable_network_isolation=network_isolation,
            vpc_config=(
                sagemaker.CfnEndpointConfig.VpcConfigProperty(
                    subnets=list(vpc.subnet_ids), security_group_ids=list(vpc.security_group_ids)
                )
                if vpc
                else None
            ),
            kms_key_id=None if self.instance_storage else kms_key_arn,
            production_variants=[
                sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                    variant_name=variant.name,
                    instance_type=None if variant.instance_pools else variant.instance_type,
                    instance_pools=instance_pools(variant.instance_pools),
                    variant_instance_provision_timeout_in_seconds=variant.instance_provision_timeout_seconds,
                    initial_instance_count=variant.initial_instance_count,
                    volume_size_in_gb=variant.volume_size_gb,
                    managed_instance_scaling=sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
                        status="ENABLED",
                        min_instance_count=variant.min_instances,
                        max_instance_count=variant.max_instances,
                        scale_in_policy=(
                            sagemaker.CfnEndpointConfig.ScaleInPolicyProperty(
                                strategy=SCALE_IN_STRATEGIES[variant.scale_in]
                            )
                            if variant.scale_in
                            else None
                        ),
                    ),
                    routing_config=(
                        sagemaker.CfnEndpointConfig.RoutingConfigProperty(
                            routing_strategy=ROUTING_STRATEGIES[variant.routing]
                        )
                        if variant.routing
                        else None
                    ),
                    inference_ami_version=variant.inference_ami_version,
                    capacity_reservation_config=capacity_reservation(variant.capacity_reservation_arn),
                )
            ],
        )
        if self.instance_storage:
            acknowledge(
                self,
                {
                    "HIPAA.Security-SageMakerEndpointConfigurationKMSKeyConfigured": KMS_REASON,
                    "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured": KMS_REASON,
                },
            )

    @property
    def endpoint_config_name(self) -> str:
        """The generated endpoint config name."""
        return self.resource.attr_endpoint_config_name


def _validate(v: ComponentVariant) -> None:
    problems = []
    if v.initial_instance_count < 1:
        problems.append(f"initial_instance_count={v.initial_instance_count} (must be >= 1)")
    if v.min_instances < 0 or v.max_instances < max(v.min_instances, 1):
        problems.append(
            f"min_instances={v.min_instances}, max_instances={v.max_instances} (need 0 <= min <= max, max >= 1)"
        )
    if v.routing is not None and v.routing not in ROUTING_STRATEGIES:
        problems.append(f"routing={v.routing!r} (one of {sorted(ROUTING_STRATEGIES)})")
    if v.scale_in is not None and v.scale_in not in SCALE_IN_STRATEGIES:
        problems.append(f"scale_in={v.scale_in!r} (one of {sorted(SCALE_IN_STRATEGIES)})")
    problems.extend(
        p.removeprefix(f"variant {v.name!r}: ")
        for p in pool_problems(v.name, v.instance_pools, v.instance_provision_timeout_seconds)
    )
    if v.volume_size_gb is not None and INSTANCE_STORE.match(v.instance_type):
        problems.append(f"volume_size_gb={v.volume_size_gb}: {volume_message(v.instance_type)}")
    if problems:
        raise ValueError(f"Invalid inference-component variant {v.name!r}: " + "; ".join(problems))
