"""The real CDK CLI (the pinned one, :mod:`smkit.ops.cdk_cli`) pointed at moto's server.

:func:`emulator_cli` is that CLI with the emulator's environment (``child_environment``): the project's
``node_modules/.bin/cdk`` in a checkout (``npm ci``), else ``npx --yes aws-cdk@<pin>`` as ``smkit deploy``
runs it, so a project made by ``smkit init`` deploys into the emulator without a package.json.
Deploys use ``--method=direct`` (CreateStack/UpdateStack): moto returns stack Outputs only for those, not
for change-set deploys (docs/toolchain.md), and CI's smoke test reads the endpoint name from the Outputs.
Each deploy synthesizes into its own output directory, so that several configs can deploy at once and
``destroy`` can reuse the cloud assembly instead of synthesizing again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from smkit.ops.cdk_cli import CdkCli, CdkError, CdkResult

__all__ = [
    "BOOTSTRAP_STACK",
    "CDK_TIMEOUT_S",
    "CdkCli",
    "CdkError",
    "CdkResult",
    "emulator_cli",
    "repo_root_from",
]

BOOTSTRAP_STACK = "CDKToolkit"
# Deploys into moto take seconds; a hung CLI (e.g. a custom resource whose Lambda never answers) must not
# hang `make test`.
CDK_TIMEOUT_S = 600.0


def emulator_cli(
    root: Path, env: Mapping[str, str], *, stream: bool = False, app: str | None = None
) -> CdkCli:
    """The pinned CDK CLI of the project at ``root`` with ``env`` (see ``child_environment``): direct
    deploys, bounded by :data:`CDK_TIMEOUT_S`. ``stream``: the CLI writes to this terminal
    (``make deploy-local``); ``app``: the ``--app`` of synth and deploy (default: cdk.json's)."""
    return CdkCli(root=root, env=env, stream=stream, app=app, method="direct", timeout_s=CDK_TIMEOUT_S)


def repo_root_from(start: Path | None = None) -> Path:
    """The repository root: the nearest directory from ``start`` (default: cwd) up that holds cdk.json."""
    here = (start or Path(os.getcwd())).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "cdk.json").is_file():
            return candidate
    raise CdkError(f"no cdk.json in {here} or any parent; run this from the repository")
