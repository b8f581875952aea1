"""Local model data copied into the endpoint bucket: CDK's BucketDeployment under a content-hashed prefix,
the execution role's read grant on every release's copy, and the copy handler's cdk-nag findings.

Used by :mod:`smkit.cdk.constructs.model_data` for archives, uncompressed directories and multi-model sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3_deployment
from constructs import Construct, IConstruct

from smkit.aws.limits import LAMBDA_EPHEMERAL_MB
from smkit.cdk.constructs.acknowledge import acknowledge, logical_id_of, nag_environment
from smkit.cdk.constructs.execution_role import acknowledge_grant
from smkit.contract import MIB

# Where every copy goes in the endpoint bucket; the copy handler may write and delete only there.
MODELS_PREFIX = "models/"
# The copy handler downloads the zipped set and extracts it in /tmp: room for both, plus headroom, within
# Lambda's ephemeral storage (smkit.aws.limits.LAMBDA_EPHEMERAL_MB).
HEADROOM_MB = 512


def ephemeral_storage_mb(path: Path, size: int) -> int:
    """/tmp the copy handler needs for ``size`` bytes of model data: zipped plus extracted, plus headroom."""
    need = math.ceil(2 * size / MIB) + HEADROOM_MB
    low, high = LAMBDA_EPHEMERAL_MB
    if need > high:
        raise ValueError(
            f"model_data.path {path}: {size / MIB:.0f} MB of model data needs {need} MB of /tmp to copy "
            f"(zipped + extracted), more than the {high} MB a Lambda function can have; upload it to S3 "
            "yourself and use it where it is (model_data: {source: s3, uri: s3://BUCKET/KEY.tar.gz or "
            "s3://BUCKET/PREFIX/}, docs/cloudformation.md), or split it over several containers"
        )
    return max(low, need)


@dataclass(frozen=True)
class ModelCopy:
    """Model data copied under a content-hashed prefix of the endpoint bucket."""

    prefix: str
    deployment: s3_deployment.BucketDeployment
    releases: str  # models/<id>/: the copies of every release of this container's model data
    bucket: s3.IBucket

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """``grantee`` reads every release's copy of this container's model data, not only the current one.

        The policy changes before the endpoint: during a blue/green or rolling update the old fleet still
        serves (and autoscales, and a multi-model endpoint loads models on demand, every request with its
        cache disabled), and after a rollback the old release runs again, each reading its own
        content-hashed prefix. Granting only the new prefix would break them (docs/cloudformation.md,
        "Day-2 updates")."""
        objects = f"{self.releases}*"
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:GetObject"], resource_arns=[self.bucket.arn_for_objects(objects)]
        ).combine(
            iam.Grant.add_to_principal(
                grantee=grantee,
                actions=["s3:ListBucket"],
                resource_arns=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [objects]}},
            )
        )
        acknowledge_grant(
            grantee,
            {
                f"AwsSolutions-IAM5[Resource::<{logical_id_of(self.bucket)}.Arn>/{objects}]": (
                    "Read access to every release's content-hashed copy of this container's model data: the "
                    "old fleet keeps reading its own during an update and after a rollback."
                )
            },
        )
        return grant


def copy_into_bucket(
    scope: Construct,
    id_: str,
    asset_path: Path,
    *,
    size: int,
    bucket: s3.IBucket,
    log_group: logs.ILogGroup | None,
    exclude: list[str] | None = None,
) -> ModelCopy:
    """Publish ``asset_path`` (a directory, minus ``exclude``) as a zipped asset and have CDK's
    BucketDeployment extract it under ``models/<id>/<content hash>/`` of ``bucket``.

    The prefix embeds the asset hash, so changed data is a new prefix (and the Model is replaced); an old
    prefix is never pruned nor deleted, so a rollback finds its release's objects where they were."""
    holder = Construct(scope, id_)
    asset = s3_assets.Asset(holder, "Asset", path=str(asset_path), exclude=exclude)
    prefix = f"{MODELS_PREFIX}{id_}/{asset.asset_hash}/"
    deployment = s3_deployment.BucketDeployment(
        holder,
        "Upload",
        sources=[s3_deployment.Source.bucket(asset.bucket, asset.s3_object_key)],
        destination_bucket=bucket,
        destination_key_prefix=prefix,
        extract=True,
        prune=False,
        retain_on_delete=True,
        memory_limit=1024,
        ephemeral_storage_size=cdk.Size.mebibytes(ephemeral_storage_mb(asset_path, size)),
        log_group=log_group,
    )
    _acknowledge_deployment_handler(deployment, bucket)
    return ModelCopy(prefix, deployment, f"{MODELS_PREFIX}{id_}/", bucket)


