"""Where a container's image comes from: a local build, this kit's ECR repository, or an AWS DLC URI.

Each source is a value object whose :meth:`ServingImage.bind` returns the image URI and grants the
execution role exactly the pull access it needs: the three layer-pull actions on that one repository,
plus ``ecr:GetAuthorizationToken``, which has no resource-level permissions and so needs ``*``
(https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from constructs import Construct

from smkit.aws.patterns import IMAGE_URI
from smkit.cdk.constructs.execution_role import grant_pull
from smkit.dockerimage import stage_kit_context
from smkit.dockerimage.copies import missing_sources


class ServingImage(ABC):
    """An image source; build one with :meth:`from_asset`, :meth:`from_ecr` or :meth:`from_dlc`."""

    @staticmethod
    def from_asset(
        directory: Path,
        *,
        dockerfile: str = "Dockerfile",
        exclude: Sequence[str] = (),
        build_args: Mapping[str, str] | None = None,
    ) -> ServingImage:
        """Build the context ``directory`` with ``dockerfile`` (relative to it) as a CDK Docker image asset.

        ``exclude`` holds .dockerignore-style patterns; without them CDK applies ``directory/.dockerignore``.
        """
        return _AssetImage(directory, dockerfile, tuple(exclude), dict(build_args or {}))

    @staticmethod
    def from_kit(
        *, requirements: Path | None = None, build_args: Mapping[str, str] | None = None
    ) -> ServingImage:
        """The kit's serving image (container/Dockerfile, its pins, the runtime source), from any folder.

        ``requirements``: a pip requirements file the image installs as well (``image.requirements``).
        """
        return _KitImage(requirements, dict(build_args or {}))

    @staticmethod
    def from_ecr(repository: ecr.IRepository, tag: str) -> ServingImage:
        """An immutable ``tag`` in ``repository``."""
        return _EcrImage(repository, tag)

    @staticmethod
    def from_dlc(uri: str) -> ServingImage:
        """A full image URI in any ECR registry, e.g. an AWS Deep Learning Container."""
        if not IMAGE_URI.match(uri):
            raise ValueError(f"image uri {uri!r} is not ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG")
        return _DlcImage(uri)

    @abstractmethod
    def bind(self, scope: Construct, id_: str, *, grantee: iam.IGrantable) -> str:
        """Create what the source needs under ``scope``, grant ``grantee`` pull access, return the image URI."""


class _AssetImage(ServingImage):
    def __init__(
        self, directory: Path, dockerfile: str, exclude: tuple[str, ...], build_args: dict[str, str]
    ) -> None:
        self.directory = directory
        self.dockerfile = dockerfile
        self.exclude = exclude
        self.build_args = build_args

    def bind(self, scope: Construct, id_: str, *, grantee: iam.IGrantable) -> str:
        if not (self.directory / self.dockerfile).is_file():
            raise ValueError(
                f"image.dockerfile {self.dockerfile!r} not found in image.context {self.directory}; fix the "
                "paths (the context is relative to the config file, the dockerfile to the context) or leave "
                "image.context out to build the kit's image"
            )
        asset = ecr_assets.DockerImageAsset(
            scope,
            id_,
            directory=str(self.directory),
            file=self.dockerfile,
            # Docker always sends the Dockerfile, even when the ignore patterns exclude it.
            exclude=[*self.exclude, f"!{self.dockerfile}"] if self.exclude else None,
            ignore_mode=cdk.IgnoreMode.DOCKER,
            build_args=self.build_args or None,
            platform=ecr_assets.Platform.LINUX_AMD64,
        )
        _check_copies(asset, self.directory, self.dockerfile, self.build_args)
        grant_pull(grantee, asset.repository.repository_arn)
        return asset.image_uri


def _check_copies(
    asset: ecr_assets.DockerImageAsset, directory: Path, dockerfile: str, build_args: Mapping[str, str]
) -> None:
    """Every COPY/ADD source is in the context the asset staged (after the ignore file), or synth fails."""
    staging = asset.node.try_find_child("Staging")
    staged = Path(staging.absolute_staged_path) if isinstance(staging, cdk.AssetStaging) else directory
    missing = missing_sources(staged, dockerfile, build_args)
    if missing:
        listed = "; ".join(f"line {m.line}: {m.instruction} {m.source}" for m in missing)
        raise ValueError(
            f"image: {directory / dockerfile} copies files that are not in its build context {directory} "
            f"({listed}), so docker build would fail; add them to the context, let them through its ignore "
            f"file ({dockerfile}.dockerignore or .dockerignore), or leave image.context out to build the "
            "kit's image"
        )


class _KitImage(ServingImage):
    def __init__(self, requirements: Path | None, build_args: dict[str, str]) -> None:
        self.requirements = requirements
        self.build_args = build_args

    def bind(self, scope: Construct, id_: str, *, grantee: iam.IGrantable) -> str:
        stage = cdk.Stage.of(scope)
        assert stage is not None, "an image is bound inside an app"
        context = stage_kit_context(Path(stage.asset_outdir), self.requirements)
        build_args = {**self.build_args, **context.build_args}
        return _AssetImage(context.directory, context.dockerfile, (), build_args).bind(
            scope, id_, grantee=grantee
        )


class _EcrImage(ServingImage):
    def __init__(self, repository: ecr.IRepository, tag: str) -> None:
        self.repository = repository
        self.tag = tag

    def bind(self, scope: Construct, id_: str, *, grantee: iam.IGrantable) -> str:
        grant_pull(grantee, self.repository.repository_arn)
        return self.repository.repository_uri_for_tag(self.tag)


class _DlcImage(ServingImage):
    def __init__(self, uri: str) -> None:
        self.uri = uri

    def bind(self, scope: Construct, id_: str, *, grantee: iam.IGrantable) -> str:
        match = IMAGE_URI.match(self.uri)
        assert match is not None
        stack = cdk.Stack.of(scope)
        if cdk.Token.is_unresolved(stack.region):
            # The config names no region (smkit.config.aws_rules checks it when it does): CloudFormation
            # refuses the stack in any other region than the image's, before creating anything.
            # https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/rules-section-structure.html
            cdk.CfnRule(
                scope,
                f"{id_}Region",
                assertions=[
                    cdk.CfnRuleAssertion(
                        assert_=cdk.Fn.condition_equals(cdk.Aws.REGION, match["region"]),
                        assert_description=(
                            f"image {self.uri} is in {match['region']}; SageMaker pulls images only from the "
                            "endpoint's own region: deploy there or use that region's URI of the image"
                        ),
                    )
                ],
            )
        repository_arn = cdk.Stack.of(scope).format_arn(
            service="ecr",
            account=match["account"],
            region=match["region"],
            resource="repository",
            resource_name=match["name"],
        )
        grant_pull(grantee, repository_arn)
        return self.uri
