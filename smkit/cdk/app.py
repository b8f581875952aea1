"""The default CDK app: ``python -m smkit.cdk.app`` with ``-c config=FILE`` (see :mod:`smkit.cdk.compose`).

``smkit synth`` runs it, ``smkit deploy`` hands it to the pinned CDK CLI as ``--app`` and ``smkit init``
writes it into the project's cdk.json. The working directory is the project root: the config and every
path inside it are relative to it.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk

from smkit.cdk.compose import FEATURE_FLAGS, add_deployment


def main(project_root: Path | None = None) -> None:
    """Synthesize the deployment the context names; ``project_root`` defaults to the working directory."""
    app = cdk.App(context=FEATURE_FLAGS)  # context given on the command line wins
    add_deployment(app, project_root=project_root or Path.cwd())
    app.synth()


if __name__ == "__main__":
    main()
