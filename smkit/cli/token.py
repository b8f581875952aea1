"""``smkit token``: a SageMaker bearer token for the OpenAI-compatible route, made offline.

The token is what aws/sagemaker-python-sdk's ``sagemaker.core.token_generator.generate_token`` makes
(``sagemaker-api-key-`` + base64 of a SigV4-presigned ``CallWithBearerToken`` URL, up to 12 hours):
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html. With
``--local`` it is signed with the pair the local endpoint always knows; otherwise with this environment's
credentials, so the same token works against a deployed endpoint.
"""

from __future__ import annotations

import os

import click

from smkit.contract import MAX_TOKEN_SECONDS


@click.command("token")
@click.option(
    "--region",
    default=lambda: os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
    help="Region of the endpoint (default: AWS_REGION, else AWS_DEFAULT_REGION).",
)
@click.option(
    "--expires",
    "expires_s",
    type=int,
    default=MAX_TOKEN_SECONDS,
    show_default=True,
    help=f"Lifetime in seconds, 1 to {MAX_TOKEN_SECONDS} (12 hours).",
)
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Sign with the local endpoint's own pair (local/local) instead of this environment's credentials.",
)
def token(region: str | None, expires_s: int, local: bool) -> None:
    """Print a bearer token: pass it as ``api_key`` of an OpenAI client whose ``base_url`` is
    ``<runtime URL>/endpoints/<name>/openai/v1``."""
    if not region:
        raise click.BadParameter(
            "no region: pass --region (e.g. us-east-1) or set AWS_REGION", param_hint="--region"
        )
    if not 0 < expires_s <= MAX_TOKEN_SECONDS:
        raise click.BadParameter(
            f"{expires_s}: a bearer token lives 1 to {MAX_TOKEN_SECONDS} seconds (12 hours)",
            param_hint="--expires",
        )
    from smkit.local.auth import LOCAL_KEY, make_token  # botocore's signer: not for `smkit token --help`

    session: str | None = None
    if local:
        access_key, secret_key = LOCAL_KEY
    else:
        from botocore.session import Session

        credentials = Session().get_credentials()
        if credentials is None:
            raise click.ClickException(
                "no AWS credentials found (environment, shared credentials file, SSO or instance role); "
                "configure them, or pass --local for a token of the local endpoint"
            )
        frozen = credentials.get_frozen_credentials()  # one consistent snapshot of refreshable credentials
        access_key, secret_key, session = frozen.access_key, frozen.secret_key, frozen.token
    click.echo(make_token(access_key, secret_key, region, expires_s=expires_s, session_token=session))
