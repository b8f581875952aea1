"""Local SageMaker: a deployment config's endpoint on 127.0.0.1 behind the SageMaker Runtime REST API.

:class:`LocalEndpoint` starts one serving-runtime process per container per production variant and a
gateway implementing InvokeEndpoint and InvokeEndpointAsync with the service's headers and errors, so the
unmodified boto3 ``sagemaker-runtime`` client works against it.

Exports are imported on first use, so that importing a submodule does not pull in the gateway's server
stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smkit.local.endpoint_server import LocalEndpoint, LocalEndpointError
    from smkit.local.runtime import EndpointRuntime, LocalSettings

_EXPORTS = {
    "EndpointRuntime": "smkit.local.runtime",
    "LocalSettings": "smkit.local.runtime",
    "LocalEndpoint": "smkit.local.endpoint_server",
    "LocalEndpointError": "smkit.local.endpoint_server",
}

__all__ = ["EndpointRuntime", "LocalEndpoint", "LocalEndpointError", "LocalSettings"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
