"""The ``local`` section: how ``smkit local-endpoint`` runs this deployment; the stacks never read it."""

from __future__ import annotations

from pydantic import Field

from smkit.config.base import Frozen


class LocalOptions(Frozen):
    """How the local endpoint (``smkit local-endpoint``, ``smkit.local.LocalEndpoint``) treats requests.

    Nothing here reaches a template: it makes the local endpoint stricter, never different from AWS.
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html
    """

    verify_signatures: bool = Field(
        False,
        description="Check the SigV4 signature of every runtime call as SageMaker does (region, service "
        "sagemaker, 5-minute clock skew, payload hash) against the local credentials, and refuse a bad one "
        "with the service's 403 (docs/request-security.md); the same as smkit local-endpoint "
        "--verify-signatures. Default: false (any or no signature is accepted locally). "
        "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html",
    )
