"""The ECR stack: the repository CI pushes the serving image to (``image.source: ecr`` pulls from it)."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from smkit.cdk.constructs.repository import ServingRepository


class EcrStack(cdk.Stack):
    """One private repository; outputs its URI and name for CI (``RepositoryUri``, ``RepositoryName``).

    ``enhanced_scanning`` and ``signing``: registry-wide options of :class:`ServingRepository` (Amazon
    Inspector continuous scanning; ECR managed signing with AWS Signer), off by default; docs/security.md.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        enhanced_scanning: bool = False,
        signing: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.serving_repository = ServingRepository(
            self, "ServingRepository", enhanced_scanning=enhanced_scanning, signing=signing
        )
        self.repository = self.serving_repository.repository
        cdk.CfnOutput(self, "RepositoryUri", value=self.repository.repository_uri)
        cdk.CfnOutput(self, "RepositoryName", value=self.repository.repository_name)
        if self.serving_repository.signing_profile is not None:
            cdk.CfnOutput(
                self, "SigningProfileArn", value=self.serving_repository.signing_profile.signing_profile_arn
            )
