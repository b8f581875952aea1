"""``smkit approved``: check a config's model packages against the model registry (the pipeline's gate)."""

from __future__ import annotations

from pathlib import Path

import click

from smkit.cli.shared_options import config_option


@click.command("approved")
@config_option("Deployment config.")
@click.option(
    "--account", help="Account of GROUP/VERSION packages [default: the config's, else the caller's]."
)
@click.option("--region", help="Region of the registry [default: the config's, else boto3's].")
def approved(config_path: Path, account: str | None, region: str | None) -> None:
    """Exit 1, naming each, unless every model package the config deploys is Approved in the registry and
    runs the config's image on data under its uri.

    The checks of smkit.model_packages, which smkit deploy runs too; the pipeline runs it before each stage."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from smkit.config import ConfigError, load_deployment
    from smkit.model_packages import RegistryError, require_deployable

    try:
        deployment = load_deployment(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    region = region or deployment.region
    try:
        identity = boto3.client("sts", region_name=region).get_caller_identity()
        sagemaker = boto3.client("sagemaker", region_name=region)
        require_deployable(
            deployment,
            sagemaker,
            partition=identity["Arn"].split(":")[1],
            region=region or sagemaker.meta.region_name,
            account=account or deployment.account or identity["Account"],
        )
    except (RegistryError, ClientError, BotoCoreError) as exc:
        raise click.ClickException(str(exc)) from None
    packages = [c.model_data.package for c in deployment.containers if c.model_data.kind == "model-package"]
    click.echo(f"approved: {', '.join(p for p in packages if p) or 'no model package in the config'}")
