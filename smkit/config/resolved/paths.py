"""Where a config's paths point: relative ones are relative to the config file's folder.

The one rule for every path a config names (``model_data.path``, a channel's ``path``, a ``build`` image's ``context`` and
``requirements``, an adapter's ``artifact_path``), applied in one place: :func:`with_absolute_paths` on a validated config (what
:func:`smkit.config.resolved.resolve` does first, so everything it decides reads absolute paths) and
:func:`absolute_paths` on raw config data (for tools that write a derived config elsewhere).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from smkit.config.containers import BuildImage, ImageSource
from smkit.config.models import DeploymentConfig


def absolute(path: str, base_dir: Path) -> Path:
    """``path`` as written in a config whose folder is ``base_dir`` (an absolute path stays as it is)."""
    return (base_dir / path).resolve()


def with_absolute_paths(cfg: DeploymentConfig, base_dir: Path) -> DeploymentConfig:
    """``cfg`` with every path it names made absolute against ``base_dir`` (the config's folder)."""

    def image(img: ImageSource | None) -> ImageSource | None:
        if not isinstance(img, BuildImage):
            return img
        update = {}
        if img.context is not None:
            update["context"] = str(absolute(img.context, base_dir))
        if img.requirements is not None:
            update["requirements"] = str(absolute(img.requirements, base_dir))
        return img.model_copy(update=update)

    containers = [
        c.model_copy(
            update={
                "image": image(c.image),
                "model_data": c.model_data
                if c.model_data.path is None
                else c.model_data.model_copy(update={"path": str(absolute(c.model_data.path, base_dir))}),
                "additional_model_data": tuple(
                    ch
                    if ch.path is None
                    else ch.model_copy(update={"path": str(absolute(ch.path, base_dir))})
                    for ch in c.additional_model_data
                ),
            }
        )
        for c in cfg.model.containers
    ]
    top = image(cfg.image)
    assert top is not None
    endpoint = cfg.endpoint
    spec = endpoint.inference_components
    if spec is not None:
        components = [
            c
            if c.artifact_path is None
            else c.model_copy(update={"artifact_path": str(absolute(c.artifact_path, base_dir))})
            for c in spec.components
        ]
        endpoint = endpoint.model_copy(
            update={"inference_components": spec.model_copy(update={"components": tuple(components)})}
        )
    return cfg.model_copy(
        update={
            "image": top,
            "model": cfg.model.model_copy(update={"containers": containers}),
            "endpoint": endpoint,
        }
    )


def absolute_paths(data: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """Raw config data with its relative paths made absolute against ``base_dir`` (the config's folder).

    For tools that write a derived config elsewhere (emulated deploys, release configs): the copy then
    names the same files as the original.
    """

    def fix(node: Any, key: str) -> None:
        if isinstance(node, dict) and isinstance(node.get(key), str):
            node[key] = str(absolute(node[key], base_dir))

    out = copy.deepcopy(data)
    images = [out.get("image")]
    for container in (out.get("model") or {}).get("containers") or []:
        if isinstance(container, dict):
            fix(container.get("model_data"), "path")
            for channel in container.get("additional_model_data") or []:
                fix(channel, "path")
            images.append(container.get("image"))
    components = ((out.get("endpoint") or {}).get("inference_components") or {}).get("components") or []
    for component in components:
        fix(component, "artifact_path")
    for image in images:
        if isinstance(image, dict) and image.get("source") == "build":
            fix(image, "context")
            fix(image, "requirements")
    return out


def project_dir(base_dir: Path) -> Path:
    """The project a config belongs to: the folder holding ``config/`` when the config is in one (the layout of
    ``smkit init``, whose configs name ``../build/NAME/...``), else the config's own folder."""
    return base_dir.parent if base_dir.name == "config" else base_dir


def adapter_archive(base_dir: Path, name: str, component: str) -> Path:
    """Where ``smkit package --config`` writes the archive of adapter ``component``'s local folder
    (``artifact_path``) for config ``name`` in ``base_dir``, and where deploy uploads it from."""
    return project_dir(base_dir) / "build" / name / "adapters" / f"{component}.tar.gz"


def channel_archive(base_dir: Path, name: str, container: str, channel: str) -> Path:
    """Where ``smkit package --config`` writes the archive of a ``source: archive`` channel's local folder
    (container ``container``'s ``additional_model_data``) for config ``name`` in ``base_dir``, and where
    deploy uploads it from."""
    return project_dir(base_dir) / "build" / name / "channels" / container / f"{channel}.tar.gz"
