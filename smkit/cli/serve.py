"""``smkit serve``: run the serving runtime on this machine (same code as the image's ``serve``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from smkit.cli.shared_options import config_option


@click.command()
@click.option("--model", type=click.Path(), help="model.tar.gz or extracted model directory.")
@click.option(
    "--multi-model",
    "multi_model",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Serve a folder of *.tar.gz models, loaded on demand (multi-model container API).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=int, help="Port (default $SAGEMAKER_BIND_TO_PORT or 8080).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Worker processes (default $SAGEMAKER_MODEL_SERVER_WORKERS or one per CPU it may use).",
)
@click.option(
    "--constant", is_flag=True, help="Serve a bare handler returning a constant (benchmark baseline)."
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "toolkit", "tfs"]),
    default="auto",
    show_default=True,
    help="tfs: the SageMaker TensorFlow Serving form (needs smkit[tensorflow]); auto picks it for a "
    "SavedModel with handler/input_handler/output_handler or no inference.py.",
)
@config_option(
    "Deployment config the model is for: its image sets the model environment's Python and framework.",
    required=False,
)
@click.option(
    "--python",
    type=click.Path(exists=True, dir_okay=False),
    help="Run the model workers with this interpreter instead of the model's environment (smkit env).",
)
def serve(
    model: str | None,
    multi_model: str | None,
    host: str,
    port: int | None,
    workers: int | None,
    constant: bool,
    mode: str,
    config_path: Path | None,
    python: str | None,
) -> None:
    """Serve a model over the SageMaker hosting contract until Ctrl-C / SIGTERM.

    \b
    smkit serve --model build/model.tar.gz --port 8080
    smkit serve --multi-model build/models
    smkit serve --model build/tf_insurance.tar.gz --mode tfs
    """
    import os

    from smkit.modelenv import envs_enabled
    from smkit.serving import launcher
    from smkit.serving.front.event_loop import exit_now
    from smkit.serving.front.launch import LaunchRequest

    request = LaunchRequest(
        model=model,
        multi_model=multi_model,
        host=host,
        port=port,
        workers=workers,
        constant=constant,
        exit_on_load_failure=True,
    )
    tfs = launcher.uses_tfs(request, mode)
    if not tfs and model is not None and not constant and (envs_enabled() or python):
        # The model workers run in the model's environment (docs/serving-runtime.md, SMKIT_WORKER_PYTHON).
        from smkit.cli.envopts import target
        from smkit.contract import SMKIT_WORKER_PYTHON
        from smkit.local.artifacts import ArtifactError
        from smkit.local.environments import environment_for_path

        goal = target(config_path, Path(model))
        try:
            env = environment_for_path(
                Path(model),
                goal.runtime,
                python=python,
                isolated=goal.artifacts is not None and goal.network_isolation,
            )
        except ArtifactError as exc:
            raise click.ClickException(str(exc)) from None
        os.environ.update(env.environ())
        if env.python != sys.executable:
            os.environ[SMKIT_WORKER_PYTHON] = env.python

    exit_now(launcher.serve(request, mode="tfs" if tfs else "toolkit"))
