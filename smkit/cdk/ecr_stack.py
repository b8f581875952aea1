"""The ECR stack: the repository CI pushes the serving image to (``image.source: ecr`` pulls from it)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from smkit.cdk.constructs.repository import ServingRepository


class EcrStack(cdk.Stack):
    """One private repository; outputs its URI and name for CI (``RepositoryUri``, ``RepositoryName``)."""

    def __init__(self, scope: Construct, id_: str, **kwargs: Any) -> None:
        super().__init__(scope, id_, **kwargs)
        self.serving_repository = ServingRepository(self, "ServingRepository")
        self.repository = self.serving_repository.repository
        cdk.CfnOutput(self, "RepositoryUri", value=self.repository.repository_uri)
        cdk.CfnOutput(self, "RepositoryName", value=self.repository.repository_name)
