"""Local SageMaker: a deployment config's endpoint on 127.0.0.1 behind the SageMaker Runtime REST API.

:class:`LocalEndpoint` starts one serving-runtime process per container per production variant and a
gateway implementing InvokeEndpoint and InvokeEndpointAsync with the service's headers and errors, so the
unmodified boto3 ``sagemaker-runtime`` client works against it.
"""

from smkit.local.runtime import EndpointRuntime, LocalSettings
from smkit.local.server import LocalEndpoint, LocalEndpointError

__all__ = ["EndpointRuntime", "LocalEndpoint", "LocalEndpointError", "LocalSettings"]
