"""``smkit package`` and ``smkit inspect``: thin click wrappers over :mod:`smkit.packaging`.

Exit codes: 0 success, 1 the model or archive was refused (message on stderr names the file, the bad
value and the fix), 2 bad command-line usage.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import click

from smkit.cli.envopts import PackageTarget, env_options, environment, loaded, say, target
from smkit.config.resolved import ResolvedDeployment
from smkit.modelenv import ImageRuntime
from smkit.packaging import Manifest, PackagingError, build_archive, inspect_archive
from smkit.packaging.report import size_report
from smkit.packaging.vendor import VendorTarget, pinned_versions
from smkit.project import ProjectModel, multi_model_sets, project_models, unknown_members
from smkit.requirement_lines import file_lines

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


@dataclass(frozen=True)
class BuildOptions:
    """How ``smkit package`` builds one archive (its command-line options)."""

    include: tuple[Path, ...] = ()
    uncompressed: Path | None = None
    entry_point: str = "inference.py"
    load_model: bool = True
    threads: int | None = None
    level: int = 2
    progress: bool | None = None
    timeout_s: float = 120.0
    vendor_wheels: bool | None = None
    python: str | None = None


def build_for(
    goal: PackageTarget, code_dir: Path, artifacts_dir: Path, output: Path | None, options: BuildOptions
) -> Manifest:
    """Build one archive for the image and isolation of ``goal``; raises :class:`PackagingError`."""
    from smkit.modelenv import cache_root

    runtime = goal.runtime
    # The resolved deployment's decision (smkit.config.resolved); an AWS framework image never takes wheels.
    if options.vendor_wheels is None:
        vendor = goal.vendor_wheels
    else:
        vendor = options.vendor_wheels and runtime.framework is None
    if vendor and options.vendor_wheels is None and _provided_by_image(runtime, code_dir, options.python):
        vendor = False
        say(
            f"not vendoring wheels: {runtime.label} provides every line of code/requirements.txt, so the "
            "container installs nothing at start"
        )
    if goal.network_isolation and runtime.framework is not None and _requirement_lines(code_dir):
        say(
            f"not vendoring wheels: {runtime.label} installs code/requirements.txt itself at start and "
            "cannot reach an index with network isolation; list only packages the image has, or use the "
            "kit's image"
        )
    return build_archive(
        code_dir,
        artifacts_dir,
        output,
        include=options.include,
        uncompressed=options.uncompressed,
        entry_point=options.entry_point,
        load_model=options.load_model,
        threads=options.threads,
        level=options.level,
        progress=options.progress,
        timeout_s=options.timeout_s,
        vendor=VendorTarget(python=runtime.python, provided=_image_pins(runtime)) if vendor else None,
        wheel_cache=cache_root(),
        environment=environment(runtime, options.python, progress=options.progress is not False),
        framework=goal.defaults,
        container_env=goal.container_env,
        allow_globals=tuple(goal.artifacts.allow_globals) if goal.artifacts else (),
    )


def _image_pins(runtime: ImageRuntime) -> tuple[tuple[str, str], ...]:
    """What the image installs at pinned versions (its requirements files and image.requirements)."""
    from smkit.modelenv.builder import image_requirements

    return pinned_versions(image_requirements(runtime))


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
            load_model=not no_load_check,
            entry_point=entry_point,
            environment=environment(goal.runtime, python),
            framework=goal.defaults,
            container_env=goal.container_env,
        )
    except PackagingError as error:
        _fail(error)
        return
    click.echo(report.summary())


def _requirement_lines(code_dir: Path) -> bool:
    path = Path(code_dir) / "requirements.txt"
    return path.is_file() and bool(file_lines(path))


def _provided_by_image(runtime: ImageRuntime, code_dir: Path, python: str | None) -> bool:
    """The image (with image.requirements) satisfies every requirement line, as the container will see."""
    from smkit.modelenv import ModelEnvError
    from smkit.modelenv.provided import unmet_by_image

    path = Path(code_dir) / "requirements.txt"
    if python is not None or not path.is_file():
        return False
    text = path.read_text(encoding="utf-8")
    try:
        return not unmet_by_image(runtime, text)
    except ModelEnvError as exc:
        raise click.ClickException(f"the image's environment: {exc}") from None


def _data_path(model: ProjectModel) -> Path:
    """The config's ``model_data.path`` the model comes from (a multi-model member: its set's folder)."""
    return model.archive.parent if model.kind == "member" else model.archive


def _settings(config_path: Path, model: ProjectModel) -> dict[str, object]:
    goal = target(config_path, _data_path(model))
    return {
        "image": goal.runtime.label,
        "python": goal.runtime.python,
        "network_isolation": goal.network_isolation,
        "smkit": version("smkit"),
    }


def package_config(
    config_path: Path, *, force: bool = False, python: str | None = None, implicit: bool = False
) -> list[Path]:
    """Build each piece of model data of the config that comes from ``model_code/`` and is missing or
    stale (archives, uncompressed prefixes, the archives of multi-model sets, the archives of adapter
    components' folders), saying what it did.

    ``implicit`` (before synth, deploy or a local endpoint): a stale multi-model archive that smkit did not
    build (no record of its inputs) is refused, naming it, instead of being rebuilt from ``model_code``.
    """
    deployment = loaded(config_path)
    unknown = unknown_members(deployment)
    if unknown:
        raise click.ClickException(f"{config_path}: " + "; ".join(unknown))
    models = project_models(deployment)
    checked = [] if implicit else check_engine_handlers(deployment)
    for folder in multi_model_sets(deployment):
        if not any(m.kind == "member" and m.archive.parent == folder for m in models):
            say(
                f"{folder}: multi-model set with no model of a model_code/NAME folder; add one with smkit init "
                f"NAME --multi-model {folder.name}, or list an existing model_code/NAME under model_data.models"
            )
    if not models and not multi_model_sets(deployment) and not checked:
        say(
            f"{config_path}: no model_data.path of the form build/NAME/model.tar.gz (archive) or "
            "build/NAME/model (prefix) beside a model_code/NAME"
        )
    built = []
    for model in models:
        if model.kind == "adapter":
            if _package_adapter(model, force=force):
                built.append(model.archive)
            continue
        settings = _settings(config_path, model)
        reason = "--force" if force else model.stale(settings)
        what = {"archive": "archive", "prefix": "uncompressed prefix", "member": "multi-model archive"}[
            model.kind
        ]
        if reason is None:
            say(f"{what} {model.archive} is up to date with {model.model_dir}")
            continue
        if implicit and model.kind == "member" and model.exists() and not model.stamp.is_file():
            raise click.ClickException(
                f"multi-model archive {model.archive} is stale ({reason}) and was not built by smkit package "
                f"--config; package it again: smkit package --config {config_path} (rebuilds it from "
                f"{model.model_dir}), or the command that built it"
            )
        say(f"packaging {model.model_dir} -> {what} {model.archive} ({reason})")
        prefix = model.kind == "prefix"
        try:
            manifest = build_for(
                target(config_path, _data_path(model)),
                model.model_dir / "code",
                model.model_dir / "artifacts",
                None if prefix else model.archive,
                BuildOptions(python=python, uncompressed=model.archive if prefix else None),
            )
        except PackagingError as error:
            raise click.ClickException(str(error)) from None
        model.record(settings)
        click.echo(manifest.summary())
        click.echo("\n".join(size_report(manifest)))
        built.append(model.archive)
    return built


def _package_adapter(model: ProjectModel, *, force: bool) -> bool:
    """Archive an adapter component's folder when its archive is missing or stale; whether it did."""
    from smkit.packaging.folder import archive_folder

    settings = {"smkit": version("smkit")}
    reason = "--force" if force else model.stale(settings)
    if reason is None:
        say(f"adapter archive {model.archive} is up to date with {model.model_dir}")
        return False
    say(f"packaging adapter {model.name}: {model.model_dir} -> {model.archive} ({reason})")
    try:
        digest = archive_folder(model.model_dir, model.archive)
    except PackagingError as error:
        raise click.ClickException(str(error)) from None
    model.record(settings)
    size = model.archive.stat().st_size
    click.echo(f"adapter {model.name}: {model.archive} ({size:,} bytes, sha256 {digest})")
    return True


def check_engine_handlers(deployment: ResolvedDeployment) -> list[Path]:
    """Check the custom handler file (``model.py``) of each local model folder on AWS's vLLM image in the
    engine environment, the folder's ``requirements.txt`` layered over it (smkit.llm.handlers), and print
    what serves each route; the folders checked. A refusal is a ClickException naming the file and line."""
    from smkit.llm.engine import engine_environment
    from smkit.llm.handlers import check_handler_file, handler_folders
    from smkit.modelenv import ModelEnvError

    checked = []
    for container in handler_folders(deployment):
        folder = container.model_data.path
        assert folder is not None  # handler_folders: a local folder
        say(f"checking the custom handlers of container {container.name} ({folder}) with vLLM's server code")
        try:
            python, layers = engine_environment(folder)
            report = check_handler_file(folder, container.environment, python=python, extra_paths=layers)
        except ModelEnvError as exc:
            raise click.ClickException(
                f"container {container.name}: the engine's environment: {exc}"
            ) from None
        except PackagingError as error:
            raise click.ClickException(str(error)) from None
        click.echo(report.summary())
        checked.append(folder)
    return checked
