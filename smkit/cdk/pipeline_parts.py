"""Pieces of the pipeline stack: the artifact store, the staging smoke-test role, and the helpers that keep
CDK Pipelines' generated template clean for cfn-lint and cdk-nag (each acknowledgement with its reason)."""

from __future__ import annotations

import json
import re
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.encryption import allow_cloudwatch_logs
from smkit.cdk.constructs.logs import retention_period
from smkit.cdk.constructs.storage import access_log_bucket, private_bucket


class SmokeTestAccessStack(cdk.Stack):
    """A role in the staging account that only the pipeline's smoke-test runner role may assume, to invoke
    the staged endpoint.

    The permission names no endpoint ARN (a cross-stack export would block the endpoint's replacement);
    it is limited to endpoints tagged with this deployment's ``smkit:deployment`` / ``smkit:environment``.
    The trust names the tooling account and requires the caller to be ``trusted_role_arn``
    (``aws:PrincipalArn``), not any principal of that account.
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-principalarn
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        deployment: str,
        environment: str,
        trusted_account: str,
        trusted_role_arn: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        endpoints = self.format_arn(service="sagemaker", resource="endpoint", resource_name="*")
        policy = iam.ManagedPolicy(
            self,
            "InvokePolicy",
            statements=[
                iam.PolicyStatement(
                    actions=["sagemaker:InvokeEndpoint"],
                    resources=[endpoints],
                    conditions={
                        "StringEquals": {
                            "aws:ResourceTag/smkit:deployment": deployment,
                            "aws:ResourceTag/smkit:environment": environment,
                        }
                    },
                )
            ],
        )
        acknowledge(
            policy,
            {
                f"AwsSolutions-IAM5[Resource::{_render(self.resolve(endpoints))}]": (
                    "Endpoint names are generated; access is limited by the deployment's resource tags."
                )
            },
        )
        self.role = iam.Role(
            self,
            "SmokeTestRole",
            assumed_by=iam.AccountPrincipal(trusted_account).with_conditions(
                {"ArnEquals": {"aws:PrincipalArn": trusted_role_arn}}
            ),
            description="Assumed by the pipeline's smoke test to invoke the staged endpoint",
            managed_policies=[policy],
            # A name known at synth time, so the pipeline account can be granted sts:AssumeRole on it.
            role_name=cdk.PhysicalName.GENERATE_IF_NEEDED,
        )
        self.role_arn_output = cdk.CfnOutput(self, "SmokeTestRoleArn", value=self.role.role_arn)


class PipelineArtifacts(Construct):
    """The pipeline's artifact store: KMS (rotated) so target accounts can read it, versioned, access-logged;
    and the CodeBuild projects' log group, encrypted with the same key, expiring after ``log_retention_days``
    (CodeBuild's default groups never expire)."""

    def __init__(self, scope: Construct, id_: str, *, log_retention_days: int = 90) -> None:
        super().__init__(scope, id_)
        self.key = kms.Key(self, "Key", enable_key_rotation=True, description="Pipeline artifacts")
        allow_cloudwatch_logs(self.key)  # the build logs below are encrypted with it
        self.build_logs = logs.LogGroup(
            self,
            "BuildLogs",
            retention=retention_period(log_retention_days),
            encryption_key=self.key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.access_logs = access_log_bucket(self, "AccessLogs", ACCESS_LOG_BUCKET_REASONS)
        self.bucket = private_bucket(
            self,
            "Bucket",
            encryption_key=self.key,
            access_logs=(self.access_logs, "artifacts/"),
            lifecycle_rules=[s3.LifecycleRule(noncurrent_version_expiration=cdk.Duration.days(30))],
        )
        acknowledge(self.bucket, {rule: REPLICATION_REASON for rule in REPLICATION_RULES})


def join_as_sub(value: Any) -> dict[str, str] | None:
    """``{"Fn::Join": ["", [str | Ref | GetAtt, ...]]}`` as the equivalent ``{"Fn::Sub": "..."}`` (else None)."""
    if not (isinstance(value, dict) and list(value) == ["Fn::Join"] and value["Fn::Join"][0] == ""):
        return None
    text = ""
    for part in value["Fn::Join"][1]:
        if isinstance(part, str):
            text += part.replace("${", "${!")
        elif isinstance(part, dict) and list(part) == ["Ref"]:
            text += "${" + part["Ref"] + "}"
        elif isinstance(part, dict) and list(part) == ["Fn::GetAtt"]:
            text += "${" + ".".join(part["Fn::GetAtt"]) + "}"
        else:
            return None
    return {"Fn::Sub": text}


def _render(value: Any) -> str:
    """A resolved policy value as cdk-nag prints it in finding ids (``<Logical.Attr>``, ``<Ref>``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return f"<{value['Ref']}>"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<" + ".".join(value["Fn::GetAtt"]) + ">"
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_render(p) for p in parts)
    return json.dumps(value)


def wildcard_findings(policy: iam.CfnPolicy) -> list[str]:
    """The ``Action::...`` / ``Resource::...`` wildcard findings cdk-nag's IAM5 reports for ``policy``."""
    document = cdk.Stack.of(policy).resolve(policy.policy_document)
    findings: set[str] = set()
    for statement in document.get("Statement", []):
        for key in ("Action", "Resource"):
            values = statement.get(key, [])
            for value in values if isinstance(values, list) else [values]:
                rendered = _render(value)
                if "*" in rendered:
                    findings.add(f"{key}::{rendered}")
    return sorted(findings)


# What each wildcard in CDK Pipelines' generated policies covers: (finding pattern, reason). A finding no
# pattern matches fails the synth (wildcard_reasons), so a new generated wildcard is reviewed, not waved by.
GENERATED_WILDCARDS: tuple[tuple[str, str], ...] = (
    (
        r"^Action::kms:(GenerateDataKey|ReEncrypt)\*$",
        "Data-key actions CDK grants on the pipeline's own artifact key only (Key.grantEncryptDecrypt).",
    ),
    (
        r"^Action::s3:(Abort|DeleteObject|GetBucket|GetObject|List)\*$",
        "Object actions CDK grants on the pipeline's own artifact bucket only (Bucket.grantReadWrite).",
    ),
    (
        r"^Resource::<Artifacts\w+\.Arn>/\*$",
        "Objects of the pipeline's own artifact bucket, named per execution by CodePipeline.",
    ),
    (
        r"^Resource::arn:\*:iam::\d{12}:role/\*$",
        "sts:AssumeRole limited by the statement's iam:ResourceTag/aws-cdk:bootstrap-role condition to the cdk "
        "bootstrap deploy and publishing roles.",
    ),
    (
        r"^Resource::arn:[\w-]+:codebuild:[\w-]+:\d{12}:report-group/(<\w+>-)?\*$",
        "Test report groups CodeBuild names after the project (<project>-*; per-asset publishing projects: *).",
    ),
    (
        r"^Resource::arn:[\w-]+:logs:[\w-]+:\d{12}:log-group:/aws/codebuild/(<\w+>:)?\*$",
        "Log streams of the project's own /aws/codebuild/<project> log group (per-asset publishing projects, "
        "which CDK Pipelines creates per asset: /aws/codebuild/*).",
    ),
    (
        r"^Resource::\*$",
        "Exactly two generated statements: the self-mutation's cloudformation:DescribeStacks + s3:ListBucket, and "
        "the asset publishing's codebuild:BatchGetBuilds/StartBuild/StopBuild, as CDK Pipelines writes them.",
    ),
)


def wildcard_reasons(policy: iam.CfnPolicy) -> dict[str, str]:
    """``AwsSolutions-IAM5[finding] -> reason`` for each wildcard of ``policy``; unknown findings raise."""
    reasons = {}
    for finding in wildcard_findings(policy):
        reason = next((r for pattern, r in GENERATED_WILDCARDS if re.match(pattern, finding)), None)
        if reason is None:
            raise ValueError(
                f"{policy.node.path}: CDK Pipelines generated a wildcard no reason covers: {finding}; "
                "review it and add a pattern to smkit.cdk.pipeline_parts.GENERATED_WILDCARDS"
            )
        reasons[f"AwsSolutions-IAM5[{finding}]"] = reason
    return reasons


INLINE_POLICIES = "CDK Pipelines attaches each role's grants as that role's default policy; no other use."
INLINE_POLICY_RULES = ("HIPAA.Security-IAMNoInlinePolicy", "NIST.800.53.R5-IAMNoInlinePolicy")
PIPELINE_REASONS = {
    "HIPAA.Security-CodeBuildProjectSourceRepoUrl": (
        "The CodeBuild projects read their source from pipeline artifacts; no repository URL or token is set."
    ),
}
REPLICATION_REASON = "Pipeline artifacts are transient build outputs; the source repository is the record."
REPLICATION_RULES = ("HIPAA.Security-S3BucketReplicationEnabled", "NIST.800.53.R5-S3BucketReplicationEnabled")
ACCESS_LOG_BUCKET_REASONS = {
    "AwsSolutions-S1": "This is the access-log target; logging it to itself would loop.",
    "HIPAA.Security-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
    "NIST.800.53.R5-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
    "HIPAA.Security-S3DefaultEncryptionKMS": "S3 server access logging only delivers to SSE-S3 buckets.",
    "NIST.800.53.R5-S3DefaultEncryptionKMS": "S3 server access logging only delivers to SSE-S3 buckets.",
    **{rule: "Access logs of transient pipeline artifacts." for rule in REPLICATION_RULES},
}
REPLICATION_BUCKET_REASONS = {
    "AwsSolutions-S1": REPLICATION_REASON,
    "HIPAA.Security-S3BucketLoggingEnabled": REPLICATION_REASON,
    "NIST.800.53.R5-S3BucketLoggingEnabled": REPLICATION_REASON,
    "HIPAA.Security-S3BucketVersioningEnabled": REPLICATION_REASON,
    "NIST.800.53.R5-S3BucketVersioningEnabled": REPLICATION_REASON,
    "HIPAA.Security-S3BucketReplicationEnabled": REPLICATION_REASON,
    "NIST.800.53.R5-S3BucketReplicationEnabled": REPLICATION_REASON,
}
