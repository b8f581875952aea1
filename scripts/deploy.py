"""Package the models, ``cdk deploy`` one deployment config, wait for InService, record the release.

::

    python -m scripts.deploy --config config/realtime.yaml --image-tag ctx-0123...   # image from publish_image
    python -m scripts.deploy --config config/serverless.yaml --skip-package          # archives already built

With ``--image-tag`` the config's image becomes ``{source: ecr, tag: TAG}`` (the ECR stack's repository, or the
repository the config names): the deploy runs exactly the image that ``publish_image`` pushed. The effective
config is written under ``build/release/`` and validated by ``smkit.config`` before the CDK CLI sees it.

After the endpoint is InService the script reads back, from SageMaker, the image and model data every
container runs and appends them to the release history that ``rollback`` uses (see release_common).
Prints the endpoint name on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from scripts.release_common import (
    REPO_ROOT,
    ReleaseError,
    describe_release,
    echo,
    endpoint_name_of,
    record_release,
    release_parameter,
    run_all,
    wait_in_service,
)

CDK = ("npx", "--no-install", "cdk")
ASSEMBLY_DIR = "cdk.out"
METHODS = ("change-set", "direct")
EFFECTIVE_CONFIG_DIR = Path("build") / "release"
PACKAGE_COMMAND = (sys.executable, "-m", "scripts.package_models", "--build-dir", "build")


def load_yaml(path: Path) -> dict[str, Any]:
    """The raw YAML mapping of a config file (validated later, as a whole)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"--config {path}: no such file (configs live in config/*.yaml)") from None
    if not isinstance(data, dict):
        raise ReleaseError(f"--config {path}: expected a mapping with name, image, model, endpoint")
    return data


def with_image_tag(data: Mapping[str, Any], tag: str) -> dict[str, Any]:
    """The config with its image replaced by the ECR image ``tag`` (same repository if one was named)."""
    image: dict[str, Any] = {"source": "ecr", "tag": tag}
    current = data.get("image") or {}
    if current.get("source") == "ecr" and current.get("repository"):
        image["repository"] = current["repository"]
    return {**data, "image": image}


def write_effective_config(data: Mapping[str, Any], source: Path, *, root: Path = REPO_ROOT) -> Path:
    """Validate ``data`` with smkit.config and write it under build/release/ (relative to ``root``)."""
    from smkit.config import ConfigError, absolute_paths, parse_config

    data = absolute_paths(dict(data), source.resolve().parent)  # the copy lives elsewhere: same files
    try:
        parse_config(dict(data), source=str(source))
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None
    target = EFFECTIVE_CONFIG_DIR / source.name
    (root / target).parent.mkdir(parents=True, exist_ok=True)
    tmp = (root / target).with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(dict(data), sort_keys=False), encoding="utf-8")
    tmp.replace(root / target)
    return target


def cdk_deploy_command(
    config: Path, *, context: Sequence[str] = (), output: str = ASSEMBLY_DIR, method: str = "change-set"
) -> list[str]:
    """The CDK CLI call: every stack of the config, no approval prompt, events as progress.

    ``method="direct"`` (CreateStack/UpdateStack) is what moto's emulation needs: it resolves cross-stack
    exports and returns stack outputs only for direct deploys (docs/toolchain.md).
    """
    argv = [*CDK, "deploy", "--all", "--require-approval", "never", "--progress", "events", "--ci"]
    argv += [f"--method={method}"]
    argv += ["--output", output, "-c", f"config={config.as_posix()}"]
    for item in context:
        argv += ["-c", item]
    return argv


def ecr_stack_name(config: Path) -> str:
    """The ECR stack of a config (the stack ids of stacks.serving_stage are the stack names at app level)."""
    from smkit.config import ConfigError, load_config

    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # before jsii starts Node
    from stacks.serving_stage import stack_ids

    try:
        return stack_ids(load_config(config))[0]
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None


