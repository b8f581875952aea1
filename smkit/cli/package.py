"""``smkit package`` and ``smkit inspect``: thin click wrappers over :mod:`smkit.packaging` and
:mod:`smkit.ops.package_by_config` (packaging by config).

Exit codes: 0 success, 1 the model or archive was refused (message on stderr names the file, the bad
value and the fix), 2 bad command-line usage.
"""

from __future__ import annotations

from pathlib import Path

import click

from smkit.cli.envopts import command_errors, env_options, environment, say, target
from smkit.ops import package_by_config as model_data
from smkit.ops.package_by_config import BuildOptions, PackageTarget
from smkit.packaging import HandlerCheck, Manifest, PackagingError, inspect_archive
from smkit.packaging.report import size_report

DIR = click.Path(path_type=Path, file_okay=False)


def _fail(error: PackagingError) -> None:
    click.echo(f"error: {error}", err=True)
    raise SystemExit(1)


@click.command()
@click.option(
    "--code",
    "code_dir",
    type=DIR,
    help="Folder with inference.py, requirements.txt [default: --config's models].",
)
@click.option("--artifacts", "artifacts_dir", type=DIR, help="Folder with the model weights.")
@click.option(
    "--include",
    type=click.Path(path_type=Path, dir_okay=False),
    multiple=True,
    help="A helper file to copy into code/ as well (shared by several models); repeatable.",
)
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), help="The .tar.gz to write.")
@click.option("--uncompressed", type=DIR, help="Also lay the tree out here (S3Prefix, CompressionType None).")
@click.option("--entry-point", default="inference.py", show_default=True, help="Handler module in --code.")
@click.option("--no-load-check", is_flag=True, help="Import the handler but do not call model_fn.")
@click.option("--threads", type=click.IntRange(min=1), help="Compression threads [default: all CPUs].")
@click.option("--level", type=click.IntRange(0, 3), default=2, show_default=True, help="isal level.")
@click.option(
    "--check-timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds of CPU time the handler check may use; one that uses no CPU for as long is stopped too.",
)
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar [default: on a TTY for >= 64 MiB]."
)
@click.option(
    "--vendor-wheels/--no-vendor-wheels",
    default=None,
    help="Put the requirements' wheels for the image's platform into code/wheels, installed offline at "
    "container start [default: when --config has network_isolation on, or without --config].",
)
@click.option("--force", is_flag=True, help="With --config alone: rebuild archives that are up to date.")
@env_options
def package(
    code_dir: Path | None,
    artifacts_dir: Path | None,
    include: tuple[Path, ...],
    output: Path | None,
    uncompressed: Path | None,
    entry_point: str,
    no_load_check: bool,
    threads: int | None,
    level: int,
    check_timeout: float,
    progress: bool | None,
    vendor_wheels: bool | None,
    force: bool,
    config_path: Path | None,
    python: str | None,
) -> None:
    """Check the handler in the model's own environment, then build a reproducible model.tar.gz.

    \b
    smkit package --config config/churn.yaml      # every archive the config deploys, from model_code/
    smkit package --code DIR --artifacts DIR --output model.tar.gz [--config CONFIG]

    The environment is the image's Python with code/requirements.txt installed, built once and cached
    (never in smkit's own venv); with network isolation the requirements' wheels are vendored into
    code/wheels so the endpoint installs them without network access, except those the image provides.
    """
    if code_dir is None and artifacts_dir is None and config_path is not None:
        package_config(config_path, force=force, python=python)
        return
    if code_dir is None or artifacts_dir is None:
        raise click.UsageError("pass --code DIR and --artifacts DIR, or --config CONFIG alone")
    if output is None and uncompressed is None:
        raise click.UsageError("pass --output FILE and/or --uncompressed DIR")
    goal = target(config_path, output)
    options = BuildOptions(
        include=include,
        uncompressed=uncompressed,
        entry_point=entry_point,
        load_model=not no_load_check,
        threads=threads,
        level=level,
        progress=progress,
        timeout_s=check_timeout,
        vendor_wheels=vendor_wheels,
        python=python,
    )
    try:
        manifest = build_for(goal, code_dir, artifacts_dir, output, options)
    except PackagingError as error:
        _fail(error)
        return
    click.echo(manifest.summary())
    click.echo("\n".join(size_report(manifest)))


def build_for(
    goal: PackageTarget, code_dir: Path, artifacts_dir: Path, output: Path | None, options: BuildOptions
) -> Manifest:
    """:func:`smkit.ops.package_by_config.build_for`, its environment errors as the command's own."""
    with command_errors(PackagingError):
        return model_data.build_for(goal, code_dir, artifacts_dir, output, options, say=say)


@click.command()
@click.argument("archive", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--no-handler-check", is_flag=True, help="Only list and verify hashes; do not import the code.")
@click.option("--no-load-check", is_flag=True, help="Import the handler but do not call model_fn.")
@click.option("--entry-point", default="inference.py", show_default=True, help="Handler module in code/.")
@env_options
def inspect(
    archive: Path,
    no_handler_check: bool,
    no_load_check: bool,
    entry_point: str,
    config_path: Path | None,
    python: str | None,
) -> None:
    """List an existing model archive and re-validate it (safety, manifest hashes, layout, handler).

    The handler check runs in the model's environment (as for smkit package), offline from code/wheels
    when the archive vendors its wheels.
    """
    goal = target(config_path, archive)
    try:
        report = inspect_archive(
            archive,
            handler_check=not no_handler_check,
            handler=HandlerCheck(
                entry_point=entry_point,
                load_model=not no_load_check,
                environment=environment(goal.runtime, python),
                framework=goal.defaults,
                container_env=goal.container_env,
            ),
        )
    except PackagingError as error:
        _fail(error)
        return
    click.echo(report.summary())


def package_config(
    config_path: Path, *, force: bool = False, python: str | None = None, implicit: bool = False
) -> list[Path]:
    """:func:`smkit.ops.package_by_config.package_config`, saying what it does; a refusal ends the command
    with its message."""
    with command_errors():
        return model_data.package_config(
            config_path, force=force, python=python, implicit=implicit, say=say, show=click.echo
        )
