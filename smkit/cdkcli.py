"""The AWS CDK CLI version the stacks need, and how ``smkit deploy`` reaches it without a package.json.

aws-cdk-lib 2.275 writes cloud assemblies that the npm ``latest`` CLI (3.x) cannot read, so the CLI is
pinned (docs/toolchain.md). A checkout installs it with ``npm ci`` (package.json pins the same version,
tests/stacks/test_cdk_cli.py keeps the two equal); a pip-installed smkit runs it through
``npx --yes aws-cdk@<version>``, which npm fetches once into its cache (only Node.js is needed).
"""

from __future__ import annotations

import shutil

CDK_CLI_VERSION = "2.1148.1"
# The serving stacks' CDK app, run by ``smkit synth`` and as ``--app`` of the CLI.
APP_MODULE = "smkit.cdk.app"


class CdkCliError(RuntimeError):
    """The CDK CLI cannot be run; the message says what to install."""


def cli_command() -> list[str]:
    """``npx --yes aws-cdk@<pinned>``: the pinned CLI, from the project's node_modules or npm's cache
    (``smkit deploy`` and ``smkit emulator``)."""
    npx = shutil.which("npx")
    if npx is None:
        raise CdkCliError(
            f"smkit runs the AWS CDK CLI aws-cdk@{CDK_CLI_VERSION} through npx, which is not on PATH; "
            "install Node.js 20 or newer (https://nodejs.org), which provides npx"
        )
    return [npx, "--yes", f"aws-cdk@{CDK_CLI_VERSION}"]
