"""Redeploy the previous release of a deployment: its image and its model data, exactly as recorded.

``deploy`` records, after every successful deploy, what each container of the endpoint runs (image URI and
model data S3 location, read back from SageMaker) in the SSM parameter ``/smkit/<name>/<environment>/releases``.
``rollback`` takes the release before the current one (or ``--steps N`` back), fetches its model data from
S3, writes a config under ``build/release/`` that points at that data and pins that image, and runs the same
``cdk deploy`` and InService wait as ``deploy``. The work is done by smkit/release/rollback.py.

::

    python -m scripts.rollback --config config/realtime.yaml            # back to the previous release
    python -m scripts.rollback --config config/realtime.yaml --list     # show the history
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smkit.release.assembly import ASSEMBLY_DIR, METHODS
from smkit.release.deploy import DeployRequest
from smkit.release.rollback import config_data, history_of, rollback
from smkit.release.shell import ReleaseError, echo

REPO_ROOT = Path(__file__).resolve().parent.parent


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scripts.rollback",
        description="Redeploy the previous recorded release (image + model data) of a config; print the endpoint.",
    )
    p.add_argument("--config", type=Path, required=True, help="the deployment config that was deployed")
    p.add_argument("--steps", type=int, default=1, help="how many releases back (default 1)")
    p.add_argument("--list", action="store_true", help="print the recorded releases and exit")
    p.add_argument("--output", default=ASSEMBLY_DIR, help="cloud assembly directory (default cdk.out)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default="change-set",
        help="cdk deploy --method (direct: for moto's emulation)",
    )
    p.add_argument("--context", action="append", default=[], metavar="KEY=VALUE", help="extra CDK context")
    p.add_argument("--timeout", type=int, default=3600, help="seconds to wait for InService (default 3600)")
    p.add_argument("--dry-run", action="store_true", help="fetch and write the config, print the command")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.list:
            for number, release in enumerate(history_of(config_data(args.config)), start=1):
                images = ", ".join(c.image for c in release.containers)
                print(f"{number}\t{release.deployed_at}\t{release.endpoint}\t{images}\t{release.note}")
            return 0
        request = DeployRequest(
            config=args.config,
            root=REPO_ROOT,
            context=tuple(args.context),
            output=args.output,
            method=args.method,
            timeout_s=args.timeout,
            dry_run=args.dry_run,
        )
        endpoint = rollback(request, steps=args.steps)
    except ReleaseError as exc:
        echo(f"rollback: {exc}")
        return 1
    if endpoint is not None:
        print(endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
