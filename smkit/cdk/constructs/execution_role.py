"""The SageMaker execution role: only what the deployed variant needs.

Starts with ``cloudwatch:PutMetricData``; the resources grant it the rest, as aws-cdk-lib's resources do
(``resource.grant_x(execution_role) -> iam.Grant``): CloudWatch Logs for the endpoint's and the components'
own log groups (:meth:`smkit.cdk.constructs.logs.DeploymentLogs.grant_write`), image pull
(:func:`grant_pull`), model data, KMS (:func:`grant_key_use`), async output, data capture
(:meth:`smkit.cdk.constructs.storage.EndpointBucket.grant_write`), SNS and rollback alarms. No AWS managed policies. Statements that must name ``*`` (actions without resource-level
permissions) each sit alone in their own managed policy, and the cdk-nag acknowledgement of that ``*``
is attached to that policy only, so it covers exactly that statement.
Permissions reference: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html#sagemaker-roles-createmodel-perms
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge, nag_arn
from smkit.cdk.constructs.network import Placement

PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
# SageMaker grants itself the key use it needs via grants created with the role's identity.
KMS_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]


CONFUSED_DEPUTY_URL = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html"
)


def confused_deputy_conditions(stack: cdk.Stack) -> dict[str, dict[str, str]]:
    """The trust policy's conditions: SageMaker may assume the role only on behalf of this account's resources
    in this region (``aws:SourceAccount`` and ``aws:SourceArn``), as AWS's confused-deputy guidance shows.
    """
    return {
        "StringEquals": {"aws:SourceAccount": stack.account},
        "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:sagemaker:{stack.region}:{stack.account}:*"},
    }


@jsii.implements(iam.IPrincipal)
class _ManagedPolicyPrincipal:
    """The role as a principal whose granted statements land in the role's customer-managed policy (CDK's own
    ``add_to_principal_policy`` would write an inline DefaultPolicy, a HIPAA/NIST IAMNoInlinePolicy finding)."""

    def __init__(self, role: iam.IRole, policy: iam.ManagedPolicy) -> None:
        self._role = role
        self._policy = policy

    @property
    def grant_principal(self) -> iam.IPrincipal:
        return self

    @property
    def assume_role_action(self) -> str:
        return self._role.assume_role_action

    @property
    def policy_fragment(self) -> iam.PrincipalPolicyFragment:
        return self._role.policy_fragment

    @property
    def principal_account(self) -> str | None:
        return self._role.principal_account

    def add_to_policy(self, statement: iam.PolicyStatement) -> bool:
        self._policy.add_statements(statement)
        return True

    def add_to_principal_policy(self, statement: iam.PolicyStatement) -> iam.AddToPrincipalPolicyResult:
        self._policy.add_statements(statement)
        return iam.AddToPrincipalPolicyResult(statement_added=True, policy_dependable=self._policy)


@jsii.implements(iam.IGrantable)
class _PolicyGrantee:
    def __init__(self, principal: iam.IPrincipal) -> None:
        self._principal = principal

    @property
    def grant_principal(self) -> iam.IPrincipal:
        return self._principal


class Placed(Protocol):
    """A resource whose containers may attach to a VPC (an ``InferenceModel``, an ``EndpointConfiguration``)."""

    @property
    def placement(self) -> Placement | None: ...


@jsii.implements(iam.IGrantable)
class ExecutionRole(Construct):
    """An IAM role SageMaker assumes to pull the image, read model data and write results; only for this
    account's SageMaker resources in this region (:func:`confused_deputy_conditions`).

    An ``iam.IGrantable``, as ``aws_lambda.Function`` is: grant it access on the resource
    (``bucket.grant_read(execution_role)``, ``endpoint_bucket.grant_write(execution_role, prefixes)``); the
    statements land in its customer-managed policy ``Policy``. Where an ``iam.IRole`` is expected, pass
    :attr:`role`; :attr:`role_arn`, :attr:`role_name`, :meth:`grant`, :meth:`grant_pass_role`,
    :meth:`grant_assume_role` and :meth:`add_managed_policy` delegate to it.

    ``role``: a role of your own (``iam.Role`` or ``iam.Role.from_role_arn``) instead of one created here;
    it must trust ``sagemaker.amazonaws.com``. Grants attach managed policies to it either way.
    """

    def __init__(self, scope: Construct, id_: str, *, role: iam.IRole | None = None) -> None:
        super().__init__(scope, id_)
        self.role: iam.IRole = role or iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com").with_conditions(
                confused_deputy_conditions(cdk.Stack.of(self))
            ),
            description=f"SageMaker execution role of {cdk.Stack.of(self).stack_name}",
        )
        self.role_arn: str = self.role.role_arn
        self.role_name: str = self.role.role_name
        # A customer-managed policy rather than CDK's inline DefaultPolicy (HIPAA/NIST IAMNoInlinePolicy).
        self.policy = iam.ManagedPolicy(self, "Policy", roles=[self.role])
        self._principal = _ManagedPolicyPrincipal(self.role, self.policy)
        self._wildcard_grants: dict[str, iam.Grant] = {}
        # What CreateModel checks with the role (image pull, model data, keys): the Model waits for these.
        self.access_policies: list[iam.ManagedPolicy] = [self.policy]
        # PutMetricData has no resource-level permissions; the namespace condition limits it to SageMaker's.
        self.add_wildcard_statement(
            "Metrics",
            iam.PolicyStatement(
                sid="PutEndpointMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
            ),
            "cloudwatch:PutMetricData has no resource-level permissions; limited to SageMaker's namespaces "
            "by the cloudwatch:namespace condition.",
        )

    @property
    def grant_principal(self) -> iam.IPrincipal:
        """The role, with granted statements going into its managed policy (``iam.IGrantable``)."""
        return self._principal

    def grant(self, grantee: iam.IPrincipal, *actions: str) -> iam.Grant:
        """Grant ``grantee`` the IAM ``actions`` on this role (``iam.IRole.grant``)."""
        return self.role.grant(grantee, *actions)

    def grant_pass_role(self, grantee: iam.IPrincipal) -> iam.Grant:
        """Allow ``grantee`` to pass this role to SageMaker (``iam:PassRole``)."""
        return self.role.grant_pass_role(grantee)

    def grant_assume_role(self, grantee: iam.IPrincipal) -> iam.Grant:
        """Allow ``grantee`` to assume this role (``sts:AssumeRole``)."""
        return self.role.grant_assume_role(grantee)

    def add_managed_policy(self, policy: iam.IManagedPolicy) -> None:
        """Attach ``policy`` to the role."""
        self.role.add_managed_policy(policy)

    def add_to_principal_policy(self, statement: iam.PolicyStatement) -> iam.AddToPrincipalPolicyResult:
        """Add ``statement`` to the role's managed policy (``iam.IPrincipal``)."""
        return self._principal.add_to_principal_policy(statement)

    def add_to_policy(self, statement: iam.PolicyStatement) -> bool:
        """Add ``statement`` to the role's managed policy."""
        return self._principal.add_to_policy(statement)

    def add_wildcard_statement(self, id_: str, statement: iam.PolicyStatement, reason: str) -> iam.Grant:
        """Put ``statement`` (resource ``*``) alone into managed policy ``id_``; acknowledge that ``*`` there only.
        Once per ``id_``: a second call returns the first call's grant."""
        if id_ in self._wildcard_grants:
            return self._wildcard_grants[id_]
        policy = iam.ManagedPolicy(self, id_, roles=[self.role])
        grant = grant_statement(_PolicyGrantee(_ManagedPolicyPrincipal(self.role, policy)), statement)
        acknowledge(policy, {"AwsSolutions-IAM5[Resource::*]": f"Statement {statement.sid}: {reason}"})
        self.access_policies.append(policy)
        self._wildcard_grants[id_] = grant
        return grant

    def grant_vpc_access(self, *placed: Placed) -> None:
        """Let SageMaker create the network interfaces of ``placed`` (models, endpoint configs in a VPC) in their
        subnets and security groups with this role (:func:`grant_vpc_access`); those in no VPC add nothing."""
        placements = [p.placement for p in placed if p.placement is not None]
        if placements:
            grant_vpc_access(
                self,
                subnet_ids=list(dict.fromkeys(s for p in placements for s in p.subnet_ids)),
                security_group_ids=list(dict.fromkeys(g for p in placements for g in p.security_group_ids)),
            )

    def acknowledge(self, reasons: dict[str, str]) -> None:
        """Acknowledge cdk-nag findings of the role's main managed policy (not of its ``*`` policies)."""
        acknowledge(self.policy, reasons)

    def separate_policy(self, id_: str) -> iam.IGrantable:
        """A grantee whose granted statements go into a managed policy ``id_`` of their own, attached to the
        role and not among :attr:`access_policies` (what the Model waits for): for grants on resources that
        depend on the Model, where one policy for both would be a dependency cycle."""
        policy = iam.ManagedPolicy(self, id_, roles=[self.role])
        return _PolicyGrantee(_ManagedPolicyPrincipal(self.role, policy))


