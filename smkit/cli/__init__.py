"""The ``smkit`` command line.

Sub-commands are imported lazily so that ``smkit serve`` in the serving image never pays for importing
CDK, boto3 or the SageMaker SDK. Each entry maps a command name to ``module:attribute`` of a click command.
``smkit --help`` lists the commands from ``SUMMARIES`` (each command's first docstring sentence, checked by
tests/cli/test_cli_imports.py) so that listing them imports none of them.
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
    "local-endpoint": "smkit.cli.local_endpoint:local_endpoint",
    "invoke": "smkit.cli.invoke:invoke_command",
    "smoke-test": "smkit.cli.invoke:smoke_test",
    "demo": "smkit.cli.demo:demo",
    "init": "smkit.cli.init:init",
    "train": "smkit.cli.project:train",
    "synth": "smkit.cli.project:synth",
    "deploy": "smkit.cli.project:deploy",
    "env": "smkit.cli.envcmd:env",
    "cache": "smkit.cli.cache:cache",
    "config-schema": "smkit.cli.schema:config_schema",
    "token": "smkit.cli.token:token",
    "approved": "smkit.cli.approved:approved",
    "top": "smkit.cli.top:top",
}

SUMMARIES: dict[str, str] = {
    "package": "Check the handler in the model's own environment, then build a reproducible model.tar.gz.",
    "inspect": "List an existing model archive and re-validate it (safety, manifest hashes, layout, handler).",
    "serve": "Serve a model over the SageMaker hosting contract until Ctrl-C / SIGTERM.",
    "batch-transform": "Run a batch transform job with SageMaker's semantics.",
    "emulator": "Emulated AWS (moto's server) and the real CDK CLI deploying into it.",
    "local-endpoint": "Start the serving processes a config describes and a SageMaker Runtime gateway in "
    "front of them.",
    "invoke": "Invoke an endpoint: serialize with sagemaker.core.serializers by --content-type, deserialize "
    "the answer with sagemaker.core.deserializers by the RESPONSE Content-Type.",
    "smoke-test": "Send model_code/<model>/samples/ payloads and check the answers against expected.json.",
    "demo": "Deploy a config into the emulated AWS, run it locally, invoke it through boto3.",
    "init": "Create model_code/NAME/ (handler, requirements, train.py, samples/), config/NAME.yaml and, once "
    "per project, cdk.json and .gitignore, in any folder.",
    "train": "Run model_code/NAME/train.py in the model's environment (writes artifacts/ and samples/).",
    "synth": "Synthesize the config's stacks offline (no AWS credentials but with --read-stages), with cdk-nag and template checks.",
    "deploy": "cdk deploy --all of the config with the pinned AWS CDK CLI, into the account of your "
    "credentials.",
    "env": "Build (once) the environment of MODEL_DIR (which holds code/requirements.txt) and print it, or "
    "run COMMAND in it: a leading `python` is the environment's interpreter, and the model's requirements "
    "are on PYTHONPATH.",
    "cache": "The model environments and vendored-wheel downloads smkit keeps ($SMKIT_CACHE_DIR, else "
    "~/.cache/smkit): list them with their sizes, prune them.",
    "config-schema": "Generate the deployment config's JSON Schema from the pydantic models (see "
    "smkit/config/schema.py).",
    "token": "Print a bearer token: pass it as ``api_key`` of an OpenAI client whose ``base_url`` is "
    "``<runtime URL>/endpoints/<name>/openai/v1``.",
    "approved": "Exit 1, naming each, unless every model package the config deploys is Approved in the "
    "registry and runs the config's image on data under its uri.",
    "top": "Show a running endpoint live from its Prometheus metrics: per variant, container and model, "
    "requests per second, errors, p50/p99 of each phase, queue depth and workers.",
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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from ``SUMMARIES``; a command without one is imported for its help."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            summary = SUMMARIES.get(name)
            command = click.Command(name, help=summary) if summary else self.get_command(ctx, name)
            rows.append((name, command.get_short_help_str(limit) if command is not None else ""))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="smkit")
def main() -> None:
    """SageMaker inference deployment kit."""
