"""Release automation behind the CI entry points (``scripts/``): deploy, release records, rollback.

The scripts parse their command line and call these modules; everything they do is reachable from tests.
Modules: :mod:`~smkit.release.shell` (running commands, :class:`ReleaseError`), :mod:`~smkit.release.aws`
(boto3 clients that honour ``AWS_ENDPOINT_URL``, stacks, endpoints), :mod:`~smkit.release.history` (the
release history in SSM), :mod:`~smkit.release.assembly` (what a synthesized cloud assembly says),
:mod:`~smkit.release.deploy`, :mod:`~smkit.release.rollback`. The repository's own gates are scripts/gates.py.
"""

from smkit.release.shell import ReleaseError

__all__ = ["ReleaseError"]
