"""Build the serving image (``container/Dockerfile``, repository root as context) and push it to the ECR stack's repository under an immutable tag.

The tag is the content hash of the build context: the files Docker would send (the Dockerfile's own
``<Dockerfile>.dockerignore`` as BuildKit reads it, else the context's ``.dockerignore``, applied with Docker's
own matcher from the ``docker`` SDK), sorted, each hashed with its path and executable bit. The same
tree always gives the same tag, and a changed file always gives a new one. An existing tag is never
overwritten (ECR DescribeImages is checked first; the repository also has immutable tags).

Prints the image URI (``REPOSITORY_URI:TAG``) on stdout, and nothing else, so that CI can capture it::

    IMAGE_URI=$(python -m scripts.publish_image --repository-uri "$REPO_URI")
    python -m scripts.publish_image --stack tabular-realtime-ecr --dry-run   # print the commands only

The tag and the publication are smkit/release/ecr_image.py.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from smkit.release.ecr_image import Plan, image_tag, publish, repository_uri, tag_exists
from smkit.release.shell import ReleaseError, echo

REPO_ROOT = Path(__file__).resolve().parent.parent


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scripts.publish_image",
        description="Build container/Dockerfile and push it to ECR under a content-hash tag; print the image URI.",
    )
    target = p.add_mutually_exclusive_group()
    target.add_argument("--stack", help="the ECR stack whose repository receives the image")
    target.add_argument("--repository", help="ECR repository name")
    target.add_argument("--repository-uri", help="ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME (no AWS lookup)")
    p.add_argument(
        "--context", type=Path, default=REPO_ROOT, help="build context (default: the repository root)"
    )
    p.add_argument("--dockerfile", default="container/Dockerfile", help="Dockerfile, relative to the context")
    p.add_argument(
        "--if-exists",
        choices=("fail", "skip"),
        default="fail",
        help="when the tag is already in the repository: fail (default) or skip publishing; never overwrite",
    )
    p.add_argument("--tag-only", action="store_true", help="print the content-hash tag and exit")
    p.add_argument(
        "--sbom",
        type=Path,
        help="also write the image's CycloneDX SBOM (scripts/sbom.py, from uv.lock) naming the published URI, "
        "for CI to keep with the release",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the commands (one per line; login reads an ECR token on stdin) and the URI, do nothing",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        tag = image_tag(args.context, args.dockerfile)
        if args.tag_only:
            print(tag)
            return 0
        uri = repository_uri(repository_uri=args.repository_uri, repository=args.repository, stack=args.stack)
        plan = Plan(repository_uri=uri, tag=tag, context=args.context, dockerfile=args.dockerfile)
        if args.dry_run:
            for command in plan.commands():
                print(shlex.join(command))
            _write_sbom(args.sbom, plan.image_uri)
            print(plan.image_uri)
            return 0
        if tag_exists(uri, tag) and args.if_exists == "skip":
            echo(f"{plan.image_uri} is already published; nothing to do (tags are immutable)")
            _write_sbom(args.sbom, plan.image_uri)
            print(plan.image_uri)
            return 0
        if tag_exists(uri, tag):
            raise ReleaseError(
                f"{plan.image_uri} already exists and tags are immutable: refusing to overwrite it. "
                "The same build context was published before; deploy that URI "
                f"(scripts/deploy.py --image-tag {tag}) or change container/ to get a new tag"
            )
        publish(plan, cwd=REPO_ROOT)
        _write_sbom(args.sbom, plan.image_uri)
    except ReleaseError as exc:
        echo(f"publish_image: {exc}")
        return 1
    print(plan.image_uri)
    return 0


def _write_sbom(path: Path | None, image_uri: str) -> None:
    if path is not None:
        from scripts.image_pins import find_uv
        from scripts.sbom import render

        path.write_text(render(find_uv(), image_uri), encoding="utf-8")
        echo(f"wrote the image's SBOM to {path}")


if __name__ == "__main__":
    sys.exit(main())
