"""Package the models, ``cdk deploy`` one deployment config, wait for InService, record the release.

::

    python -m scripts.deploy --config config/realtime.yaml --image-tag ctx-0123...   # image from publish_image
    python -m scripts.deploy --config config/serverless.yaml --skip-package          # archives already built
    python -m scripts.deploy --config config/realtime.yaml --ecr-only                # print the repository URI

With ``--image-tag`` the config's image becomes that ECR image (``cdk deploy -c image_tag=TAG``): the deploy
runs exactly the image that ``publish_image`` pushed. After the endpoint is InService the image and model
data every container runs are read back from SageMaker and appended to the release history that
``rollback`` uses. Prints the endpoint name on stdout. The work is done by smkit/release/deploy.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smkit.release.assembly import ASSEMBLY_DIR, METHODS
from smkit.release.deploy import DeployRequest, deploy, deploy_repository
from smkit.release.shell import ReleaseError, echo

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_COMMAND = (sys.executable, "-m", "scripts.package_models", "--build-dir", "build")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scripts.deploy",
        description="Package, cdk deploy one config, wait for InService, record the release; print the endpoint.",
    )
    p.add_argument("--config", type=Path, required=True, help="deployment config, e.g. config/realtime.yaml")
    p.add_argument("--image-tag", help="deploy this ECR image tag (what publish_image printed after ':')")
    p.add_argument("--skip-package", action="store_true", help="the archives in build/ are already built")
    p.add_argument("--context", action="append", default=[], metavar="KEY=VALUE", help="extra CDK context")
    p.add_argument(
        "--ecr-only",
        action="store_true",
        help="deploy only the ECR stack and print its repository URI (before publish_image)",
    )
    p.add_argument("--bootstrap", action="store_true", help="run `cdk bootstrap` first (new account/region)")
    p.add_argument("--output", default=ASSEMBLY_DIR, help="cloud assembly directory (default cdk.out)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default="change-set",
        help="cdk deploy --method (direct: for moto's emulation)",
    )
    p.add_argument("--timeout", type=int, default=3600, help="seconds to wait for InService (default 3600)")
    p.add_argument("--dry-run", action="store_true", help="print the commands, deploy nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.config.is_file():
        echo(f"deploy: --config {args.config}: no such file (configs live in config/*.yaml)")
        return 1
    request = DeployRequest(
        config=args.config,
        root=REPO_ROOT,
        image_tag=args.image_tag,
        context=tuple(args.context),
        output=args.output,
        method=args.method,
        bootstrap=args.bootstrap,
        prepare=()
        if args.skip_package or args.ecr_only
        else ((*PACKAGE_COMMAND, "--config", args.config.as_posix()),),
        timeout_s=args.timeout,
        dry_run=args.dry_run,
    )
    try:
        if args.ecr_only:
            result = deploy_repository(request)
        else:
            result = deploy(request, note=f"deploy {args.config.as_posix()}")
    except ReleaseError as exc:
        echo(f"deploy: {exc}")
        return 1
    if result is not None:
        print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
