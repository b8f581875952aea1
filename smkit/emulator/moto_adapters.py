"""moto's CloudFormation adapters of single resource types, repaired or added.

Part of :data:`smkit.emulator.moto_fixes.FIXES` (each with its reason there and a still-needed test in
tests/deploy/test_moto_fixes.py). Each adapter passes the template's properties to what moto's own service
backend already does (CreateModel, CreateKey, PutMetricAlarm, DetachRolePolicy / DeletePolicy).
"""

from __future__ import annotations

import json
from typing import Any

from smkit.emulator.moto_resource import EmulatedResource


def sagemaker_model_from_template() -> None:
    """AWS::SageMaker::Model from ``Containers`` as well as ``PrimaryContainer``, keeping isolation and mode."""
    from moto.sagemaker import models as sm

    def create_from_cloudformation_json(
        cls: type[sm.Model],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> sm.Model:
        sagemaker = sm.sagemaker_backends[account_id][region_name]
        model: sm.Model = create_model(sagemaker, resource_name, cloudformation_json["Properties"])
        return model

    patched = classmethod(create_from_cloudformation_json)
    sm.Model.create_from_cloudformation_json = patched  # type: ignore[assignment,method-assign]


def create_model(sagemaker: Any, name: str, request: dict[str, Any]) -> Any:
    """CreateModel ``name`` in moto's SageMaker backend ``sagemaker`` from a CreateModel request (or an
    AWS::SageMaker::Model's properties: the same names), with the two fields moto's ``create_model`` drops:
    EnableNetworkIsolation (a boolean, or its text as a custom resource's properties carry it) and
    InferenceExecutionConfig."""
    model = sagemaker.create_model(
        model_name=name,
        execution_role_arn=request["ExecutionRoleArn"],
        primary_container=request.get("PrimaryContainer"),
        vpc_config=request.get("VpcConfig", {}),
        containers=request.get("Containers", []),
        tags=request.get("Tags", []),
    )
    model.enable_network_isolation = str(request.get("EnableNetworkIsolation", False)).lower() == "true"
    if "InferenceExecutionConfig" in request:
        # BaseObject.gen_response_object turns attributes into DescribeModel keys.
        setattr(model, "inference_execution_config", request["InferenceExecutionConfig"])  # noqa: B010
    return model


def current_instance_types() -> None:
    """EndpointConfig instance types checked against the SageMaker API's current list (botocore's model of
    ``ProductionVariantInstanceType``) instead of moto's older copy, which lacks ml.g5, ml.g6, ml.p5 and newer;
    a variant's InstancePools (in place of InstanceType) checked by the loader's rows
    (:func:`smkit.config.aws_rules.variant_pool_problem`)."""
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    from smkit.aws.instances import hosting_instance_types

    valid = hosting_instance_types()

    def validate_instance_type(self: sm.FakeEndpointConfig, instance_type: str) -> None:
        if instance_type not in valid:
            raise ValidationError(
                message=f"Value '{instance_type}' at 'instanceType' failed to satisfy constraint: Member must "
                f"satisfy enum value set: {sorted(valid)}"
            )

    sm.FakeEndpointConfig.validate_instance_type = validate_instance_type  # type: ignore[method-assign]

    from smkit.config.aws_rules import variant_pool_problem

    previous = sm.FakeEndpointConfig.validate_production_variants

    def validate_production_variants(
        self: sm.FakeEndpointConfig, production_variants: list[dict[str, Any]]
    ) -> None:
        # A pooled variant has InstancePools in place of InstanceType (moto requires one of InstanceType and
        # ServerlessConfig); the loader's rows decide what SageMaker refuses in the pools.
        plain = []
        for variant in production_variants:
            problem = variant_pool_problem(variant)
            if problem is not None:
                raise ValidationError(message=problem)
            if not variant.get("InstancePools"):
                plain.append(variant)
        previous(self, plain)

    sm.FakeEndpointConfig.validate_production_variants = validate_production_variants  # type: ignore[method-assign]


def ebs_only_volumes() -> None:
    """CreateEndpointConfig refuses ``VolumeSizeInGB`` for an instance type with local NVMe storage, in production
    and shadow variants alike (the loader's row :func:`smkit.config.aws_rules.instance_store_volume`)."""
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    from smkit.aws.instances import EBS_ONLY, VARIANT_URL, has_instance_storage

    previous = sm.SageMakerModelBackend.validate_production_variants

    def validate_production_variants(
        self: sm.SageMakerModelBackend, production_variants: list[dict[str, Any]]
    ) -> None:
        for variant in production_variants:
            types = [str(p.get("InstanceType")) for p in variant.get("InstancePools") or ()]
            stored = [t for t in [str(variant.get("InstanceType", "")), *types] if has_instance_storage(t)]
            instance_type = stored[0] if stored else ""
            if "VolumeSizeInGB" in variant and instance_type:
                raise ValidationError(
                    message=f"VolumeSizeInGB is not supported for instance type {instance_type} of variant "
                    f"{variant.get('VariantName')}: {EBS_ONLY}. {VARIANT_URL}"
                )
        previous(self, production_variants)

    sm.SageMakerModelBackend.validate_production_variants = validate_production_variants  # type: ignore[method-assign]


def model_update_keeps_its_name() -> None:
    """An updated AWS::SageMaker::Model is recreated under its old name (what references to it resolve to),
    unless its role can no longer read the previous release's model data (smkit.emulator.moto_access)."""
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    from smkit.emulator.moto_access import model_data_uris, previous_data_problem

    def update(
        cls: type[sm.Model],
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> sm.Model:
        name = original_resource.model_name
        properties = cloudformation_json["Properties"]
        new = [properties["PrimaryContainer"]] if "PrimaryContainer" in properties else []
        old = [original_resource.primary_container] if original_resource.primary_container else []
        problem = previous_data_problem(
            account_id,
            properties.get("ExecutionRoleArn"),
            model_data_uris(old + list(original_resource.containers or [])),
            model_data_uris(new + list(properties.get("Containers", []))),
        )
        if problem:
            raise ValidationError(message=problem)
        sm.sagemaker_backends[account_id][region_name].delete_model(name)
        return cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)

    sm.Model.update_from_cloudformation_json = classmethod(update)  # type: ignore[assignment,method-assign]


def kms_key_from_template() -> None:
    """AWS::KMS::Key with CloudFormation's tags and key-policy object turned into the KMS API's forms."""
    from moto.kms import models as kms

    original = kms.Key.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create_from_cloudformation_json(
        cls: type[kms.Key],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> kms.Key:
        properties = dict(cloudformation_json["Properties"])
        # CloudFormation tags are {Key, Value}; the KMS API (and moto's tagger) expects {TagKey, TagValue}.
        properties["Tags"] = [
            {"TagKey": t["Key"], "TagValue": t["Value"]} for t in properties.get("Tags", [])
        ]
        # CloudFormation takes the key policy as a JSON object; the KMS API stores a JSON string.
        if isinstance(properties.get("KeyPolicy"), dict):
            properties["KeyPolicy"] = json.dumps(properties["KeyPolicy"])
        fixed = {**cloudformation_json, "Properties": properties}
        key: kms.Key = original(cls, resource_name, fixed, account_id, region_name, **kwargs)
        return key

    patched = classmethod(create_from_cloudformation_json)
    kms.Key.create_from_cloudformation_json = patched  # type: ignore[assignment,method-assign]


def cloudwatch_alarm_adapter() -> None:
    """AWS::CloudWatch::Alarm through moto's CloudWatch backend (PutMetricAlarm / DeleteAlarms)."""
    # The class registers itself: moto's CloudFormation finds models through __subclasses__().
    assert _alarm_model().cloudformation_type() == "AWS::CloudWatch::Alarm"


def _metric_queries(metrics: Any) -> list[Any]:
    """An alarm's ``Metrics`` (metric math) as moto's MetricDataQuery objects."""
    from moto.cloudwatch import models as cw

    queries = []
    for metric in metrics:
        stat = metric.get("MetricStat")
        metric_stat = None
        if stat:
            dims = [cw.Dimension(d["Name"], d["Value"]) for d in stat["Metric"].get("Dimensions", [])]
            metric_stat = cw.MetricStat(
                metric=cw.Metric(
                    metric_name=stat["Metric"]["MetricName"],
                    namespace=stat["Metric"]["Namespace"],
                    dimensions=dims,
                ),
                period=stat.get("Period"),
                stat=stat.get("Stat"),
                unit=stat.get("Unit"),
            )
        queries.append(
            cw.MetricDataQuery(
                query_id=metric.get("Id"),
                label=metric.get("Label"),
                period=metric.get("Period"),
                return_data=metric.get("ReturnData"),
                expression=metric.get("Expression"),
                metric_stat=metric_stat,
            )
        )
    return queries


def _alarm_model() -> type[EmulatedResource]:
    from moto.cloudwatch import models as cw
    from moto.core.common_models import CloudFormationModel

    class CloudFormationAlarm(EmulatedResource, CloudFormationModel):
        """AWS::CloudWatch::Alarm through moto's own CloudWatch backend (PutMetricAlarm / DeleteAlarms)."""

        CFN_TYPE = "AWS::CloudWatch::Alarm"
        NAME_TYPE = "AlarmName"
        ATTRIBUTES = ("Arn",)

        def __init__(self, alarm: cw.Alarm) -> None:
            self.alarm = alarm

        @property
        def physical_resource_id(self) -> str:
            return str(self.alarm.name)

        def attribute(self, name: str) -> Any:
            return self.alarm.alarm_arn

        @classmethod
        def create(cls, name: str, p: Any, account_id: str, region_name: str) -> CloudFormationAlarm:
            alarm = cw.cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=name,
                namespace=p.get("Namespace"),
                metric_name=p.get("MetricName"),
                metric_data_queries=_metric_queries(p["Metrics"]) if "Metrics" in p else None,
                comparison_operator=p["ComparisonOperator"],
                evaluation_periods=int(p["EvaluationPeriods"]),
                datapoints_to_alarm=p.get("DatapointsToAlarm"),
                period=p.get("Period"),
                threshold=p.get("Threshold"),
                statistic=p.get("Statistic"),
                extended_statistic=p.get("ExtendedStatistic"),
                description=p.get("AlarmDescription"),
                dimensions=p.get("Dimensions", []),
                alarm_actions=p.get("AlarmActions", []),
                ok_actions=p.get("OKActions", []),
                insufficient_data_actions=p.get("InsufficientDataActions", []),
                unit=p.get("Unit"),
                actions_enabled=p.get("ActionsEnabled", True),
                treat_missing_data=p.get("TreatMissingData"),
                evaluate_low_sample_count_percentile=p.get("EvaluateLowSampleCountPercentile"),
                threshold_metric_id=p.get("ThresholdMetricId"),
                tags=p.get("Tags", []),
            )
            return cls(alarm)

        @classmethod
        def update(
            cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationAlarm:
            # PutMetricAlarm under the same name replaces the alarm's definition, as an in-place update does.
            return cls.create(str(original.alarm.name), properties, account_id, region_name)

        @classmethod
        def remove(cls, physical_id: str, account_id: str, region_name: str) -> None:
            cw.cloudwatch_backends[account_id][region_name].delete_alarms([physical_id])

    return CloudFormationAlarm


def managed_policy_delete() -> None:
    """Deleting an AWS::IAM::ManagedPolicy detaches it from its roles, users and groups first, as IAM requires;
    updating it makes its new statements the policy's default version."""
    from moto.iam import models as iam
    from moto.utilities.utils import get_partition

    def delete_from_cloudformation_json(
        cls: type[iam.ManagedPolicy],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> None:
        backend = iam.iam_backends[account_id][get_partition(region_name)]
        arn = resource_name  # the physical id of a managed policy is its ARN
        # DeletePolicy requires the policy to be detached first, as in IAM itself.
        for role in list(backend.roles.values()):
            if arn in role.managed_policies:
                backend.detach_role_policy(arn, role.name)
        for user in list(backend.users.values()):
            if arn in user.managed_policies:
                backend.detach_user_policy(arn, user.name)
        for group in list(backend.groups.values()):
            if arn in group.managed_policies:
                backend.detach_group_policy(arn, group.name)
        backend.delete_policy(arn)

    patched = classmethod(delete_from_cloudformation_json)
    iam.ManagedPolicy.delete_from_cloudformation_json = patched  # type: ignore[assignment,method-assign]

    def update_from_cloudformation_json(
        cls: type[iam.ManagedPolicy],
        original_resource: iam.ManagedPolicy,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> iam.ManagedPolicy:
        # CloudFormation updates the statements in place: a new default version (IAM keeps at most five).
        backend = iam.iam_backends[account_id][get_partition(region_name)]
        arn = original_resource.arn
        document = cloudformation_json["Properties"]["PolicyDocument"]
        text = document if isinstance(document, str) else json.dumps(document)
        stale = [v for v in original_resource.versions if not v.is_default]
        if len(original_resource.versions) >= 5 and stale:
            backend.delete_policy_version(arn, stale[0].version_id)
        backend.create_policy_version(arn, text, set_as_default=True)
        return original_resource

    iam.ManagedPolicy.update_from_cloudformation_json = classmethod(update_from_cloudformation_json)  # type: ignore[assignment,method-assign]
