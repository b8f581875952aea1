"""``smkit init NAME``: scaffold a model folder and its deployment config."""

from __future__ import annotations

from pathlib import Path

import click

from smkit.scaffold import FRAMEWORKS, MODEL_FILES, ScaffoldError, scaffold


@click.command("init")
@click.argument("name")
@click.option("--framework", type=click.Choice(FRAMEWORKS), default="sklearn", show_default=True)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project folder that holds model_code/ and config/.",
)
def init(name: str, framework: str, root: Path) -> None:
    """Create model_code/NAME/ (handler, requirements, train.py, samples/) and config/NAME.yaml.

    \b
    Next steps:
      make train MODEL=NAME              # or put your model file into model_code/NAME/artifacts/
      make package-model MODEL=NAME      # -> build/NAME/model.tar.gz
      make local-endpoint CONFIG=config/NAME.yaml
      smkit smoke-test --config config/NAME.yaml --endpoint-url http://127.0.0.1:8080
    """
    try:
        made = scaffold(root, name, framework)
    except ScaffoldError as exc:
        raise click.ClickException(str(exc)) from None
    for path in made.files:
        click.echo(f"created {path}")
    artifacts = made.model_dir / "artifacts"
    click.echo(
        f"next, either train the example: make train MODEL={name}\n"
        f"or bring your model: copy it to {artifacts}/{MODEL_FILES[framework]} (or set MODEL_FILE in "
        f"{made.model_dir / 'code' / 'inference.py'}), pin the versions you trained with in "
        f"{made.model_dir / 'code' / 'requirements.txt'}, then write the samples from a CSV of a few of your "
        f"feature rows (no header): make samples MODEL={name} ROWS=my_rows.csv\n"
        f"then: make package-model MODEL={name}; make local-endpoint CONFIG={made.config}; "
        f".venv/bin/smkit smoke-test --config {made.config} --endpoint-url http://127.0.0.1:8080"
    )
