"""The ``pipeline`` section: the CI/CD pipeline that ``cdk synth -c pipeline=true`` adds (CDK Pipelines)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from smkit.aws.patterns import ACCOUNT_ID, CODECOMMIT_REPOSITORY, CONNECTION_ARN, REGION
from smkit.config.base import Frozen

REPOSITORY = r"^[\w.-]+/[\w.-]+$"


class ConnectionSource(Frozen):
    """A GitHub / GitLab / Bitbucket repository through an AWS CodeConnections (CodeStar) connection.

    https://docs.aws.amazon.com/dtconsole/latest/userguide/welcome-connections.html
    """

    type: Literal["connection"]
    connection_arn: str = Field(pattern=CONNECTION_ARN)
    repository: str = Field(pattern=REPOSITORY, description="owner/name, e.g. my-org/smkit")
    branch: str = Field("main", min_length=1)


class CodeCommitSource(Frozen):
    """An AWS CodeCommit repository (by name) in the pipeline's account."""

    type: Literal["codecommit"]
    repository: str = Field(pattern=CODECOMMIT_REPOSITORY)
    branch: str = Field("main", min_length=1)


PipelineSource = Annotated[ConnectionSource | CodeCommitSource, Field(discriminator="type")]


class StageTarget(Frozen):
    """An account and region a pipeline stage deploys into (bootstrapped with ``--trust`` the pipeline account)."""

    account: str = Field(pattern=ACCOUNT_ID)
    region: str = Field(pattern=REGION)


class PipelineSpec(Frozen):
    """CDK Pipelines: source -> gates + synth -> staging (+ smoke test) -> manual approval -> production."""

    account: str = Field(pattern=ACCOUNT_ID, description="The tooling account that runs the pipeline.")
    region: str = Field(pattern=REGION)
    source: PipelineSource
    staging: StageTarget
    production: StageTarget
