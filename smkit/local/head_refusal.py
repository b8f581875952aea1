"""Bounded request heads for the local gateway: AWS's HTTP header limits, answered in the service's shape.

The bounds are the kit's one implementation, :mod:`smkit.http1.head_limits`, which the gateway's server
(:class:`smkit.http1.Server`) applies: request line 16 KiB, a single header 16 KiB, the entire request
header 64 KiB, as AWS documents them for its HTTP front doors
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas,
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html#http-400-issues),
plus at most 100 header fields (none documented by AWS; gunicorn's and the container front end's bound).
SageMaker Runtime documents no limits of its own (docs/request-security.md).

The refusal (:func:`service_refusal`, the ``refusal`` of the gateway's server) is 400 in the service's
error shape without an error type, as the front door (not the service) answers: a JSON ``message`` naming
the field, its size, the limit and the fix, and an ``x-amzn-RequestId``; botocore reports the status as
the code. The connection is closed; the gateway keeps serving others.
"""

from __future__ import annotations

import json

from smkit.http1 import ALB_LIMITS
from smkit.local.error_shapes import new_request_id

MAX_REQUEST_LINE = ALB_LIMITS.request_line
MAX_HEADER_FIELD = ALB_LIMITS.header_field
MAX_REQUEST_HEADERS = ALB_LIMITS.headers
MAX_HEADER_FIELDS = ALB_LIMITS.fields


def service_refusal(status: int, kind: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A refused request in SageMaker Runtime's shape: ``{"message"}`` and a request id."""
    headers = [(b"content-type", b"application/json"), (b"x-amzn-RequestId", new_request_id().encode())]
    return headers, json.dumps({"message": message}).encode()
