"""The SageMaker Runtime REST protocol: the parsed request (header names and limits: :mod:`smkit.contract`).

Header names and locations are those of the botocore ``sagemaker-runtime`` service model (2017-05-13):
InvokeEndpoint sends ``Content-Type``/``Accept`` as they are; InvokeEndpointWithResponseStream sends Accept as
``X-Amzn-SageMaker-Accept``; InvokeEndpointAsync sends them as
``X-Amzn-SageMaker-Content-Type``/``X-Amzn-SageMaker-Accept`` and answers 202 with ``InferenceId`` in the
JSON body and the output/failure locations in headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from smkit.contract import (
    ASYNC_ACCEPT,
    ASYNC_CONTENT_TYPE,
    CUSTOM_ATTRIBUTES,
    INFERENCE_COMPONENT,
    INFERENCE_ID,
    SESSION_ID,
    TARGET_CONTAINER,
    TARGET_MODEL,
    TARGET_VARIANT,
)

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
    session_id: str | None = None  # SessionId: NEW_SESSION or a live session's id (smkit/local/sessions.py)
    stream: bool = False  # InvokeEndpointWithResponseStream: the container's answer is read as a stream

    @classmethod
    def from_headers(
        cls, headers: Mapping[str, str], body: bytes, *, asynchronous: bool = False, stream: bool = False
    ) -> Invocation:
        """Read the InvokeEndpoint (InvokeEndpointAsync, InvokeEndpointWithResponseStream) headers.

        ``headers`` must be case-insensitive. The asynchronous and streaming operations send Accept as
        ``X-Amzn-SageMaker-Accept``.
        """
        return cls(
            body=body,
            stream=stream,
            content_type=headers.get(ASYNC_CONTENT_TYPE if asynchronous else "content-type"),
            accept=headers.get(ASYNC_ACCEPT if asynchronous or stream else "accept"),
            custom_attributes=headers.get(CUSTOM_ATTRIBUTES),
            target_model=headers.get(TARGET_MODEL),
            target_variant=headers.get(TARGET_VARIANT),
            target_container=headers.get(TARGET_CONTAINER),
            inference_id=headers.get(INFERENCE_ID),
            inference_component=headers.get(INFERENCE_COMPONENT),
            session_id=headers.get(SESSION_ID),
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
        if self.session_id is not None:
            headers[SESSION_ID] = self.session_id
        return headers
