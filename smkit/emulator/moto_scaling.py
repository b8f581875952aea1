"""moto repairs for Application Auto Scaling in CloudFormation and SageMaker endpoint updates.

Part of :data:`smkit.emulator.moto_fixes.FIXES` (each with its reason there and a still-needed test in
tests/deploy/test_moto_fixes.py). SageMaker refuses UpdateEndpoint when it would change the instance type of
a variant that is a registered scalable target, or remove it
(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html); with these repairs the
emulator registers the stacks' scalable targets and refuses that update too, so a deploy that would fail on
AWS fails here. It also refuses to turn an instance-based endpoint into a serverless one in place, as
SageMaker does (https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html, "Feature
exclusions").
"""

from __future__ import annotations

from typing import Any

from smkit.emulator.moto_resource import EmulatedResource

# Scalable dimensions Application Auto Scaling supports for SageMaker that moto 5.2's validation lacks.
# https://docs.aws.amazon.com/autoscaling/application/APIReference/API_RegisterScalableTarget.html
MISSING_DIMENSIONS = (
    "sagemaker:variant:DesiredProvisionedConcurrency",
    "sagemaker:inference-component:DesiredCopyCount",
)
# What UpdateEndpoint answers when an instance-based endpoint would become serverless.
NO_SERVERLESS_CONVERSION = (
    "You cannot convert your instance-based, real-time endpoint to a serverless endpoint"
)
SERVERLESS = "<serverless>"  # the "instance type" recorded for a serverless variant
# The CloudFormation scalable targets alive in the server, by (account, region): moto re-resolves a
# resource only when its own template text changes, so when an endpoint is replaced under a new name the
# targets whose ResourceId names it are moved here, as CloudFormation's replacement of them would do.
LIVE_TARGETS: dict[tuple[str, str], list[Any]] = {}


def application_autoscaling_adapters() -> None:
    """CloudFormation adapters for ScalableTarget and ScalingPolicy over moto's own backend."""
    # Each class registers itself: moto's CloudFormation finds models through __subclasses__().
    assert _scalable_target_model().cloudformation_type().endswith("ScalableTarget")
    assert _scaling_policy_model().cloudformation_type().endswith("ScalingPolicy")


def _backend(account_id: str, region_name: str) -> Any:
    from moto.applicationautoscaling import models as aas

    return aas.applicationautoscaling_backends[account_id][region_name]


