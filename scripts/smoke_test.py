"""Smoke-test a deployed endpoint with ``smkit smoke-test`` (the sample payloads of the config's model).

The endpoint is given (``--endpoint-name``, what ``deploy`` printed or the pipeline's stack output), found in
a serving stack (``--stack``), or taken from the last recorded release of the config. ``--role-arn`` assumes
a role first (the pipeline's staging account trusts the tooling account for exactly this call).

::

    python -m scripts.smoke_test --config config/realtime.yaml
    python -m scripts.smoke_test --config config/realtime.yaml --endpoint-name "$ENDPOINT_NAME"
    python -m scripts.smoke_test --config config/realtime.yaml --endpoint-url http://127.0.0.1:8080 \\
        --endpoint-name tabular-realtime                     # the local endpoint (smkit local-endpoint)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from scripts.deploy import load_yaml
from scripts.release_common import (
    ReleaseError,
    client,
    echo,
    endpoint_name_of,
    read_releases,
    release_parameter,
    run,
)

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
    data = load_yaml(config)
    history = read_releases(release_parameter(str(data.get("name")), str(data.get("environment", "dev"))))
    if not history:
        raise ReleaseError(
            f"no endpoint given and no release recorded for {config}; pass --endpoint-name or --stack"
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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scripts.smoke_test",
        description="Send the config's sample payloads to a deployed endpoint and check the answers.",
    )
    p.add_argument(
        "--config", type=Path, required=True, help="the deployment config, e.g. config/realtime.yaml"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--endpoint-name", help="the endpoint (default: the last release recorded by deploy)")
    where.add_argument("--stack", help="the serving stack whose endpoint to test")
    p.add_argument("--endpoint-url", help="SageMaker Runtime URL (the local endpoint's gateway)")
    p.add_argument("--region", help="AWS region of the endpoint (default: the environment's)")
    p.add_argument("--role-arn", help="assume this role first (cross-account smoke test)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        endpoint = resolve_endpoint(config=args.config, endpoint_name=args.endpoint_name, stack=args.stack)
        env = assumed_role_environment(args.role_arn) if args.role_arn else None
        run(smoke_command(args.config, endpoint, endpoint_url=args.endpoint_url, region=args.region), env=env)
    except ReleaseError as exc:
        echo(f"smoke_test: {exc}")
        return 1
    echo(f"smoke test of {endpoint} passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
