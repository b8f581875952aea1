"""The documented way to change an autoscaled variant's instance type under the same endpoint name.

UpdateEndpoint refuses to change the instance type of a variant (or to remove a variant) that is registered
with Application Auto Scaling. AWS's procedure: deregister the scalable target, update the endpoint,
register the target again with its policies
(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html). The deploy step does exactly
that around ``cdk deploy``:

1. :func:`changed_variants` compares the endpoint as deployed (DescribeEndpoint -> DescribeEndpointConfig)
   with the synthesized template: the variants whose instance type changes or that go away;
2. :func:`pause` records each such variant's scalable target and scaling policies, then deregisters it;
3. the CLI deploys (CloudFormation updates the endpoint in place: same name, blue/green or rolling);
4. :func:`resume` registers every paused target again with its policies, whether the deploy succeeded or
   rolled back, unless CloudFormation has already registered it (a changed min/max capacity in the same
   deploy) or the variant no longer exists.

CloudFormation's own ScalableTarget and ScalingPolicy resources are unchanged throughout: they describe the
same registration before and after.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NAMESPACE = "sagemaker"
ENDPOINT = "AWS::SageMaker::Endpoint"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
# Keys of a DescribeScalableTargets / DescribeScalingPolicies entry that PutScalingPolicy takes back.
POLICY_KEYS = (
    "PolicyName",
    "PolicyType",
    "StepScalingPolicyConfiguration",
    "TargetTrackingScalingPolicyConfiguration",
)


@dataclass(frozen=True)
class PausedTarget:
    """A deregistered scalable target, as DescribeScalableTargets and DescribeScalingPolicies gave it."""

    target: dict[str, Any]
    policies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def variant(self) -> str:
        return str(self.target["ResourceId"]).rsplit("/", 1)[-1]


def template_endpoint(template: Mapping[str, Any]) -> tuple[str, dict[str, str | None]] | None:
    """``(EndpointName, {variant: instance type})`` of a serving template, or None without a named endpoint.

    Serverless variants have no instance type (None); shadow variants count like production ones."""
    resources = template.get("Resources", {})
    endpoints = [r for r in resources.values() if r.get("Type") == ENDPOINT]
    if len(endpoints) != 1 or not isinstance(endpoints[0]["Properties"].get("EndpointName"), str):
        return None
    name = endpoints[0]["Properties"]["EndpointName"]
    config_ref = endpoints[0]["Properties"].get("EndpointConfigName", {})
    logical = config_ref.get("Fn::GetAtt", [None])[0] if isinstance(config_ref, dict) else None
    config = resources.get(logical, {}).get("Properties", {}) if logical else {}
    variants = [*config.get("ProductionVariants", []), *config.get("ShadowProductionVariants", [])]
    return name, {v["VariantName"]: v.get("InstanceType") for v in variants}


def deployed_variants(sagemaker: Any, endpoint_name: str) -> dict[str, str | None] | None:
    """``{variant: instance type}`` of the endpoint as deployed, or None when there is no such endpoint."""
    try:
        endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    except sagemaker.exceptions.ClientError as exc:
        if "Could not find" in str(exc) or exc.response["Error"]["Code"] in (
            "ValidationException",
            "ValidationError",
        ):
            return None
        raise
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    return {v["VariantName"]: v.get("InstanceType") for v in variants}


def changed_variants(deployed: Mapping[str, str | None], new: Mapping[str, str | None]) -> list[str]:
    """Deployed variants whose instance type the update changes, or that it removes."""
    return sorted(name for name, kind in deployed.items() if name not in new or new[name] != kind)


def pause(
    template: Mapping[str, Any], *, sagemaker: Any, autoscaling: Any, dry_run: bool = False
) -> list[PausedTarget]:
    """Deregister the scalable targets that would make UpdateEndpoint fail; what was deregistered
    (``dry_run``: only what would be)."""
    found = template_endpoint(template)
    if found is None:
        return []
    name, new = found
    deployed = deployed_variants(sagemaker, name)
    if deployed is None:
        return []  # a first deploy, or an endpoint the template replaces under a new name
    paused = []
    for variant in changed_variants(deployed, new):
        resource_id = f"endpoint/{name}/variant/{variant}"
        targets = autoscaling.describe_scalable_targets(ServiceNamespace=NAMESPACE, ResourceIds=[resource_id])
        for target in targets["ScalableTargets"]:
            dimension = target["ScalableDimension"]
            policies = autoscaling.describe_scaling_policies(
                ServiceNamespace=NAMESPACE, ResourceId=resource_id, ScalableDimension=dimension
            )["ScalingPolicies"]
            if not dry_run:
                autoscaling.deregister_scalable_target(
                    ServiceNamespace=NAMESPACE, ResourceId=resource_id, ScalableDimension=dimension
                )
            paused.append(PausedTarget(target, policies))
    return paused


def resume(paused: list[PausedTarget], *, sagemaker: Any, autoscaling: Any) -> list[str]:
    """Register the paused targets again with their policies; the ResourceIds registered."""
    restored = []
    for p in paused:
        resource_id, dimension = p.target["ResourceId"], p.target["ScalableDimension"]
        endpoint = resource_id.split("/")[1]
        variants = deployed_variants(sagemaker, endpoint) or {}
        if p.variant not in variants:
            continue  # the variant is gone: nothing to scale
        current = autoscaling.describe_scalable_targets(ServiceNamespace=NAMESPACE, ResourceIds=[resource_id])
        if not any(t["ScalableDimension"] == dimension for t in current["ScalableTargets"]):
            register = {
                key: p.target[key]
                for key in ("MinCapacity", "MaxCapacity", "RoleARN", "SuspendedState")
                if key in p.target
            }
            autoscaling.register_scalable_target(
                ServiceNamespace=NAMESPACE, ResourceId=resource_id, ScalableDimension=dimension, **register
            )
        existing = {
            policy["PolicyName"]
            for policy in autoscaling.describe_scaling_policies(
                ServiceNamespace=NAMESPACE, ResourceId=resource_id, ScalableDimension=dimension
            )["ScalingPolicies"]
        }
        for policy in p.policies:
            if policy["PolicyName"] in existing:
                continue
            autoscaling.put_scaling_policy(
                ServiceNamespace=NAMESPACE,
                ResourceId=resource_id,
                ScalableDimension=dimension,
                **{key: policy[key] for key in POLICY_KEYS if key in policy},
            )
        restored.append(resource_id)
    return restored