def grant_statement(grantee: iam.IGrantable, statement: iam.PolicyStatement) -> iam.Grant:
    """Grant ``grantee`` exactly ``statement`` (actions, resources, conditions and sid) on its principal."""
    grant = iam.Grant.add_to_principal(
        grantee=grantee,
        actions=statement.actions,
        resource_arns=statement.resources,
        conditions=statement.conditions or None,
    )
    if statement.sid is not None and grant.principal_statement is not None:
        grant.principal_statement.sid = statement.sid
    return grant


def acknowledge_grant(grantee: iam.IGrantable, reasons: dict[str, str]) -> None:
    """Acknowledge cdk-nag findings a grant causes where the grantee's statements land: an
    :class:`ExecutionRole`'s managed policy, or the grantee's principal (a role, user or group)."""
    if isinstance(grantee, ExecutionRole):
        grantee.acknowledge(reasons)
    elif isinstance(grantee.grant_principal, Construct):
        acknowledge(grantee.grant_principal, reasons)


def grant_wildcard(
    grantee: iam.IGrantable, id_: str, statement: iam.PolicyStatement, reason: str
) -> iam.Grant:
    """Grant ``statement`` (resource ``*``): into a managed policy of its own for an :class:`ExecutionRole`
    (:meth:`ExecutionRole.add_wildcard_statement`), else onto the grantee's principal, acknowledged there."""
    if isinstance(grantee, ExecutionRole):
        return grantee.add_wildcard_statement(id_, statement, reason)
    grant = grant_statement(grantee, statement)
    acknowledge_grant(grantee, {"AwsSolutions-IAM5[Resource::*]": f"Statement {statement.sid}: {reason}"})
    return grant


