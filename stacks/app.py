"""This repository's CDK app (cdk.json runs app.py, which calls :func:`main`).

It is what an app in your own repository looks like: the construct library is :mod:`smkit.cdk`, and this
app only composes it. Context: ``config`` (a file under config/, default config/realtime.yaml),
``image_tag`` and ``pipeline=true`` (:func:`smkit.cdk.add_deployment`).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk

from smkit.cdk import FEATURE_FLAGS, add_deployment


def main(project_root: Path) -> None:
    """Synthesize the deployment the context names; ``project_root`` anchors config/ and model_code/."""
    app = cdk.App(context=FEATURE_FLAGS)  # context given on the command line wins
    add_deployment(app, project_root=project_root)
    app.synth()
