"""This repository's CDK app (cdk.json runs app.py, which calls :func:`main`).

It is what an app in your own repository looks like: the construct library is :mod:`smkit.cdk`, and this
app only composes it. Context: ``config`` (a file under config/, default config/realtime.yaml),
``image_tag`` and ``pipeline=true`` (:func:`smkit.cdk.add_deployment`). Its pipeline runs this repository's
gates (scripts/gates.py: ``make setup``, ``make lint``, pytest, ...) where a project made by ``smkit init``
runs the smkit CLI (:meth:`smkit.cdk.PipelineCommands.for_project`).
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk

from scripts.gates import PIPELINE_INSTALL_COMMANDS, pipeline_smoke_test_commands, pipeline_synth_commands
from smkit.cdk import FEATURE_FLAGS, PipelineCommands, add_deployment


def pipeline_commands(config_file: str) -> PipelineCommands:
    """This repository's pipeline steps: ``make setup``, every gate, scripts/smoke_test.py."""
    return PipelineCommands(
        install=PIPELINE_INSTALL_COMMANDS,
        synth=tuple(pipeline_synth_commands(config_file)),
        smoke_test=tuple(pipeline_smoke_test_commands(config_file)),
        cli=".venv/bin/smkit",
    )


def main(project_root: Path) -> None:
    """Synthesize the deployment the context names; ``project_root`` anchors config/ and model_code/."""
    app = cdk.App(context=FEATURE_FLAGS)  # context given on the command line wins
    add_deployment(app, project_root=project_root, pipeline_commands=pipeline_commands)
    app.synth()