def _scalable_target_model() -> type[EmulatedResource]:
    from moto.applicationautoscaling import models as aas
    from moto.core.common_models import CloudFormationModel

    class CloudFormationScalableTarget(EmulatedResource, CloudFormationModel):
        """AWS::ApplicationAutoScaling::ScalableTarget through moto's RegisterScalableTarget."""

        CFN_TYPE = "AWS::ApplicationAutoScaling::ScalableTarget"

        def __init__(self, namespace: str, resource_id: str, dimension: str) -> None:
            self.namespace, self.resource_id, self.dimension = namespace, resource_id, dimension

        @property
        def physical_resource_id(self) -> str:
            # CloudFormation's own format: what a ScalingPolicy's ScalingTargetId refers to.
            return f"{self.resource_id}|{self.dimension}|{self.namespace}"

        @classmethod
        def create(
            cls, name: str, p: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationScalableTarget:
            b = _backend(account_id, region_name)
            args = (p["ServiceNamespace"], p["ResourceId"], p["ScalableDimension"])
            limits = (
                int(p["MinCapacity"]),
                int(p["MaxCapacity"]),
                p.get("RoleARN", ""),
                p.get("SuspendedState", {}),
            )
            if p["ScalableDimension"] in MISSING_DIMENSIONS and not b._scalable_target_exists(*args[1:]):
                # A dimension moto's RegisterScalableTarget does not know yet: registered as it would be.
                b._add_scalable_target(aas.FakeScalableTarget(b, *args, *limits))  # type: ignore[arg-type]
            else:
                b.register_scalable_target(*args, *limits)
            target = cls(*args)
            LIVE_TARGETS.setdefault((account_id, region_name), []).append(target)
            return target

        @classmethod
        def update(
            cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationScalableTarget:
            new = cls.create(name, properties, account_id, region_name)
            if new.physical_resource_id != original.physical_resource_id:
                original.deregister(account_id, region_name)  # a replacement
            return new

        @classmethod
        def remove(cls, physical_id: str, account_id: str, region_name: str) -> None:
            resource_id, dimension, namespace = physical_id.split("|")
            cls(namespace, resource_id, dimension).deregister(account_id, region_name)

        def deregister(self, account_id: str, region_name: str) -> None:
            live = LIVE_TARGETS.get((account_id, region_name), [])
            live[:] = [t for t in live if t.physical_resource_id != self.physical_resource_id]
            b = _backend(account_id, region_name)
            if b._scalable_target_exists(self.resource_id, self.dimension):
                b.deregister_scalable_target(self.namespace, self.resource_id, self.dimension)

    return CloudFormationScalableTarget


def _scaling_policy_model() -> type[EmulatedResource]:
    from moto.core.common_models import CloudFormationModel

    class CloudFormationScalingPolicy(EmulatedResource, CloudFormationModel):
        """AWS::ApplicationAutoScaling::ScalingPolicy through moto's PutScalingPolicy."""

        CFN_TYPE = "AWS::ApplicationAutoScaling::ScalingPolicy"
        NAME_TYPE = "PolicyName"

        def __init__(self, arn: str) -> None:
            self.arn = arn

        @property
        def physical_resource_id(self) -> str:
            return self.arn

        @classmethod
        def create(
            cls, name: str, p: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationScalingPolicy:
            resource_id, dimension, namespace = p["ScalingTargetId"].split("|")
            kind = p["PolicyType"]
            body = p.get("StepScalingPolicyConfiguration") or p.get(
                "TargetTrackingScalingPolicyConfiguration"
            )
            policy = _backend(account_id, region_name).put_scaling_policy(
                p.get("PolicyName", name), namespace, resource_id, dimension, body, kind
            )
            return cls(policy.policy_arn)

        @classmethod
        def remove(cls, physical_id: str, account_id: str, region_name: str) -> None:
            b = _backend(account_id, region_name)
            for key, policy in list(b.policies.items()):
                if policy.policy_arn == physical_id:
                    del b.policies[key]

    return CloudFormationScalingPolicy


def _variant_types(account_id: str, region_name: str, config_name: str) -> dict[str, str | None]:
    """Instance type of each variant (and shadow variant) of an endpoint config; :data:`SERVERLESS` for one
    without instances."""
    from moto.sagemaker import models as sm

    config = sm.sagemaker_backends[account_id][region_name].describe_endpoint_config(config_name)
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    return {
        v["VariantName"]: SERVERLESS if v.get("ServerlessConfig") else v.get("InstanceType") for v in variants
    }


def _scalable_variants(account_id: str, region_name: str, endpoint_name: str) -> list[tuple[str, str]]:
    """(dimension, resource id) of every registered target on a variant of ``endpoint_name``."""
    targets = _backend(account_id, region_name).targets
    prefix = f"endpoint/{endpoint_name}/variant/"
    return [(d, r) for d, by_id in targets.items() for r in by_id if r.startswith(prefix)]


def _move_targets(account_id: str, region_name: str, old: str, new: str) -> None:
    """Targets (and their policies) on ``old``'s variants now name ``new``'s."""
    b = _backend(account_id, region_name)
    for dimension, resource_id in _scalable_variants(account_id, region_name, old):
        target = b.targets[dimension].pop(resource_id)
        moved = resource_id.replace(f"endpoint/{old}/", f"endpoint/{new}/", 1)
        target.resource_id = moved
        b.targets[dimension][moved] = target
        for key, policy in list(b.policies.items()):
            if policy.resource_id == resource_id:
                del b.policies[key]
                b.put_scaling_policy(
                    policy.policy_name, policy.service_namespace, moved, dimension,
                    policy._policy_body, policy.policy_type,
                )  # fmt: skip
        for live in LIVE_TARGETS.get((account_id, region_name), []):
            if (live.resource_id, live.dimension) == (resource_id, dimension):
                live.resource_id = moved


def update_refusal(
    endpoint: str,
    before: dict[str, str | None],
    after: dict[str, str | None],
    deployment_config: dict[str, Any],
    scalable: list[str],
) -> str | None:
    """What UpdateEndpoint answers an in-place update of ``endpoint`` with, or None when it accepts it.

    ``before``/``after``: instance type by variant (:func:`_variant_types`) of the running and the new endpoint
    config; ``deployment_config``: the update's DeploymentConfig; ``scalable``: the variants that are
    registered scalable targets.
    """
    from smkit.config.day2 import BLUE_GREEN_URL, SAME_VARIANT_NAMES

    if after and set(after.values()) == {SERVERLESS} and SERVERLESS not in before.values() and before:
        return f"endpoint {endpoint}: {NO_SERVERLESS_CONVERSION}"
    guarded = "BlueGreenUpdatePolicy" in deployment_config or "RollingUpdatePolicy" in deployment_config
    if guarded and before and set(after) != set(before):
        # smkit.config.day2: what UpdateEndpoint answers a guarded update with other variant names.
        return (
            f"endpoint {endpoint}: variants {sorted(before)} -> {sorted(after)}: {SAME_VARIANT_NAMES} "
            f"({BLUE_GREEN_URL})"
        )
    for variant in scalable:
        if after.get(variant, "<removed>") != before.get(variant):
            return (
                f"variant {variant} of endpoint {endpoint} is a scalable target: deregister it before "
                "changing its instance type or removing it"
            )
    return None


def endpoint_update_as_sagemaker_does() -> None:
    """Endpoint creates under its EndpointName; updates replace on a new name and refuse what SageMaker
    refuses (:func:`update_refusal`)."""
    from moto.cloudformation.exceptions import ValidationError
    from moto.sagemaker import models as sm

    # Instance type of each variant of each endpoint created through CloudFormation (moto's endpoint keeps
    # no instance type, and the endpoint config it was created from may already be replaced).
    instance_types: dict[tuple[str, str, str], dict[str, str | None]] = {}
    create_original = sm.FakeEndpoint.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]
    update_original = sm.FakeEndpoint.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create(
        cls: type[sm.FakeEndpoint],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> sm.FakeEndpoint:
        # CloudFormation names the endpoint EndpointName when the template gives one; moto ignores it.
        name = cloudformation_json["Properties"].get("EndpointName", resource_name)
        endpoint: sm.FakeEndpoint = create_original(
            cls, name, cloudformation_json, account_id, region_name, **kwargs
        )
        config_name = cloudformation_json["Properties"]["EndpointConfigName"]
        key = (account_id, region_name, endpoint.endpoint_name)
        instance_types[key] = _variant_types(account_id, region_name, config_name)
        return endpoint

    def update(
        cls: type[sm.FakeEndpoint],
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> sm.FakeEndpoint:
        backend = sm.sagemaker_backends[account_id][region_name]
        old = original_resource.endpoint_name
        properties = cloudformation_json["Properties"]
        name = properties.get("EndpointName", old)
        if name != old:  # EndpointName: update requires replacement
            new = cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)
            _move_targets(account_id, region_name, old, name)
            backend.delete_endpoint(old)
            return new
        before = instance_types.get((account_id, region_name, old), {})
        after = _variant_types(account_id, region_name, properties["EndpointConfigName"])
        scalable = [r.rsplit("/", 1)[-1] for _, r in _scalable_variants(account_id, region_name, old)]
        refusal = update_refusal(old, before, after, properties.get("DeploymentConfig") or {}, scalable)
        if refusal is not None:  # CloudFormation reports it as the update's failure
            raise ValidationError(message=refusal)
        updated: sm.FakeEndpoint = update_original(
            cls, original_resource, new_resource_name, cloudformation_json, account_id, region_name
        )
        instance_types[(account_id, region_name, old)] = after
        return updated

    sm.FakeEndpoint.create_from_cloudformation_json = classmethod(create)  # type: ignore[assignment,method-assign]
    sm.FakeEndpoint.update_from_cloudformation_json = classmethod(update)  # type: ignore[assignment,method-assign]
