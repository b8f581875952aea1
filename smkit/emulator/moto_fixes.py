"""moto's server with the repairs its CloudFormation adapters need for this kit's templates.

Run as ``python -m smkit.emulator.moto_fixes -H 127.0.0.1 -p PORT`` (what :class:`MotoServer` starts): it
applies every entry of :data:`FIXES`, then hands over to ``moto.server.main``, so the emulator is moto's
own server with its own service backends. A fix only connects CloudFormation to what moto's backends
already do (pass properties its adapter drops or mis-requires, call PutMetricAlarm / DetachRolePolicy /
DeletePolicy, keep a stored parameter), or stops a stack from hanging on a custom resource whose Lambda
moto cannot run; it never invents a result. Resource types moto does not create at all are listed, with
the reason, in :data:`smkit.emulator.inventory.MOTO_SKIPS`.

Each fix is tested to be still needed (tests/deploy/test_moto_fixes.py): when a moto release repairs the
adapter itself, that test fails and the fix goes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smkit.emulator import moto_components
from smkit.emulator.moto_scaling import application_autoscaling_adapters, endpoint_update_as_sagemaker_does


@dataclass(frozen=True)
class Fix:
    """One repair: the CloudFormation type it touches, why, and the function that applies it."""

    resource_type: str
    reason: str
    apply: Callable[[], None]


def _sagemaker_model_from_template() -> None:
    from moto.sagemaker import models as sm

    def create_from_cloudformation_json(
        cls: type[sm.Model],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> sm.Model:
        properties = cloudformation_json["Properties"]
        model = sm.sagemaker_backends[account_id][region_name].create_model(
            model_name=resource_name,
            execution_role_arn=properties["ExecutionRoleArn"],
            primary_container=properties.get("PrimaryContainer"),
            vpc_config=properties.get("VpcConfig", {}),
            containers=properties.get("Containers", []),
            tags=properties.get("Tags", []),
        )
        model.enable_network_isolation = bool(properties.get("EnableNetworkIsolation", False))
        if "InferenceExecutionConfig" in properties:
            # BaseObject.gen_response_object turns attributes into DescribeModel keys.
            setattr(model, "inference_execution_config", properties["InferenceExecutionConfig"])  # noqa: B010
        return model

    patched = classmethod(create_from_cloudformation_json)
    sm.Model.create_from_cloudformation_json = patched  # type: ignore[assignment,method-assign]


def _custom_resources_not_run() -> None:
    from moto.cloudformation import parsing

    original = parsing.resource_class_from_type

    def resource_class_from_type(resource_type: str) -> Any:
        if resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource":
            # Same path as any type moto cannot emulate: logged, not created, reported by reconcile().
            return None
        return original(resource_type)

    parsing.resource_class_from_type = resource_class_from_type


def _lowercase_generated_repository_names() -> None:
    from moto.cloudformation import parsing

    original = parsing.generate_resource_name

    def generate_resource_name(resource_type: str, stack_name: str, logical_id: str) -> str:
        name = original(resource_type, stack_name, logical_id)
        return name.lower() if resource_type == "AWS::ECR::Repository" else name

    parsing.generate_resource_name = generate_resource_name


def _kms_key_from_template() -> None:
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


def _cloudwatch_alarm_adapter() -> None:
    from moto.cloudwatch import models as cw
    from moto.core.common_models import CloudFormationModel

    def metric_queries(metrics: Any) -> list[cw.MetricDataQuery]:
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

    class CloudFormationAlarm(CloudFormationModel):
        """AWS::CloudWatch::Alarm through moto's own CloudWatch backend (PutMetricAlarm / DeleteAlarms)."""

        # moto's model metaclass files every model under the service named by its module path.
        __module__ = "moto.cloudwatch.models"

        def __init__(self, alarm: cw.Alarm) -> None:
            self.alarm = alarm

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::CloudWatch::Alarm"

        @staticmethod
        def cloudformation_name_type() -> str:
            return "AlarmName"

        @property
        def physical_resource_id(self) -> str:
            return str(self.alarm.name)

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        def get_cfn_attribute(self, attribute_name: str) -> Any:
            from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

            if attribute_name == "Arn":
                return self.alarm.alarm_arn
            raise UnformattedGetAttTemplateException()

        @classmethod
        def create_from_cloudformation_json(
            cls,
            resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
            **kwargs: Any,
        ) -> CloudFormationAlarm:
            p = cloudformation_json["Properties"]
            alarm = cw.cloudwatch_backends[account_id][region_name].put_metric_alarm(
                name=resource_name,
                namespace=p.get("Namespace"),
                metric_name=p.get("MetricName"),
                metric_data_queries=metric_queries(p["Metrics"]) if "Metrics" in p else None,
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
        def update_from_cloudformation_json(
            cls,
            original_resource: CloudFormationAlarm,
            new_resource_name: str,
            cloudformation_json: Any,
            account_id: str,
            region_name: str,
        ) -> CloudFormationAlarm:
            # PutMetricAlarm under the same name replaces the alarm's definition, as an in-place update does.
            name = str(original_resource.alarm.name)
            return cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
        ) -> None:
            cw.cloudwatch_backends[account_id][region_name].delete_alarms([resource_name])

    # The class registers itself: moto's CloudFormation finds models through __subclasses__().
    assert CloudFormationAlarm.cloudformation_type() == "AWS::CloudWatch::Alarm"


