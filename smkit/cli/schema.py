"""``smkit config-schema``: write (or check) the JSON Schema of deployment configs for editors."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_OUTPUT = Path("config/schema.json")


@click.command("config-schema")
@click.option(
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="Where to write the schema.",
)
@click.option("--check", is_flag=True, help="Only compare: exit 1 when the file differs from the models.")
def config_schema(output: Path, check: bool) -> None:
    """Generate the deployment config's JSON Schema from the pydantic models (see smkit/config/schema.py)."""
    from smkit.config.schema import render

    text = render()
    if check:
        current = output.read_text(encoding="utf-8") if output.is_file() else ""
        if current != text:
            click.echo(f"{output} is out of date: run `smkit config-schema --output {output}`", err=True)
            raise SystemExit(1)
        click.echo(f"{output} is up to date")
        return
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}")