HANDLER_REASONS = {
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
        "CDK's BucketDeployment handler only writes its own logs with this AWS managed policy."
    ),
    "AwsSolutions-L1": "The BucketDeployment handler runtime is pinned by aws-cdk-lib, not by this kit.",
    "HIPAA.Security-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "NIST.800.53.R5-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "HIPAA.Security-LambdaDLQ": "Invoked synchronously by CloudFormation, which reports failures itself.",
    "NIST.800.53.R5-LambdaDLQ": "Invoked synchronously by CloudFormation, which reports failures itself.",
    "HIPAA.Security-LambdaInsideVPC": "Copies between two S3 buckets over TLS; no VPC resources involved.",
    "NIST.800.53.R5-LambdaInsideVPC": "Copies between two S3 buckets over TLS; no VPC resources involved.",
}


def _acknowledge_deployment_handler(
    deployment: s3_deployment.BucketDeployment, deployment_bucket: s3.IBucket
) -> None:
    """Acknowledge the findings on CDK's shared BucketDeployment handler, once per stack."""
    handler = deployment.handler_role.node.scope  # the stack-wide singleton function owning the role
    assert handler is not None
    # The function already references its role (GetAtt); CDK's extra DependsOn is cfn-lint W3005.
    function_resource = handler.node.default_child
    policy = deployment.handler_role.node.try_find_child("DefaultPolicy")
    policy_resource = policy.node.default_child if policy is not None else None
    if isinstance(function_resource, cdk.CfnResource) and isinstance(policy_resource, cdk.CfnResource):
        function_resource.add_override("DependsOn", [policy_resource.logical_id])
    if isinstance(policy, iam.Policy) and isinstance(policy_resource, cdk.CfnResource):
        _models_only(policy, policy_resource, deployment_bucket)
    acknowledge(handler, HANDLER_REASONS)
    partition, region, account = nag_environment(deployment)
    copy = (
        "CDK's BucketDeployment grants its copy handler these on the bootstrap asset bucket (read) and on the "
        "endpoint bucket, where this kit narrows the objects to the models/ prefix (captured requests and async "
        "results are out of its reach). The handler runs only during deployments, copies only into its "
        "content-hashed models/ prefix and never prunes (prune=False, retain_on_delete=True)."
    )
    findings = [
        "Action::kms:GenerateDataKey*",
        "Action::kms:ReEncrypt*",
        "Action::s3:Abort*",
        "Action::s3:DeleteObject*",
        "Action::s3:GetBucket*",
        "Action::s3:GetObject*",
        "Action::s3:List*",
        f"Resource::<{logical_id_of(deployment_bucket)}.Arn>/*",
        f"Resource::<{logical_id_of(deployment_bucket)}.Arn>/{MODELS_PREFIX}*",
        f"Resource::arn:{partition}:s3:::cdk-hnb659fds-assets-{account}-{region}/*",
    ]
    reasons = {f"AwsSolutions-IAM5[{f}]": copy for f in findings}
    inline = (
        "CDK's BucketDeployment handler role carries its grants as an inline policy; it has no other use."
    )
    reasons["HIPAA.Security-IAMNoInlinePolicy"] = inline
    reasons["NIST.800.53.R5-IAMNoInlinePolicy"] = inline
    acknowledge(deployment.handler_role, reasons)


@jsii.implements(cdk.IAspect)
class _ModelsOnly:
    """Narrows the copy handler policy's objects of the endpoint bucket to ``models/*`` once it is complete."""

    def __init__(self, policy: iam.Policy, resource: cdk.CfnResource, bucket: s3.IBucket) -> None:
        self._policy, self._resource, self._bucket = policy, resource, bucket

    def visit(self, node: IConstruct) -> None:
        if node.node.path != self._policy.node.path:
            return
        stack = cdk.Stack.of(self._policy)
        every = stack.resolve(self._bucket.arn_for_objects("*"))
        models = stack.resolve(self._bucket.arn_for_objects(f"{MODELS_PREFIX}*"))
        document = _replaced(stack.resolve(self._policy.document), every, models)
        self._resource.add_property_override("PolicyDocument", document)


def _replaced(value: Any, old: Any, new: Any) -> Any:
    if value == old:
        return new
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return value


def _models_only(policy: iam.Policy, resource: cdk.CfnResource, bucket: s3.IBucket) -> None:
    """Narrow the copy handler's read, write and delete on the endpoint bucket to the models/ prefix.

    BucketDeployment grants its handler ``grantReadWrite`` on every object of the destination bucket, data
    capture and async results included; the handler writes only under models/ (prune=False), so the policy
    names ``<bucket ARN>/models/*`` in place of ``<bucket ARN>/*`` (an aspect: once every statement is in)."""
    if not any(isinstance(a, _ModelsOnly) for a in cdk.Aspects.of(policy).all):
        cdk.Aspects.of(policy).add(_ModelsOnly(policy, resource, bucket))
