"""``smkit init NAME``: scaffold a model folder and its deployment config."""

from __future__ import annotations

from pathlib import Path

import click

from smkit.scaffold import CHOICES, DEFAULTS_ONLY, MODEL_FILES, ScaffoldError, scaffold
from smkit.scaffold.llm import LLM_FRAMEWORKS, next_steps


@click.command("init")
@click.argument("name")
@click.option("--framework", type=click.Choice(CHOICES), default="sklearn", show_default=True)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project folder that holds model_code/ and config/.",
)
@click.option(
    "--multi-model",
    "multi_model",
    metavar="SET",
    default=None,
    help="Add the model to the multi-model endpoint config/SET.yaml (written by the set's first model) "
    "instead of writing config/NAME.yaml.",
)
@click.option(
    "--handler",
    is_flag=True,
    help="With --framework vllm: also write model_code/NAME/model/model.py, custom handlers (a /ping of its "
    "own, pre- and post-processing) that AWS's vLLM image loads, and its requirements.txt.",
)
def init(name: str, framework: str, root: Path, multi_model: str | None, handler: bool) -> None:
    """Create model_code/NAME/ (handler, requirements, train.py, samples/), config/NAME.yaml and, once per
    project, cdk.json and .gitignore, in any folder. With --framework vllm: config/NAME.yaml for an LLM on
    AWS's vLLM image (a base component and a LoRA adapter, from model_code/NAME/model and .../adapter).

    \b
    Next steps, from the project folder:
      smkit train NAME                     # or put your model file into model_code/NAME/artifacts/
      smkit package --config config/NAME.yaml
      smkit local-endpoint --config config/NAME.yaml
      smkit smoke-test --config config/NAME.yaml --endpoint-url http://127.0.0.1:8080
      smkit synth --config config/NAME.yaml      # offline; smkit deploy --config ... with AWS credentials

    With --multi-model SET, the same steps with config/SET.yaml; requests name the model with TargetModel
    NAME.tar.gz (docs/multi-model.md).
    """
    try:
        made = scaffold(root, name, framework, multi_model, handler=handler)
    except ScaffoldError as exc:
        raise click.ClickException(str(exc)) from None
    for path in made.files:
        joined = multi_model is not None and path == made.config
        click.echo(f"{name} is in the set of {path}" if joined else f"created {path}")
    config = f"config/{multi_model or name}.yaml"
    if framework in LLM_FRAMEWORKS:
        click.echo(next_steps(framework, name, Path(config)))
        if handler:
            click.echo(
                f"model_code/{name}/model/model.py: smkit package --config {config} checks it in the engine's "
                "environment and says what serves /ping and /invocations (docs/llm.md, Custom handlers)"
            )
        return
    artifacts = made.model_dir / "artifacts"
    if framework in DEFAULTS_ONLY:
        settings = ", ".join(f"{k}: {v}" for k, v in DEFAULTS_ONLY[framework].items())
        click.echo(
            f"no handler code: {config} sets {settings} in the container's environment and the image's "
            f"default handlers serve the model (docs/hugging-face.md)\n"
            f"next, either train the example: smkit train {name}\n"
            f"or bring your model: save it and its tokenizer with save_pretrained() into {artifacts}/ "
            f"({MODEL_FILES[framework]}), set HF_TASK in {config} to its task, pin the versions you "
            f"trained with in {made.model_dir / 'code' / 'requirements.txt'} and rewrite the samples: "
            f"smkit train {name} --samples-only\n"
            f"then: smkit package --config {config}; smkit local-endpoint --config {config}; "
            f"smkit smoke-test --config {config} --endpoint-url http://127.0.0.1:8080; "
            f"smkit synth --config {config}; smkit deploy --config {config}"
        )
        return
    click.echo(
        f"next, either train the example: smkit train {name}\n"
        f"or bring your model: copy it to {artifacts}/{MODEL_FILES[framework]} (or set MODEL_FILE in "
        f"{made.model_dir / 'code' / 'inference.py'}), pin the versions you trained with in "
        f"{made.model_dir / 'code' / 'requirements.txt'}, then write the samples from a CSV of a few of your "
        f"feature rows (no header): smkit train {name} --samples-only --rows my_rows.csv\n"
        f"then: smkit package --config {config}; smkit local-endpoint --config {config}; "
        f"smkit smoke-test --config {config} --endpoint-url http://127.0.0.1:8080; "
        f"smkit synth --config {config}; smkit deploy --config {config}"
    )
