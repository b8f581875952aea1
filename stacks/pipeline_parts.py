"""Pieces of the pipeline stack: the artifact store, the staging smoke-test role, and the helpers that keep
CDK Pipelines' generated template clean for cfn-lint and cdk-nag (each acknowledgement with its reason)."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from stacks.constructs.acknowledge import acknowledge


class SmokeTestAccessStack(cdk.Stack):
    """A role in the staging account that the pipeline account may assume to invoke the staged endpoint.

    The permission names no endpoint ARN (a cross-stack export would block the endpoint's replacement);
    it is limited to endpoints tagged with this deployment's ``smkit:deployment`` / ``smkit:environment``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        deployment: str,
        environment: str,
        trusted_account: str,
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
            assumed_by=iam.AccountPrincipal(trusted_account),
            description="Assumed by the pipeline's smoke test to invoke the staged endpoint",
            managed_policies=[policy],
            # A name known at synth time, so the pipeline account can be granted sts:AssumeRole on it.
            role_name=cdk.PhysicalName.GENERATE_IF_NEEDED,
        )
        self.role_arn_output = cdk.CfnOutput(self, "SmokeTestRoleArn", value=self.role.role_arn)


class PipelineArtifacts(Construct):
    """The pipeline's artifact store: KMS (rotated) so target accounts can read it, versioned, access-logged."""

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self.key = kms.Key(self, "Key", enable_key_rotation=True, description="Pipeline artifacts")
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # the only encryption access-log delivery supports
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))],
        )
        acknowledge(self.access_logs, ACCESS_LOG_BUCKET_REASONS)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="artifacts/",
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


GENERATED_GRANTS = (
    "Generated by CDK Pipelines: object-level access to the pipeline's own artifact bucket and key, its "
    "CodeBuild log groups and report groups, and assuming the cdk bootstrap roles of the target accounts."
)
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
