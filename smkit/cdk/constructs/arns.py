"""ARNs an app names but does not create: SageMaker resources (``from_model_name``, ``from_endpoint_name``, ...)
and the patterns of a service's resources that resource policies' ``ArnLike`` conditions match."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct


def sagemaker_arn(scope: Construct, resource: str, name: str) -> str:
    """The ARN of SageMaker resource ``resource/name`` in ``scope``'s stack. SageMaker writes the names in its
    ARNs lower-cased (``arn:aws:sagemaker:us-east-1:111122223333:endpoint/churn-prod``); a token is kept as is.
    https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsagemaker.html"""
    return cdk.Stack.of(scope).format_arn(
        service="sagemaker",
        resource=resource,
        resource_name=name if cdk.Token.is_unresolved(name) else name.lower(),
    )


def every_arn(scope: Construct, service: str, resource: str) -> str:
    """``arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE:*`` in ``scope``'s stack: every ``resource`` of ``service``
    in its account and region (an ``ArnLike`` condition's value)."""
    return cdk.Stack.of(scope).format_arn(
        service=service, resource=resource, resource_name="*", arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME
    )
