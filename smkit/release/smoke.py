"""Smoke-testing a deployed endpoint with ``smkit smoke-test`` (the sample payloads of the config's model).

The endpoint is given, found in a serving stack, or taken from the last recorded release of the config. A
role may be assumed first: the pipeline's staging account trusts the tooling account for exactly this call.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from smkit.config import ConfigError, load_deployment
from smkit.release.aws import client, endpoint_name_of
from smkit.release.history import read_releases, release_parameter
from smkit.release.shell import ReleaseError

SESSION_NAME = "smkit-smoke-test"


def smkit_executable() -> str:
    """The ``smkit`` console script next to this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("smkit")
    if beside.exists():
        return str(beside)
    found = shutil.which("smkit")
    if not found:
        raise ReleaseError("smkit is not installed; run `make setup` (or pip install -e '.[dev]')")
    return found


def smoke_command(config: Path, endpoint: str, *, endpoint_url: str | None, region: str | None) -> list[str]:
    """The ``smkit smoke-test`` call for one endpoint."""
    argv = [smkit_executable(), "smoke-test", "--config", config.as_posix(), "--endpoint", endpoint]
    if endpoint_url:
        argv += ["--endpoint-url", endpoint_url]
    if region:
        argv += ["--region", region]
    return argv


def resolve_endpoint(*, config: Path, endpoint_name: str | None, stack: str | None) -> str:
    """The endpoint to test: given, from a stack, or the last recorded release of the config."""
    if endpoint_name:
        return endpoint_name
    if stack:
        return endpoint_name_of(stack)
    try:
        parsed = load_deployment(config)
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None
    history = read_releases(release_parameter(parsed.name, parsed.environment))
    if not history:
        raise ReleaseError(
            f"no endpoint given and no release recorded for {config}; name the endpoint or its serving stack"
        )
    return history[-1].endpoint


def assumed_role_environment(role_arn: str) -> dict[str, str]:
    """The environment with short-lived credentials of ``role_arn`` (STS AssumeRole)."""
    credentials = client("sts").assume_role(RoleArn=role_arn, RoleSessionName=SESSION_NAME)["Credentials"]
    env = dict(os.environ)
    env.pop("AWS_PROFILE", None)
    env.update(
        AWS_ACCESS_KEY_ID=credentials["AccessKeyId"],
        AWS_SECRET_ACCESS_KEY=credentials["SecretAccessKey"],
        AWS_SESSION_TOKEN=credentials["SessionToken"],
    )
    return env
