"""ARNs of SageMaker resources named, not created, by an app (``from_model_name``, ``from_endpoint_name``, ...)."""

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