def _managed_policy_delete() -> None:
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


def _update_keeps_unknown_previous_parameters() -> None:
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend._resolve_update_parameters

    def resolve(self: CloudFormationBackend, instance: Any, incoming_params: list[dict[str, Any]]) -> Any:
        # A parameter moto never stored (CDK's SSM-typed BootstrapVersion) keeps its template default.
        known = [
            p
            for p in incoming_params
            if not p.get("UsePreviousValue", False) or p["ParameterKey"] in instance.parameters
        ]
        return original(self, instance, known)

    CloudFormationBackend._resolve_update_parameters = resolve  # type: ignore[method-assign]


def _model_update_keeps_its_name() -> None:
    from moto.sagemaker import models as sm

    def update(
        cls: type[sm.Model],
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> sm.Model:
        name = original_resource.model_name
        sm.sagemaker_backends[account_id][region_name].delete_model(name)
        return cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)

    sm.Model.update_from_cloudformation_json = classmethod(update)  # type: ignore[assignment,method-assign]


FIXES: tuple[Fix, ...] = (
    Fix(
        resource_type="AWS::SageMaker::Model",
        reason=(
            "moto 5.2 requires PrimaryContainer, but a multi-container model (Serial or Direct) has only "
            "Containers; and it drops EnableNetworkIsolation and InferenceExecutionConfig, which its own "
            "DescribeModel can return. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-sagemaker-model.html"
        ),
        apply=_sagemaker_model_from_template,
    ),
    Fix(
        resource_type="AWS::ECR::Repository",
        reason=(
            "moto 5.2 generates an unnamed repository's name from the stack name and logical id without "
            "lower-casing it, which its own ECR then rejects (repository names are lowercase); "
            "CloudFormation generates lowercase names. https://docs.aws.amazon.com/AWSCloudFormation/"
            "latest/UserGuide/aws-resource-ecr-repository.html#cfn-ecr-repository-repositoryname"
        ),
        apply=_lowercase_generated_repository_names,
    ),
    Fix(
        resource_type="AWS::KMS::Key",
        reason=(
            "moto 5.2 passes CloudFormation's {Key, Value} tags to its KMS tagger, which expects "
            "{TagKey, TagValue} (KeyError: 'TagKey'), and stores the KeyPolicy object where the KMS API "
            "stores a JSON string. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-kms-key.html"
        ),
        apply=_kms_key_from_template,
    ),
    Fix(
        resource_type="AWS::CloudWatch::Alarm",
        reason=(
            "moto 5.2's CloudWatch implements PutMetricAlarm but has no CloudFormation adapter for alarms, "
            "so they were skipped and every Fn::GetAtt Alarm.Arn (dashboard alarm widgets) failed the "
            "stack. The adapter passes the template's properties to moto's own PutMetricAlarm (create and "
            "update) and DeleteAlarms. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-cloudwatch-alarm.html"
        ),
        apply=_cloudwatch_alarm_adapter,
    ),
    Fix(
        resource_type="AWS::IAM::ManagedPolicy",
        reason=(
            "moto 5.2 has no delete for AWS::IAM::ManagedPolicy: a stack delete leaves the policy "
            "attached, and deleting the role it is attached to then fails ('must detach all policies "
            "first'), so `cdk destroy` fails. The delete detaches the policy and deletes it, as "
            "CloudFormation does."
        ),
        apply=_managed_policy_delete,
    ),
    Fix(
        resource_type="AWS::CloudFormation::Stack",
        reason=(
            "moto 5.2 fails UpdateStack with UsePreviousValue for a parameter it did not store (KeyError: "
            "'BootstrapVersion', the CDK's SSM-typed parameter), so every second `cdk deploy` of a stack "
            "failed; CloudFormation keeps the previous value, here the template default."
        ),
        apply=_update_keeps_unknown_previous_parameters,
    ),
    Fix(
        resource_type="AWS::SageMaker::Model",
        reason=(
            "moto 5.2 replaces a changed model under a new name but decides what else to update by comparing "
            "raw templates, so the EndpointConfig whose Fn::GetAtt ModelName now resolves to the new name "
            "keeps pointing at the deleted model (CloudFormation would update it and the Endpoint). The "
            "update recreates the model under its old name, so a redeploy serves the new image and data."
        ),
        apply=_model_update_keeps_its_name,
    ),
    Fix(
        resource_type="AWS::SageMaker::EndpointConfig",
        reason=(
            "moto 5.2 requires a ModelName on every production variant (KeyError: 'ModelName'), but the "
            "variant of an endpoint that hosts inference components has none; and its adapter drops "
            "ExecutionRoleArn and ShadowProductionVariants, which DescribeEndpointConfig returns. "
            "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
            "aws-resource-sagemaker-endpointconfig.html"
        ),
        apply=moto_components.endpoint_config_from_template,
    ),
    Fix(
        resource_type="AWS::SageMaker::InferenceComponent",
        reason=(
            "moto 5.2 has no inference components: no CloudFormation adapter (the resource was skipped) and "
            "no Describe/ListInferenceComponents. The repair keeps each component in moto's SageMaker "
            "backend, created only on an existing endpoint, variant and model, InService with its "
            "CopyCount. https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
            "aws-resource-sagemaker-inferencecomponent.html"
        ),
        apply=moto_components.inference_components,
    ),
    Fix(
        resource_type="AWS::ApplicationAutoScaling::ScalableTarget",
        reason=(
            "moto 5.2 implements RegisterScalableTarget and PutScalingPolicy but has no CloudFormation adapter "
            "for ScalableTarget or ScalingPolicy, so autoscaling was skipped and an update that UpdateEndpoint "
            "refuses for a scalable target passed. The adapters register and deregister through moto's own "
            "Application Auto Scaling backend. https://docs.aws.amazon.com/AWSCloudFormation/latest/"
            "TemplateReference/aws-resource-applicationautoscaling-scalabletarget.html"
        ),
        apply=application_autoscaling_adapters,
    ),
    Fix(
        resource_type="AWS::SageMaker::Endpoint",
        reason=(
            "moto 5.2 ignores an endpoint's EndpointName (it generates one) and updates an endpoint by deleting "
            "and recreating it under its old name: a new EndpointName (update requires replacement) is ignored, "
            "and a change SageMaker refuses (the instance type of a "
            "variant that is a registered scalable target, or its removal) passes. The update replaces the "
            "endpoint on a new name and refuses that change, as https://docs.aws.amazon.com/sagemaker/latest/"
            "dg/endpoint-scaling-update.html describes."
        ),
        apply=endpoint_update_as_sagemaker_does,
    ),
    Fix(
        resource_type="Custom::*",
        reason=(
            "moto runs the Lambda behind a custom resource only inside Docker; without a Docker engine the "
            "function never answers and the stack stays CREATE_IN_PROGRESS forever. Custom resources are "
            "therefore treated like any type moto cannot create: not created, and listed with their reason "
            "in smkit.emulator.inventory.MOTO_SKIPS, so a deploy reports them instead of hanging."
        ),
        apply=_custom_resources_not_run,
    ),
)


def apply_fixes() -> None:
    """Apply every fix in :data:`FIXES` to the moto modules loaded in this process."""
    for fix in FIXES:
        fix.apply()


def main(argv: list[str] | None = None) -> None:
    """Apply the fixes, then run ``moto.server.main`` with the same arguments as ``moto_server``."""
    apply_fixes()
    from moto.server import main as moto_main

    moto_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
