"""``InferenceEndpoint.grant_invoke(grantee, with_bearer_token=True)``: the OpenAI-compatible route's
``sagemaker:CallWithBearerToken`` besides InvokeEndpoint, in a policy of its own, cdk-nag and cfn-lint clean."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match, Template
from stack_support import cfn_lint_findings

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.endpoint import DeploymentGuardrails, InferenceEndpoint
from smkit.cdk.constructs.endpoint_config import EndpointConfiguration


def _synth(tmp_path: Path, *, with_bearer_token: bool) -> Path:
    app = cdk.App(outdir=str(tmp_path))
    add_compliance_checks(app)  # any unacknowledged cdk-nag finding fails the synth
    stack = cdk.Stack(app, "Caller")
    role = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    # The grantee's own inline policy (InvokeEndpoint) is the caller's choice, acknowledged by the caller.
    acknowledge(
        role,
        {
            "HIPAA.Security-IAMNoInlinePolicy": "the caller's role, scoped to two endpoints",
            "NIST.800.53.R5-IAMNoInlinePolicy": "the caller's role, scoped to two endpoints",
        },
    )
    for name in ("Blue", "Green"):
        config = EndpointConfiguration.from_endpoint_config_name(stack, f"{name}Config", name.lower())
        endpoint = InferenceEndpoint(stack, name, endpoint_config=config, deployment=DeploymentGuardrails())
        assert endpoint.grant_invoke(role, with_bearer_token=with_bearer_token).success
    app.synth()
    return tmp_path / "Caller.template.json"


def test_bearer_token_grant_is_its_own_policy_and_clean(tmp_path: Path) -> None:
    path = _synth(tmp_path, with_bearer_token=True)
    template = Template.from_json(json.loads(path.read_text()))
    template.resource_count_is("AWS::IAM::ManagedPolicy", 1)  # one per grantee, however many endpoints
    template.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": "sagemaker:CallWithBearerToken",
                        "Effect": "Allow",
                        "Resource": "*",
                        # As AWS's managed policy AmazonSageMakerJobRuntimeAccess limits it.
                        "Condition": {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}},
                    }
                ]
            }
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {"ManagedPolicyArns": [{"Ref": Match.string_like_regexp("CallerSageMakerBearerToken")}]},
    )
    # InvokeEndpoint still names each endpoint, never "*".
    policy = template.find_resources("AWS::IAM::Policy")
    (document,) = (resource["Properties"]["PolicyDocument"] for resource in policy.values())
    invoke = [s for s in document["Statement"] if "sagemaker:InvokeEndpoint" in s["Action"]]
    assert len(invoke) == 2 and all(s["Resource"] != "*" for s in invoke)
    assert cfn_lint_findings([path]) == []


def test_without_bearer_token_nothing_more_is_granted(tmp_path: Path) -> None:
    path = _synth(tmp_path, with_bearer_token=False)
    template = Template.from_json(json.loads(path.read_text()))
    template.resource_count_is("AWS::IAM::ManagedPolicy", 0)
    assert "CallWithBearerToken" not in path.read_text()
