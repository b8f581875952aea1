"""``smkit package`` and ``smkit inspect``: thin click wrappers over :mod:`smkit.packaging`.

Exit codes: 0 success, 1 the model or archive was refused (message on stderr names the file, the bad
value and the fix), 2 bad command-line usage.
"""

from __future__ import annotations

from pathlib import Path

import click

from smkit.packaging import PackagingError, build_archive, inspect_archive

DIR = click.Path(path_type=Path, file_okay=False)


def _fail(error: PackagingError) -> None:
    click.echo(f"error: {error}", err=True)
    raise SystemExit(1)


@click.command()
@click.option(
    "--code", "code_dir", type=DIR, required=True, help="Folder with inference.py, requirements.txt."
)
@click.option("--artifacts", "artifacts_dir", type=DIR, required=True, help="Folder with the model weights.")
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
@click.option("--check-timeout", type=float, default=120.0, show_default=True, help="Seconds for the check.")
@click.option(
    "--progress/--no-progress", default=None, help="Progress bar [default: on a TTY for >= 64 MiB]."
)
def package(
    code_dir: Path,
    artifacts_dir: Path,
    include: tuple[Path, ...],
    output: Path | None,
    uncompressed: Path | None,
    entry_point: str,
    no_load_check: bool,
    threads: int | None,
    level: int,
    check_timeout: float,
    progress: bool | None,
) -> None:
    """Check the handler, then build a reproducible model.tar.gz and print its manifest."""
    try:
        manifest = build_archive(
            code_dir,
            artifacts_dir,
            output,
            include=include,
            uncompressed=uncompressed,
            entry_point=entry_point,
            load_model=not no_load_check,
            threads=threads,
            level=level,
            progress=progress,
            timeout_s=check_timeout,
        )
    except PackagingError as error:
        _fail(error)
        return
    click.echo(manifest.summary())


@click.command()
@click.argument("archive", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--no-handler-check", is_flag=True, help="Only list and verify hashes; do not import the code.")
@click.option("--no-load-check", is_flag=True, help="Import the handler but do not call model_fn.")
@click.option("--entry-point", default="inference.py", show_default=True, help="Handler module in code/.")
def inspect(archive: Path, no_handler_check: bool, no_load_check: bool, entry_point: str) -> None:
    """List an existing model archive and re-validate it (safety, manifest hashes, layout, handler)."""
    try:
        report = inspect_archive(
            archive, handler_check=not no_handler_check, load_model=not no_load_check, entry_point=entry_point
        )
    except PackagingError as error:
        _fail(error)
        return
    click.echo(report.summary())
