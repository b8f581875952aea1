"""Smoke-test a deployed endpoint with ``smkit smoke-test`` (the sample payloads of the config's model).

The endpoint is given (``--endpoint-name``, what ``deploy`` printed or the pipeline's stack output), found in
a serving stack (``--stack``), or taken from the last recorded release of the config. ``--role-arn`` assumes
a role first (the pipeline's staging account trusts the tooling account for exactly this call). The work is
done by smkit/release/smoke.py.

::

    python -m scripts.smoke_test --config config/realtime.yaml
    python -m scripts.smoke_test --config config/realtime.yaml --endpoint-name "$ENDPOINT_NAME"
    python -m scripts.smoke_test --config config/realtime.yaml --endpoint-url http://127.0.0.1:8080 \\
        --endpoint-name tabular-realtime                     # the local endpoint (smkit local-endpoint)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smkit.release.shell import ReleaseError, echo, run
from smkit.release.smoke import assumed_role_environment, resolve_endpoint, smoke_command


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
