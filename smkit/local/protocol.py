"""The SageMaker Runtime REST protocol: header names, limits and the parsed request.

Header names and locations are those of the botocore ``sagemaker-runtime`` service model (2017-05-13):
InvokeEndpoint sends ``Content-Type``/``Accept`` as they are; InvokeEndpointAsync sends them as
``X-Amzn-SageMaker-Content-Type``/``X-Amzn-SageMaker-Accept`` and answers 202 with ``InferenceId`` in the
JSON body and the output/failure locations in headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Request headers (InvokeEndpoint / InvokeEndpointAsync).
CUSTOM_ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"
TARGET_MODEL = "X-Amzn-SageMaker-Target-Model"
TARGET_VARIANT = "X-Amzn-SageMaker-Target-Variant"
TARGET_CONTAINER = "X-Amzn-SageMaker-Target-Container-Hostname"
INFERENCE_ID = "X-Amzn-SageMaker-Inference-Id"
INFERENCE_COMPONENT = "X-Amzn-SageMaker-Inference-Component"
ASYNC_CONTENT_TYPE = "X-Amzn-SageMaker-Content-Type"
ASYNC_ACCEPT = "X-Amzn-SageMaker-Accept"
INPUT_LOCATION = "X-Amzn-SageMaker-InputLocation"
OUTPUT_PATH_EXTENSION = "X-Amzn-SageMaker-S3OutputPathExtension"
OUTPUT_FILENAME = "X-Amzn-SageMaker-Filename"
REQUEST_TTL = "X-Amzn-SageMaker-RequestTTLSeconds"
INVOCATION_TIMEOUT = "X-Amzn-SageMaker-InvocationTimeoutSeconds"
# Response headers.
INVOKED_VARIANT = "x-Amzn-Invoked-Production-Variant"
OUTPUT_LOCATION = "X-Amzn-SageMaker-OutputLocation"
FAILURE_LOCATION = "X-Amzn-SageMaker-FailureLocation"

# Payload limits in bytes (docs/hosting-contract.md and docs/serverless-async.md).
REALTIME_PAYLOAD_LIMIT = 6_291_456
SERVERLESS_PAYLOAD_LIMIT = 4 * 1024 * 1024
ASYNC_INLINE_BODY_LIMIT = 128_000
# InvokeEndpointAsync ranges and defaults (docs/serverless-async.md).
REQUEST_TTL_RANGE = (60, 21_600)
INVOCATION_TIMEOUT_RANGE = (1, 3_600)
DEFAULT_REQUEST_TTL_S = 21_600
DEFAULT_INVOCATION_TIMEOUT_S = 900
# The service's CustomAttributes limit (service model: <= 1024 visible US-ASCII characters).
CUSTOM_ATTRIBUTES_LIMIT = 1024

# The account the local endpoint pretends to live in: moto's default account.
LOCAL_ACCOUNT = "123456789012"


@dataclass(frozen=True)
class Invocation:
    """One inference request as the containers of a variant will see it."""

    body: bytes
    content_type: str | None = None
    accept: str | None = None
    custom_attributes: str | None = None
    target_model: str | None = None
    target_variant: str | None = None
    target_container: str | None = None
    inference_id: str | None = None
    inference_component: str | None = None

    @classmethod
    def from_headers(
        cls, headers: Mapping[str, str], body: bytes, *, asynchronous: bool = False
    ) -> Invocation:
        """Read the InvokeEndpoint (or InvokeEndpointAsync) headers; ``headers`` must be case-insensitive."""
        return cls(
            body=body,
            content_type=headers.get(ASYNC_CONTENT_TYPE if asynchronous else "content-type"),
            accept=headers.get(ASYNC_ACCEPT if asynchronous else "accept"),
            custom_attributes=headers.get(CUSTOM_ATTRIBUTES),
            target_model=headers.get(TARGET_MODEL),
            target_variant=headers.get(TARGET_VARIANT),
            target_container=headers.get(TARGET_CONTAINER),
            inference_id=headers.get(INFERENCE_ID),
            inference_component=headers.get(INFERENCE_COMPONENT),
        )

    def container_headers(self, *, content_type: str | None, accept: str | None) -> dict[str, str]:
        """The headers that reach a container (docs/hosting-contract.md): Content-Type, Accept, custom attributes."""
        headers: dict[str, str] = {}
        if content_type:
            headers["Content-Type"] = content_type
        if accept:
            headers["Accept"] = accept
        if self.custom_attributes is not None:
            headers[CUSTOM_ATTRIBUTES] = self.custom_attributes
        return headers