def cdk_ecr_command(
    config: Path, *, context: Sequence[str] = (), output: str = ASSEMBLY_DIR, method: str = "change-set"
) -> list[str]:
    """Deploy only the config's ECR stack (the repository must exist before the first image push)."""
    argv = [*CDK, "deploy", ecr_stack_name(config), "--require-approval", "never", "--progress", "events"]
    argv += [f"--method={method}"]
    argv += ["--ci", "--output", output, "-c", f"config={config.as_posix()}"]
    for item in context:
        argv += ["-c", item]
    return argv


def cdk_bootstrap_command(
    config: Path, *, context: Sequence[str] = (), output: str = ASSEMBLY_DIR
) -> list[str]:
    """``cdk bootstrap`` for the account/region the config deploys to (once per account and region)."""
    argv = [*CDK, "bootstrap", "--ci", "--output", output, "-c", f"config={config.as_posix()}"]
    for item in context:
        argv += ["-c", item]
    return argv


def serving_stacks(assembly: Path) -> list[str]:
    """Names of the deployed stacks (in a synthesized cloud assembly) that contain a SageMaker endpoint."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    names = []
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        props = artifact.get("properties", {})
        template = json.loads((assembly / props["templateFile"]).read_text(encoding="utf-8"))
        kinds = {r.get("Type") for r in template.get("Resources", {}).values()}
        if "AWS::SageMaker::Endpoint" in kinds:
            names.append(props.get("stackName") or artifact.get("displayName"))
    return names


def finish(
    *, config_data: Mapping[str, Any], assembly: Path, image_tag: str | None, note: str, timeout: int
) -> str:
    """Wait for the endpoint of the deployed serving stack and append the release to its history."""
    stacks = serving_stacks(assembly)
    if len(stacks) != 1:
        raise ReleaseError(f"expected one serving stack in {assembly}, found {stacks or 'none'}")
    endpoint = endpoint_name_of(stacks[0])
    wait_in_service(endpoint, timeout_seconds=timeout)
    release = describe_release(endpoint, image_tag=image_tag, note=note, region=None)
    parameter = release_parameter(str(config_data["name"]), str(config_data.get("environment", "dev")))
    history = record_release(parameter, release)
    echo(f"release {len(history)} recorded in SSM parameter {parameter}")
    return endpoint


def deploy_ecr(args: argparse.Namespace, config: Path) -> int:
    """``--ecr-only``: deploy the repository stack, print the repository URI."""
    from scripts.publish_image import repository_uri

    commands = (
        [cdk_bootstrap_command(config, context=args.context, output=args.output)] if args.bootstrap else []
    )
    commands.append(cdk_ecr_command(config, context=args.context, output=args.output, method=args.method))
    if not run_all(commands, dry_run=args.dry_run):
        return 0
    print(repository_uri(repository_uri=None, repository=None, stack=ecr_stack_name(config)))
    return 0


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
    try:
        data = load_yaml(args.config)
        config = args.config
        if args.image_tag:
            data = with_image_tag(data, args.image_tag)
            config = write_effective_config(data, args.config)
        if args.ecr_only:
            return deploy_ecr(args, config)
        commands = [] if args.skip_package else [[*PACKAGE_COMMAND, "--config", args.config.as_posix()]]
        if args.bootstrap:
            commands.append(cdk_bootstrap_command(config, context=args.context, output=args.output))
        commands.append(
            cdk_deploy_command(config, context=args.context, output=args.output, method=args.method)
        )
        if not run_all(commands, dry_run=args.dry_run):
            return 0
        endpoint = finish(
            config_data=data,
            assembly=REPO_ROOT / args.output,
            image_tag=args.image_tag,
            note=f"deploy {args.config.as_posix()}",
            timeout=args.timeout,
        )
    except ReleaseError as exc:
        echo(f"deploy: {exc}")
        return 1
    print(endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
