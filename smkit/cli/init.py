"""``smkit init NAME``: scaffold a model folder and its deployment config."""

from __future__ import annotations

from pathlib import Path

import click

from smkit.scaffold import FRAMEWORKS, ScaffoldError, scaffold


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
    click.echo(
        f"next: make train MODEL={name} (or copy your model file into {made.model_dir / 'artifacts'} and run "
        f"make samples MODEL={name} ROWS=a_csv_of_your_feature_rows.csv), then make package-model MODEL={name} "
        f"and make local-endpoint CONFIG={made.config}"
    )
