"""The serving image's immutable tag and its publication to ECR.

The tag is the content hash of the build context: the files Docker would send (the Dockerfile's own
``<Dockerfile>.dockerignore`` as BuildKit reads it, else the context's ``.dockerignore``, applied with Docker's
own matcher from the ``docker`` SDK), sorted, each hashed with its path and executable bit. The same
tree always gives the same tag, and a changed file always gives a new one. An existing tag is never
overwritten (ECR DescribeImages is checked first; the repository also has immutable tags).
"""

from __future__ import annotations

import hashlib
import shlex
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from smkit.release.aws import client, stack_output, stack_resources
from smkit.release.shell import ReleaseError, echo, run

TAG_PREFIX = "ctx-"
TAG_HEX_CHARS = 32
# The serving stack runs on x86_64 ml.* instances.
PLATFORM = "linux/amd64"


def context_files(context: Path, dockerfile: str = "Dockerfile") -> list[str]:
    """Files (relative POSIX paths, sorted) that ``docker build`` sends for ``context``."""
    from docker.utils.build import exclude_paths

    ignore = context / f"{dockerfile}.dockerignore"
    if not ignore.is_file():
        ignore = context / ".dockerignore"
    patterns: list[str] = []
    if ignore.is_file():
        lines = ignore.read_text(encoding="utf-8").splitlines()
        patterns = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    kept = exclude_paths(str(context), patterns, dockerfile=dockerfile)
    return sorted(p.replace("\\", "/") for p in kept if (context / p).is_file())


def context_hash(context: Path, dockerfile: str = "Dockerfile") -> str:
    """sha256 over (path, executable bit, content) of every file in the build context."""
    if not (context / dockerfile).is_file():
        raise ReleaseError(
            f"no {dockerfile} in build context {context}; use a build context that holds the Dockerfile"
        )
    digest = hashlib.sha256()
    for rel in context_files(context, dockerfile):
        path = context / rel
        executable = bool(path.stat().st_mode & stat.S_IXUSR)
        digest.update(f"{rel}\0{int(executable)}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def image_tag(context: Path, dockerfile: str = "Dockerfile") -> str:
    """The immutable tag of the image built from ``context``: ``ctx-`` + 32 hex digits of its hash."""
    return TAG_PREFIX + context_hash(context, dockerfile)[:TAG_HEX_CHARS]


@dataclass(frozen=True)
class Plan:
    """What publishing will do: the target URI and the exact commands."""

    repository_uri: str
    tag: str
    context: Path
    dockerfile: str

    @property
    def registry(self) -> str:
        return self.repository_uri.split("/", 1)[0]

    @property
    def image_uri(self) -> str:
        return f"{self.repository_uri}:{self.tag}"

    def commands(self) -> list[list[str]]:
        """docker login (password on stdin, from ECR GetAuthorizationToken), build, push."""
        return [
            ["docker", "login", "--username", "AWS", "--password-stdin", self.registry],
            [
                "docker",
                "build",
                "--platform",
                PLATFORM,
                # BuildKit's default provenance attestation turns the push into an OCI image index, which
                # SageMaker CreateModel rejects ("Unsupported manifest media type").
                # https://docs.docker.com/build/metadata/attestations/slsa-provenance/
                "--provenance=false",
                "--file",
                str(self.context / self.dockerfile),
                "--tag",
                self.image_uri,
                str(self.context),
            ],
            ["docker", "push", self.image_uri],
        ]


def repository_uri(*, repository_uri: str | None, repository: str | None, stack: str | None) -> str:
    """The target repository: given outright, by name, or the one the ECR stack created."""
    if repository_uri:
        return repository_uri
    ecr = client("ecr")
    if not repository and stack:
        uri = stack_output(stack, "RepositoryUri")
        if uri:
            return uri
        names = stack_resources(stack, "AWS::ECR::Repository")
        if len(names) != 1:
            raise ReleaseError(
                f"stack {stack!r} has {len(names)} ECR repositories; name the repository instead"
            )
        repository = names[0]
    if not repository:
        raise ReleaseError("no repository: name the ECR stack, the repository or the repository URI")
    try:
        repos = ecr.describe_repositories(repositoryNames=[repository])["repositories"]
    except ecr.exceptions.RepositoryNotFoundException:
        raise ReleaseError(
            f"ECR repository {repository!r} does not exist; deploy the ECR stack first"
        ) from None
    return str(repos[0]["repositoryUri"])


def tag_exists(repository_uri: str, tag: str) -> bool:
    """True when ``tag`` is already in the repository (ECR DescribeImages)."""
    ecr = client("ecr")
    name = repository_uri.split("/", 1)[1]
    try:
        ecr.describe_images(repositoryName=name, imageIds=[{"imageTag": tag}])
    except ecr.exceptions.ImageNotFoundException:
        return False
    return True


def publish(plan: Plan, *, cwd: Path | None = None) -> None:
    """Log in with a short-lived ECR token, build and push."""
    import base64

    token = client("ecr").get_authorization_token()["authorizationData"][0]["authorizationToken"]
    password = base64.b64decode(token).decode().split(":", 1)[1]
    login, *rest = plan.commands()
    echo(f"+ {shlex.join(login)}")
    try:
        done = subprocess.run(login, input=password.encode(), cwd=cwd, check=False)
    except FileNotFoundError:
        raise ReleaseError("docker: command not found; publishing needs a Docker engine") from None
    if done.returncode != 0:
        raise ReleaseError(f"docker login to {plan.registry} failed with exit code {done.returncode}")
    for argv in rest:
        run(argv, cwd=cwd)
