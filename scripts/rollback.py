"""Redeploy the previous release of a deployment: its image and its model data, exactly as recorded.

``deploy`` records, after every successful deploy, what each container of the endpoint runs (image URI and
model data S3 location, read back from SageMaker) in the SSM parameter ``/smkit/<name>/<environment>/releases``.
``rollback`` takes the release before the current one (or ``--steps N`` back), fetches its model data from
S3, writes an effective config that points at that data and pins that image, and runs the same ``cdk deploy``
and InService wait as ``deploy``. Model data assets are content-hashed, so the redeployed archive lands on the
very object it came from. The rollback is itself recorded as a new release, so a second rollback undoes it.

::

    python -m scripts.rollback --config config/realtime.yaml            # back to the previous release
    python -m scripts.rollback --config config/realtime.yaml --list     # show the history
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scripts.deploy import (
    ASSEMBLY_DIR,
    EFFECTIVE_CONFIG_DIR,
    METHODS,
    cdk_deploy_command,
    finish,
    load_yaml,
    write_effective_config,
)
from scripts.release_common import (
    REPO_ROOT,
    DeployedContainer,
    Release,
    ReleaseError,
    client,
    echo,
    read_releases,
    release_parameter,
    run_all,
)
from smkit.storage import StorageError, split_s3_uri

ARTIFACT_DIR = EFFECTIVE_CONFIG_DIR / "rollback"


def pick(history: list[Release], steps: int) -> Release:
    """The release ``steps`` before the current (last) one."""
    if steps < 1:
        raise ReleaseError(f"--steps {steps}: must be >= 1 (1 = the release before the current one)")
    if len(history) <= steps:
        raise ReleaseError(
            f"only {len(history)} release(s) recorded; cannot go back {steps}. "
            "Releases are recorded by scripts/deploy.py after each successful deploy"
        )
    return history[-1 - steps]


def split_s3(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key), for recorded model data (a key is required)."""
    try:
        bucket, key = split_s3_uri(uri)
    except StorageError:
        key = ""
    if not key:
        raise ReleaseError(f"recorded model data {uri!r} is not an s3://BUCKET/KEY location")
    return bucket, key


def fetch_model_data(container: DeployedContainer, target: Path) -> Path:
    """Download one container's recorded model data: an archive file, or every object under a prefix."""
    if not container.model_data:
        raise ReleaseError("the recorded release has a container without model data; cannot roll it back")
    s3 = client("s3")
    bucket, key = split_s3(container.model_data)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if container.data_type == "archive":
        path = target / (key.rsplit("/", 1)[-1] or "model.tar.gz")
        s3.download_file(bucket, key, str(path))
        return path
    prefix = key if key.endswith("/") else key + "/"
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) :]
            if not relative or relative.endswith("/") or ".." in relative.split("/"):
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, item["Key"], str(target / relative))
            count += 1
    if count == 0:
        raise ReleaseError(f"nothing under {container.model_data}; the recorded model data is gone")
    return target


def rollback_config(data: Mapping[str, Any], release: Release, *, root: Path = REPO_ROOT) -> dict[str, Any]:
    """The config with every container's model data and image pinned to ``release``."""
    endpoint = data.get("endpoint") or {}
    if endpoint.get("type") == "inference-components" or endpoint.get("shadow_variants"):
        raise ReleaseError(
            "rolling back an endpoint with inference components or shadow variants is not supported: the "
            "release does not record which container ran which component or variant; redeploy the previous "
            "config and image tag with scripts.deploy instead"
        )
    containers = list(data["model"]["containers"])
    if len(containers) != len(release.containers):
        raise ReleaseError(
            f"the config has {len(containers)} container(s) but the release recorded {len(release.containers)}; "
            "roll back with the config that was deployed then"
        )
    pinned = []
    for index, (spec, recorded) in enumerate(zip(containers, release.containers, strict=True)):
        local = fetch_model_data(recorded, root / ARTIFACT_DIR / str(index))
        model_data = {**spec["model_data"], "path": str(local.resolve())}
        entry = {**spec, "model_data": model_data}
        if not release.image_tag:
            entry["image"] = {"source": "dlc", "uri": recorded.image}
        pinned.append(entry)
    out: dict[str, Any] = {**data, "model": {**data["model"], "containers": pinned}}
    if release.image_tag:
        image: dict[str, Any] = {"source": "ecr", "tag": release.image_tag}
        current = data.get("image") or {}
        if current.get("source") == "ecr" and current.get("repository"):
            image["repository"] = current["repository"]
        out["image"] = image
    return out


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
        data = load_yaml(args.config)
        parameter = release_parameter(str(data.get("name")), str(data.get("environment", "dev")))
        history = read_releases(parameter)
        if args.list:
            for number, release in enumerate(history, start=1):
                images = ", ".join(c.image for c in release.containers)
                print(f"{number}\t{release.deployed_at}\t{release.endpoint}\t{images}\t{release.note}")
            return 0
        target = pick(history, args.steps)
        echo(f"rolling back to the release of {target.deployed_at} ({target.note})")
        pinned = rollback_config(data, target)
        config = write_effective_config(pinned, args.config)
        deploy = cdk_deploy_command(config, context=args.context, output=args.output, method=args.method)
        if not run_all([deploy], dry_run=args.dry_run):
            return 0
        endpoint = finish(
            config_data=pinned,
            assembly=REPO_ROOT / args.output,
            image_tag=target.image_tag,
            note=f"rollback to {target.deployed_at}",
            timeout=args.timeout,
        )
    except ReleaseError as exc:
        echo(f"rollback: {exc}")
        return 1
    print(endpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
