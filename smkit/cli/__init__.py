"""The ``smkit`` command line.

Sub-commands are imported lazily so that ``smkit serve`` in the serving image never pays for importing
CDK, boto3 or the SageMaker SDK. Each entry maps a command name to ``module:attribute`` of a click command.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, str] = {
    "package": "smkit.cli.package:package",
    "inspect": "smkit.cli.package:inspect",
    "serve": "smkit.cli.serve:serve",
    "batch-transform": "smkit.cli.batch:batch_transform",
    "emulator": "smkit.cli.emulator:emulator",
    "local-endpoint": "smkit.cli.local:local_endpoint",
    "invoke": "smkit.cli.client:invoke_command",
    "smoke-test": "smkit.cli.client:smoke_test",
    "demo": "smkit.cli.demo:demo",
    "init": "smkit.cli.init:init",
    "train": "smkit.cli.project:train",
    "synth": "smkit.cli.project:synth",
    "deploy": "smkit.cli.project:deploy",
    "env": "smkit.cli.envcmd:env",
    "cache": "smkit.cli.cache:cache",
    "config-schema": "smkit.cli.schema:config_schema",
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smkit")
def main() -> None:
    """SageMaker inference deployment kit."""
