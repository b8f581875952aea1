"""moto's server with the repairs its CloudFormation adapters need for this kit's templates.

Run as ``python -m smkit.emulator.moto_fixes -H 127.0.0.1 -p PORT`` (what :class:`MotoServer` starts): it
applies every entry of :data:`FIXES`, then hands over to ``moto.server.main``, so the emulator is moto's
own server with its own service backends. A fix only connects CloudFormation to what moto's backends
already do (pass properties its adapter drops or mis-requires, call PutMetricAlarm / DetachRolePolicy /
DeletePolicy, keep a stored parameter), or stops a stack from hanging on a custom resource whose Lambda
moto cannot run; it never invents a result. Resource types moto does not create at all are listed, with
the reason, in :data:`smkit.emulator.inventory.MOTO_SKIPS`.

This module is the table and the entry point; the repairs live by concept in :mod:`smkit.emulator.moto_engine`
(CloudFormation's stack engine), :mod:`smkit.emulator.moto_adapters` (single resource types),
:mod:`smkit.emulator.moto_components` (inference components, shadow variants) and
:mod:`smkit.emulator.moto_scaling` (Application Auto Scaling, endpoint updates).

Each fix is tested to be still needed (tests/deploy/test_moto_fixes.py): when a moto release repairs the
adapter itself, that test fails and the fix goes. tests/deploy/test_moto_fixes_served.py checks that each
works in the server.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smkit.emulator import moto_adapters, moto_components, moto_engine
from smkit.emulator.moto_api_model import api_model_adapter
from smkit.emulator.moto_bucket_deployment import bucket_deployment_adapter
from smkit.emulator.moto_scaling import application_autoscaling_adapters, endpoint_update_as_sagemaker_does


@dataclass(frozen=True)
class Fix:
    """One repair: the CloudFormation type it touches, why, and the function that applies it."""

    resource_type: str
    reason: str
    apply: Callable[[], None]


FIXES: tuple[Fix, ...] = (
    Fix(
        resource_type="AWS::SageMaker::Model",
        reason=(
            "moto 5.2 requires PrimaryContainer, but a multi-container model (Serial or Direct) has only "
            "Containers; and it drops EnableNetworkIsolation and InferenceExecutionConfig, which its own "
            "DescribeModel can return. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-sagemaker-model.html"
        ),
        apply=moto_adapters.sagemaker_model_from_template,
    ),
    Fix(
        resource_type="AWS::ECR::Repository",
        reason=(
            "moto 5.2 generates an unnamed repository's name from the stack name and logical id without "
            "lower-casing it, which its own ECR then rejects (repository names are lowercase); "
            "CloudFormation generates lowercase names. https://docs.aws.amazon.com/AWSCloudFormation/"
            "latest/UserGuide/aws-resource-ecr-repository.html#cfn-ecr-repository-repositoryname"
        ),
        apply=moto_engine.lowercase_generated_repository_names,
    ),
    Fix(
        resource_type="AWS::KMS::Key",
        reason=(
            "moto 5.2 passes CloudFormation's {Key, Value} tags to its KMS tagger, which expects "
            "{TagKey, TagValue} (KeyError: 'TagKey'), and stores the KeyPolicy object where the KMS API "
            "stores a JSON string. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-kms-key.html"
        ),
        apply=moto_adapters.kms_key_from_template,
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
        apply=moto_adapters.cloudwatch_alarm_adapter,
    ),
    Fix(
        resource_type="AWS::IAM::ManagedPolicy",
        reason=(
            "moto 5.2 has no delete for AWS::IAM::ManagedPolicy: a stack delete leaves the policy "
            "attached, and deleting the role it is attached to then fails ('must detach all policies "
            "first'), so `cdk destroy` fails. The delete detaches the policy and deletes it, as "
            "CloudFormation does. Nor has it an update: a changed policy kept its old statements, so a grant "
            "added or revoked by a redeploy never reached the role; the update makes the new statements the "
            "policy's default version, as CloudFormation does."
        ),
        apply=moto_adapters.managed_policy_delete,
    ),
    Fix(
        resource_type="AWS::CloudFormation::Stack",
        reason=(
            "moto 5.2 fails UpdateStack with UsePreviousValue for a parameter it did not store (KeyError: "
            "'BootstrapVersion', the CDK's SSM-typed parameter), so every second `cdk deploy` of a stack "
            "failed; CloudFormation keeps the previous value, here the template default."
        ),
        apply=moto_engine.update_keeps_unknown_previous_parameters,
    ),
    Fix(
        resource_type="AWS::SageMaker::Model",
        reason=(
            "moto 5.2 replaces a changed model under a new name but decides what else to update by comparing "
            "raw templates, so the EndpointConfig whose Fn::GetAtt ModelName now resolves to the new name "
            "keeps pointing at the deleted model (CloudFormation would update it and the Endpoint). The "
            "update recreates the model under its old name, so a redeploy serves the new image and data, and "
            "refuses an update after which the role can no longer read the previous model data in S3 (the old "
            "fleet and a rollback read it)."
        ),
        apply=moto_adapters.model_update_keeps_its_name,
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
        resource_type="AWS::SageMaker::EndpointConfig",
        reason=(
            "moto 5.2 checks a variant's InstanceType against its own list of instance types, which predates "
            "ml.g5, ml.g6, ml.p5 and later families, so a GPU endpoint SageMaker accepts (config/llm.yaml's "
            "ml.g5.2xlarge) failed. The check uses the SageMaker API's current list instead, botocore's model of "
            "ProductionVariantInstanceType: an unknown type still fails. moto also requires InstanceType or "
            "ServerlessConfig on every variant, so a variant on InstancePools is checked by the loader's pool rows "
            "instead (smkit.config.aws_rules.variant_pool_problem). https://docs.aws.amazon.com/sagemaker/"
            "latest/APIReference/API_ProductionVariant.html"
        ),
        apply=moto_adapters.current_instance_types,
    ),
    Fix(
        resource_type="AWS::SageMaker::EndpointConfig",
        reason=(
            "moto 5.2 accepts VolumeSizeInGB on any instance type, but instance types with local NVMe storage "
            "(ml.g5, ml.p5, ml.m5d, ...) have no EBS ML storage volume and SageMaker refuses the size for them "
            '("Currently only Amazon EBS gp2 storage volumes are supported"). The check refuses it in '
            "production and shadow variants, after the components fix so it wraps that one's model check. "
            "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html"
        ),
        apply=moto_adapters.ebs_only_volumes,
    ),
    Fix(
        resource_type="AWS::SageMaker::InferenceComponent",
        reason=(
            "moto 5.2 has no inference components: no CloudFormation adapter (the resource was skipped) and "
            "no Describe/ListInferenceComponents. The repair keeps each component in moto's SageMaker "
            "backend, created only on an existing endpoint, variant and model, InService with its "
            "CopyCount, and only when the execution role (moto's own IAM evaluation, smkit.emulator.moto_access) "
            "may write the component's log group and read an adapter's weights, before and after an update. https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
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
            "moto 5.2 updates only resources whose own template text changed, so an Endpoint whose "
            "EndpointConfig was replaced (a new instance type, data capture, ...) kept pointing at the deleted "
            "config and its update was never checked; CloudFormation updates a resource when a value it "
            "references changes. The Endpoint is updated after its EndpointConfig."
        ),
        apply=moto_engine.endpoint_follows_its_config,
    ),
    Fix(
        resource_type="AWS::SageMaker::Endpoint",
        reason=(
            "moto 5.2 ignores an endpoint's EndpointName (it generates one) and updates an endpoint by deleting "
            "and recreating it under its old name: a new EndpointName (update requires replacement) is ignored, "
            "and a change SageMaker refuses (the instance type of a "
            "variant that is a registered scalable target, or its removal) passes, and so does turning an "
            "instance-based endpoint into a serverless one in place, and so does a blue/green or rolling update "
            "whose new endpoint config has other variant names. The update replaces the endpoint on a new "
            "name and refuses those changes, as https://docs.aws.amazon.com/sagemaker/latest/dg/"
            "endpoint-scaling-update.html, the serverless page's feature exclusions and "
            "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html describe."
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
        apply=moto_engine.custom_resources_not_run,
    ),
    Fix(
        resource_type="Custom::CDKBucketDeployment",
        reason=(
            "CDK's BucketDeployment copies model data into the deployment's bucket with a Lambda moto runs "
            "only in Docker. The copy is done with moto's S3 backend as the handler does it (extract, prefix, "
            "prune, retain), so the model data really is at the ModelDataUrl, under the bucket's default "
            "encryption. Applied after Custom::*, which it overrides for this one type."
        ),
        apply=bucket_deployment_adapter,
    ),
    Fix(
        resource_type="Custom::SageMakerModel",
        reason=(
            "smkit's model with additional model data sources is a custom resource whose Lambda calls "
            "CreateModel (AWS::SageMaker::Model has no AdditionalModelDataSources); moto runs Lambda only in "
            "Docker. The same CreateModel request goes to moto's SageMaker backend under the function's name, "
            "so DescribeModel returns the channels. Applied after Custom::*, which it overrides for this type."
        ),
        apply=api_model_adapter,
    ),
)


def apply_fixes() -> None:
    """Apply every fix in :data:`FIXES` to the moto modules loaded in this process."""
    for fix in FIXES:
        fix.apply()


def serialize_requests() -> None:
    """Run one request at a time through moto's backends.

    moto's server answers each connection on a thread of its own (werkzeug, ``threaded=True``), but its
    backends are plain dicts and lists without locks (https://github.com/getmoto/moto/issues/372). The CDK CLI
    deploys up to six stacks at once (``--concurrency 6``, smkit.emulator.deploy): CloudFormation creating
    the IAM role of one stack while another stack looked its own up failed a deploy with ``RuntimeError:
    dictionary changed size during iteration`` (``IAMBackend.get_role``). A lock around moto's dispatcher
    keeps the threads (a kept-alive connection still waits on no other) and lets one request at a time do
    its backend work. Nothing in moto's request handling or in these fixes calls the server back from
    inside a request, and the kit uses no long-polling API, so no request waits on another.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    dispatch = DomainDispatcherApplication.__call__
    lock = threading.Lock()

    def serialized(self: DomainDispatcherApplication, environ: dict[str, Any], start_response: Any) -> Any:
        with lock:
            return dispatch(self, environ, start_response)

    DomainDispatcherApplication.__call__ = serialized  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> None:
    """Apply the fixes and serialize the requests, then run ``moto.server.main`` with the same arguments as
    ``moto_server``."""
    apply_fixes()
    serialize_requests()
    from moto.server import main as moto_main

    moto_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
