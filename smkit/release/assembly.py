"""What a synthesized cloud assembly says about a release's stacks.

The CLI calls themselves are :class:`smkit.ops.cdk_cli.CdkCli`'s (the pinned CLI, docs/toolchain.md). Stack
names are read from the synthesized assembly (``manifest.json`` and the templates), never re-derived from
the config, so they are always the names the CLI deploys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from smkit.release.shell import ReleaseError

ASSEMBLY_DIR = "cdk.out"
# --method=direct (CreateStack/UpdateStack) is what moto's emulation needs: it resolves cross-stack exports
# and returns stack outputs only for direct deploys (docs/toolchain.md).
METHODS = ("change-set", "direct")


def stacks_with(assembly: Path, resource_type: str) -> list[str]:
    """Names of the stacks in a synthesized cloud assembly whose template has a ``resource_type``."""
    manifest_path = assembly / "manifest.json"
    if not manifest_path.is_file():
        raise ReleaseError(f"{assembly} holds no synthesized cloud assembly (no manifest.json)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    names = []
    for artifact in manifest.get("artifacts", {}).values():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        props = artifact.get("properties", {})
        template = json.loads((assembly / props["templateFile"]).read_text(encoding="utf-8"))
        kinds = {r.get("Type") for r in template.get("Resources", {}).values()}
        if resource_type in kinds:
            names.append(props.get("stackName") or artifact.get("displayName"))
    return names


def stack_template(assembly: Path, stack_name: str) -> dict[str, Any]:
    """The template of the stack called ``stack_name`` in a synthesized cloud assembly."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    for artifact in manifest.get("artifacts", {}).values():
        props = artifact.get("properties", {})
        if artifact.get("type") == "aws:cloudformation:stack" and stack_name in (
            props.get("stackName"),
            artifact.get("displayName"),
        ):
            template: dict[str, Any] = json.loads(
                (assembly / props["templateFile"]).read_text(encoding="utf-8")
            )
            return template
    raise ReleaseError(f"no stack {stack_name!r} in {assembly}")


def the_stack_with(assembly: Path, resource_type: str) -> str:
    """The one stack of the assembly that holds a ``resource_type``; ReleaseError for none or several."""
    names = stacks_with(assembly, resource_type)
    if len(names) != 1:
        raise ReleaseError(
            f"expected one stack with an {resource_type} in {assembly}, found {names or 'none'}"
        )
    return names[0]
