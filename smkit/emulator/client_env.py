"""The environment that points the CDK CLI, the AWS CLI and boto3 at moto's server.

docs/toolchain.md: the CDK CLI bootstraps and deploys into moto with dummy credentials and
``AWS_ENDPOINT_URL=http://localhost:PORT``; the host must be ``localhost``, not ``127.0.0.1``, or
CreateChangeSet cannot find the template in the bootstrap bucket (moto matches virtual-host-style S3
URLs on ``*.localhost``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

DEFAULT_REGION = "us-east-1"
# moto's default account id (moto.core.DEFAULT_ACCOUNT_ID); STS GetCallerIdentity answers with it.
ACCOUNT_ID = "123456789012"
DUMMY_ACCESS_KEY_ID = "testing"
DUMMY_SECRET_ACCESS_KEY = "testing"

# Variables that would send a child process to a real account or a real profile instead of the emulator.
_REAL_AWS_VARIABLES = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CA_BUNDLE",
)


def endpoint_url_for(port: int) -> str:
    """The endpoint URL for a moto server listening on 127.0.0.1:``port`` (spelled ``localhost``)."""
    return f"http://localhost:{port}"


def aws_environment(endpoint_url: str, *, region: str = DEFAULT_REGION) -> dict[str, str]:
    """Variables for a process that must talk to the emulator and nothing else.

    Dummy credentials, the region, ``AWS_ENDPOINT_URL`` for every service, no instance-metadata lookups,
    no shared config/credentials files, and the CDK CLI's network side-trips (version check, telemetry,
    Node support banners) switched off so that it runs offline.
    """
    return {
        "AWS_ACCESS_KEY_ID": DUMMY_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET_ACCESS_KEY,
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "CDK_DISABLE_VERSION_CHECK": "true",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }


def child_environment(
    endpoint_url: str, *, region: str = DEFAULT_REGION, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: os.environ) minus real-AWS variables, plus :func:`aws_environment`."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if k not in _REAL_AWS_VARIABLES}
    env.update(aws_environment(endpoint_url, region=region))
    return env


def export_lines(variables: Mapping[str, str]) -> str:
    """``export NAME=value`` lines for ``eval "$(smkit emulator env)"``."""
    import shlex

    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in sorted(variables.items()))
