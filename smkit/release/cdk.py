"""CDK CLI calls of a release, and what a synthesized cloud assembly says about its stacks.

The CLI is the one pinned in package.json, called through ``npx --no-install`` (docs/toolchain.md). Stack
names are read from the synthesized assembly (``manifest.json`` and the templates), never re-derived from
the config, so they are always the names the CLI deploys.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smkit.config.overrides import IMAGE_TAG_CONTEXT
from smkit.release.shell import ReleaseError

CDK = ("npx", "--no-install", "cdk")
ASSEMBLY_DIR = "cdk.out"
# --method=direct (CreateStack/UpdateStack) is what moto's emulation needs: it resolves cross-stack exports
# and returns stack outputs only for direct deploys (docs/toolchain.md).
METHODS = ("change-set", "direct")
_DEPLOY = ("deploy", "--require-approval", "never", "--progress", "events", "--ci")


def context_args(config: Path, *, image_tag: str | None = None, context: Sequence[str] = ()) -> list[str]:
    """``-c config=FILE [-c image_tag=TAG] [-c KEY=VALUE ...]``: what app.py reads."""
    args = ["-c", f"config={config.as_posix()}"]
    if image_tag:
        args += ["-c", f"{IMAGE_TAG_CONTEXT}={image_tag}"]
    for item in context:
        args += ["-c", item]
    return args


def deploy_command(
    config: Path,
    *,
    image_tag: str | None = None,
    context: Sequence[str] = (),
    output: str = ASSEMBLY_DIR,
    method: str = "change-set",
) -> list[str]:
    """``cdk deploy --all`` of the config's stacks, no approval prompt, events as progress."""
    argv = [*CDK, _DEPLOY[0], "--all", *_DEPLOY[1:], f"--method={method}", "--output", output]
    return argv + context_args(config, image_tag=image_tag, context=context)


def deploy_assembly_command(assembly: str, stacks: Sequence[str], *, method: str = "change-set") -> list[str]:
    """``cdk deploy STACK... --app ASSEMBLY``: deploy stacks of an already synthesized assembly."""
    return [*CDK, _DEPLOY[0], *stacks, *_DEPLOY[1:], f"--method={method}", "--app", assembly]


def synth_command(
    config: Path, *, image_tag: str | None = None, context: Sequence[str] = (), output: str = ASSEMBLY_DIR
) -> list[str]:
    """``cdk synth --quiet --output DIR`` of the config (offline, no credentials needed)."""
    return [
        *CDK,
        "synth",
        "--quiet",
        "--output",
        output,
        *context_args(config, image_tag=image_tag, context=context),
    ]


def bootstrap_command(assembly: str) -> list[str]:
    """``cdk bootstrap --app ASSEMBLY``: the environments the synthesized stacks deploy to (once per account
    and region), read from the assembly instead of running the app again."""
    return [*CDK, "bootstrap", "--ci", "--app", assembly]


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