def grant_key_use(key: kms.IKey, grantee: iam.IGrantable) -> iam.Grant:
    """Encrypt/decrypt with ``key`` and let SageMaker create grants on it for its own resources (it creates
    them with the execution role's identity)."""
    use = iam.Grant.add_to_principal(grantee=grantee, actions=KMS_ACTIONS, resource_arns=[key.key_arn])
    create = iam.Grant.add_to_principal(
        grantee=grantee,
        actions=["kms:CreateGrant"],
        resource_arns=[key.key_arn],
        conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
    )
    return use.combine(create)


def grant_pull(grantee: iam.IGrantable, repository_arn: str) -> iam.Grant:
    """Pull images from one ECR repository (plus the registry login, which needs ``*``)."""
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=PULL_ACTIONS, resource_arns=[repository_arn])
    grant_wildcard(
        grantee,
        "RegistryLogin",
        iam.PolicyStatement(
            sid="EcrAuthorizationToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]
        ),
        "ecr:GetAuthorizationToken has no resource-level permissions; the registry login needs '*'.",
    )
    return grant


def grant_vpc_access(
    role: ExecutionRole, *, subnet_ids: Sequence[str], security_group_ids: Sequence[str]
) -> None:
    """ENI management for a Model in a VPC: create only in the given subnets and security groups.

    The ``ec2:Describe*`` calls SageMaker makes have no resource-level permissions and need ``*``
    (https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html).
    """
    stack = cdk.Stack.of(role)

    def arn(resource: str, name: str) -> str:
        return stack.format_arn(service="ec2", resource=resource, resource_name=name)

    eni = arn("network-interface", "*")
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["ec2:CreateNetworkInterface"],
            resources=[eni]
            + [arn("subnet", s) for s in subnet_ids]
            + [arn("security-group", g) for g in security_group_ids],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=[
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            resources=[eni],
        )
    )
    role.add_wildcard_statement(
        "VpcDescribe",
        iam.PolicyStatement(
            sid="VpcDescribe",
            actions=[
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
            ],
            resources=["*"],
        ),
        "the ec2:Describe* calls SageMaker makes for a VPC-attached model have no resource-level permissions.",
    )
    acknowledge(
        role.policy,
        {
            f"AwsSolutions-IAM5[Resource::{nag_arn(role, 'ec2', 'network-interface/*')}]": (
                "ENI statements: SageMaker names the ENIs it creates in the model's subnets."
            ),
        },
    )
