"""Where a Model's or an endpoint config's containers attach to a VPC: ``vpc``, ``vpc_subnets`` and
``security_groups``, as aws-cdk-lib's constructs take them (``aws_lambda.Function``, ``aws_ecs.FargateService``).

SageMaker writes them into VpcConfig (``Subnets``, ``SecurityGroupIds``) and creates the network interfaces
with the execution role, which needs the ``ec2:*NetworkInterface*`` permissions of
:meth:`smkit.cdk.constructs.execution_role.ExecutionRole.grant_vpc_access`.
https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from smkit.aws.limits import MAX_SECURITY_GROUPS, MAX_SUBNETS

VpcConfig = TypeVar("VpcConfig")


@dataclass(frozen=True)
class Placement:
    """The subnets and security groups a resource's containers attach to; ``connections`` for
    ``ec2.IConnectable`` (``model.connections.allow_to(database, ec2.Port.tcp(5432))``)."""

    subnets: tuple[ec2.ISubnet, ...]
    security_groups: tuple[ec2.ISecurityGroup, ...]

    @property
    def subnet_ids(self) -> list[str]:
        return [s.subnet_id for s in self.subnets]

    @property
    def security_group_ids(self) -> list[str]:
        return [g.security_group_id for g in self.security_groups]

    @property
    def connections(self) -> ec2.Connections:
        return ec2.Connections(security_groups=list(self.security_groups))


def vpc_config(placement: Placement | None, kind: Callable[..., VpcConfig]) -> VpcConfig | None:
    """The resource's VpcConfig property (``kind``: ``CfnModel.VpcConfigProperty`` or
    ``CfnEndpointConfig.VpcConfigProperty``) of ``placement``; None outside a VPC."""
    if placement is None:
        return None
    return kind(subnets=placement.subnet_ids, security_group_ids=placement.security_group_ids)


def place(
    scope: Construct,
    *,
    vpc: ec2.IVpc | None,
    vpc_subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
) -> Placement | None:
    """The placement of ``scope``'s containers, or None when none of the three is given.

    With ``vpc``: the subnets ``vpc_subnets`` selects (default: the VPC's private subnets, as aws-cdk-lib
    selects them) and ``security_groups`` (default: a new security group ``SecurityGroup`` in the VPC,
    outbound open, no inbound rule). Without ``vpc``: ``vpc_subnets`` must list its subnets
    (``ec2.SubnetSelection(subnets=[ec2.Subnet.from_subnet_id(...)])``) and ``security_groups`` be given.
    """
    if vpc is None and vpc_subnets is None and not security_groups:
        return None
    problems = []
    if vpc is not None:
        subnets = tuple(vpc.select_subnets(**_selection(vpc_subnets)).subnets)
    elif vpc_subnets is not None and vpc_subnets.subnets:
        subnets = tuple(vpc_subnets.subnets)
    else:
        subnets = ()
        problems.append(
            "vpc=None: give the VPC (vpc=my_vpc), or list the subnets "
            "(vpc_subnets=ec2.SubnetSelection(subnets=[ec2.Subnet.from_subnet_id(...)]))"
        )
    groups = tuple(security_groups or ())
    if not groups:
        if vpc is None:
            problems.append("security_groups=None: without vpc give the security groups")
        else:
            groups = (
                ec2.SecurityGroup(
                    scope,
                    "SecurityGroup",
                    vpc=vpc,
                    description=f"SageMaker containers of {scope.node.path}",
                    allow_all_outbound=True,
                ),
            )
    if vpc is not None and not subnets:
        problems.append("vpc_subnets: selects no subnet of the VPC; choose a subnet type the VPC has")
    if len(subnets) > MAX_SUBNETS:  # VpcConfig.Subnets, checked against SageMaker's API model
        problems.append(f"vpc_subnets: {len(subnets)} subnets selected (at most {MAX_SUBNETS})")
    if len(groups) > MAX_SECURITY_GROUPS:
        problems.append(f"security_groups: {len(groups)} given (at most {MAX_SECURITY_GROUPS})")
    if problems:
        raise ValueError(f"{scope.node.path}: invalid VPC placement: " + "; ".join(problems))
    return Placement(subnets, groups)


# ec2.SubnetSelection's fields: IVpc.select_subnets takes them as keyword arguments.
SELECTION_FIELDS = (
    "availability_zones",
    "one_per_az",
    "subnet_filters",
    "subnet_group_name",
    "subnets",
    "subnet_type",
)


def _selection(selection: ec2.SubnetSelection | None) -> dict[str, Any]:
    if selection is None:
        return {}
    return {
        name: getattr(selection, name) for name in SELECTION_FIELDS if getattr(selection, name) is not None
    }
