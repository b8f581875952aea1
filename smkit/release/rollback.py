"""Redeploy an earlier release of a deployment: its image and its model data, exactly as recorded.

Each deploy records what every container of the endpoint runs (:mod:`smkit.release.history`). A rollback
takes the release ``steps`` before the current one, fetches its model data from S3, writes a config that
points at that data and pins that image (under ``build/release/``), and runs the same ``cdk deploy`` and
InService wait as a deploy. Model data assets are content-hashed, so the redeployed archive lands on the
very object it came from. The rollback is itself recorded as a new release, so a second rollback undoes it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from smkit.config import ConfigError, absolute_paths, parse_config
from smkit.config.loader import read_config_data
from smkit.config.overrides import with_image_tag
from smkit.config.resolved import ResolvedDeployment
from smkit.object_store import StorageError, atomic_write, split_s3_uri
from smkit.ops.cdk_cli import CdkResult
from smkit.ops.deploy_pipeline import DeployPlan, DeployTarget, run_deploy
from smkit.release.aws import client
from smkit.release.deploy import DeployRequest, finish, released
from smkit.release.history import DeployedContainer, Release, read_releases, release_parameter
from smkit.release.shell import ReleaseError, echo

EFFECTIVE_CONFIG_DIR = Path("build") / "release"
ARTIFACT_DIR = EFFECTIVE_CONFIG_DIR / "rollback"


def config_data(path: Path) -> dict[str, Any]:
    """The YAML data of the config that was deployed (validated as a whole later)."""
    try:
        data = read_config_data(path)
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None
    if not isinstance(data, dict):
        raise ReleaseError(f"{path}: expected a mapping with name, image, model, endpoint")
    return data


def history_of(data: Mapping[str, Any]) -> list[Release]:
    """The recorded releases of the deployment a config describes, oldest first."""
    return read_releases(release_parameter(str(data.get("name")), str(data.get("environment", "dev"))))


def pick(history: list[Release], steps: int) -> Release:
    """The release ``steps`` before the current (last) one."""
    if steps < 1:
        raise ReleaseError(f"cannot go back {steps} releases: 1 is the release before the current one")
    if len(history) <= steps:
        raise ReleaseError(
            f"only {len(history)} release(s) recorded; cannot go back {steps}. "
            "Releases are recorded after each successful deploy"
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


def rollback_config(data: Mapping[str, Any], release: Release, *, root: Path) -> dict[str, Any]:
    """The config with every container's model data and image pinned to ``release``."""
    endpoint = data.get("endpoint") or {}
    if endpoint.get("type") == "inference-components" or endpoint.get("shadow_variants"):
        raise ReleaseError(
            "rolling back an endpoint with inference components or shadow variants is not supported: the "
            "release does not record which container ran which component or variant; redeploy the previous "
            "config and image tag instead"
        )
    containers = list(data["model"]["containers"])
    if len(containers) != len(release.containers):
        raise ReleaseError(
            f"the config has {len(containers)} container(s) but the release recorded {len(release.containers)}; "
            "roll back with the config that was deployed then"
        )
    pinned = []
    for index, (spec, recorded) in enumerate(zip(containers, release.containers, strict=True)):
        if recorded.data_type == "model-package":  # the version names its image and data
            pinned.append({**spec, "model_data": {**spec["model_data"], "package": recorded.image}})
            continue
        local = fetch_model_data(recorded, root / ARTIFACT_DIR / str(index))
        model_data = {**spec["model_data"], "path": str(local.resolve())}
        entry = {**spec, "model_data": model_data}
        if not release.image_tag:
            entry["image"] = {"source": "dlc", "uri": recorded.image}
        pinned.append(entry)
    out: dict[str, Any] = {**data, "model": {**data["model"], "containers": pinned}}
    return with_image_tag(out, release.image_tag) if release.image_tag else out


def write_config(data: Mapping[str, Any], source: Path, *, root: Path) -> Path:
    """Validate ``data`` and write it under build/release/ (relative to ``root``); return that path.

    Its relative paths are made absolute first: the copy lives elsewhere and must name the same files.
    """
    data = absolute_paths(dict(data), source.resolve().parent)
    try:
        parse_config(dict(data), source=str(source))
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None
    target = EFFECTIVE_CONFIG_DIR / source.name
    atomic_write(root / target, yaml.safe_dump(dict(data), sort_keys=False).encode("utf-8"))
    return target


def rollback(request: DeployRequest, *, steps: int) -> str | None:
    """Redeploy the release ``steps`` back; the endpoint name (None for a dry run)."""
    data = config_data(request.config)
    target = pick(history_of(data), steps)
    echo(f"rolling back to the release of {target.deployed_at} ({target.note})")
    pinned = rollback_config(data, target, root=request.root)
    config_path = write_config(pinned, request.config, root=request.root)
    # The written config pins the release's image itself: no image tag on the command line.
    plan = request.plan(config_path)
    return released(lambda: run_deploy(plan, RollbackTarget(request, target)))


class RollbackTarget(DeployTarget[str]):
    """The release's own config, deployed as written (``cdk deploy`` synthesizes it in the same call), then
    waited for and recorded as a new release."""

    def __init__(self, request: DeployRequest, release: Release) -> None:
        super().__init__(request.cli)
        self.request, self.release = request, release

    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> str:
        return finish(
            deployment,
            assembly=plan.at_root(plan.assembly),
            image_tag=self.release.image_tag,
            note=f"rollback to {self.release.deployed_at}",
            timeout_s=self.request.timeout_s,
        )
