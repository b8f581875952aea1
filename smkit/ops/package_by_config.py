"""Packaging by config: build each piece of a config's model data that comes from ``model_code/`` and is
missing or stale, for the image and network isolation of the container it belongs to.

``smkit package --config`` calls :func:`package_config`; ``smkit synth``, ``smkit deploy`` and ``smkit
local-endpoint`` call it with ``implicit=True`` first, so a stale model never ships; ``scripts/package_models.py
--config`` calls it for the models of ``smkit init`` in this repository. Whether model data is stale is
decided one way, by the record of its inputs each build leaves beside what it wrote (:mod:`smkit.project`).

:func:`target` reads what a config says about the container whose model data is being built (its image,
network isolation, default handlers, environment); :func:`build_for` builds one archive for it. Errors are
:class:`~smkit.packaging.PackagingError` (file, problem, fix), :class:`~smkit.config.ConfigError` and
:class:`ModelDataError`; progress lines go to ``say`` and build summaries to ``show``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from smkit.config import load_deployment
from smkit.config.resolved import ResolvedDeployment
from smkit.config.security import Artifacts
from smkit.modelenv import ImageRuntime, ModelEnvError, model_environment
from smkit.packaging import HandlerCheck, Manifest, build_archive
from smkit.packaging.report import size_report
from smkit.packaging.vendor import VendorTarget, pinned_versions
from smkit.project import FOLDER_KINDS, ProjectModel, multi_model_sets, project_models, unknown_members
from smkit.requirement_lines import file_lines

Say = Callable[[str], None]


class ModelDataError(RuntimeError):
    """Model data that cannot be built as the config asks (an environment that cannot be made, a stale
    archive smkit did not build, a model a set lists that does not exist); the message says what to do."""


def say(message: str) -> None:
    """A progress or advice line on stderr (``smkit: ...``)."""
    print(f"smkit: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class PackageTarget:
    """What a config says about the container a model is packaged for (defaults: the kit's image, network
    isolation on).

    ``vendor_wheels``, ``defaults`` (the default handlers the container applies) and ``container_env`` (its
    environment, ``HF_TASK`` included) come from the resolved container
    (:class:`smkit.config.resolved.ResolvedContainer`)."""

    runtime: ImageRuntime
    network_isolation: bool = True
    vendor_wheels: bool = True
    artifacts: Artifacts | None = None  # None: no --config
    defaults: str | None = None
    container_env: Mapping[str, str] = field(default_factory=dict)


def target(config_path: Path | None, output: Path | None = None) -> PackageTarget:
    """The resolved container whose model data is ``output`` (else the first container) of the config;
    :class:`~smkit.config.ConfigError` for a config that does not load."""
    if config_path is None:
        return PackageTarget(ImageRuntime())
    deployment = load_deployment(config_path)
    found = deployment.container_for_data(output) if output is not None else None
    container = found or deployment.containers[0]
    return PackageTarget(
        container.image.runtime,
        container.network_isolation,
        container.vendor_wheels,
        deployment.artifacts,
        container.defaults,
        dict(container.environment),
    )


def environment(
    runtime: ImageRuntime, python: str | None, *, progress: bool = True
) -> Callable[[Path], tuple[str, tuple[str, ...]]]:
    """``model folder -> (interpreter, requirement directories)`` for the packager's handler check."""

    def build(model_dir: Path) -> tuple[str, tuple[str, ...]]:
        try:
            env = model_environment(model_dir, runtime, python=python, progress=progress)
        except ModelEnvError as exc:
            raise ModelDataError(f"the model's environment: {exc}") from None
        return env.python, env.extra_paths

    return build


@dataclass(frozen=True)
class BuildOptions:
    """How one archive is built (``smkit package``'s command-line options)."""

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
    goal: PackageTarget,
    code_dir: Path,
    artifacts_dir: Path,
    output: Path | None,
    options: BuildOptions,
    *,
    say: Say = say,
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
        handler=HandlerCheck(
            entry_point=options.entry_point,
            load_model=options.load_model,
            timeout_s=options.timeout_s,
            environment=environment(runtime, options.python, progress=options.progress is not False),
            framework=goal.defaults,
            container_env=goal.container_env,
        ),
        threads=options.threads,
        level=options.level,
        progress=options.progress,
        vendor=VendorTarget(python=runtime.python, provided=_image_pins(runtime)) if vendor else None,
        wheel_cache=cache_root(),
        allow_globals=tuple(goal.artifacts.allow_globals) if goal.artifacts else (),
    )


def _image_pins(runtime: ImageRuntime) -> tuple[tuple[str, str], ...]:
    """What the image installs at pinned versions (its requirements files and image.requirements)."""
    from smkit.modelenv.builder import image_requirements

    return pinned_versions(image_requirements(runtime))


def _requirement_lines(code_dir: Path) -> bool:
    path = Path(code_dir) / "requirements.txt"
    return path.is_file() and bool(file_lines(path))


def _provided_by_image(runtime: ImageRuntime, code_dir: Path, python: str | None) -> bool:
    """The image (with image.requirements) satisfies every requirement line, as the container will see."""
    from smkit.modelenv.provided import unmet_by_image

    path = Path(code_dir) / "requirements.txt"
    if python is not None or not path.is_file():
        return False
    text = path.read_text(encoding="utf-8")
    try:
        return not unmet_by_image(runtime, text)
    except ModelEnvError as exc:
        raise ModelDataError(f"the image's environment: {exc}") from None


def _data_path(model: ProjectModel) -> Path:
    """The config's ``model_data.path`` the model comes from (a multi-model member: its set's folder)."""
    return model.archive.parent if model.kind == "member" else model.archive


def _settings(config_path: Path, model: ProjectModel) -> dict[str, object]:
    """The settings that shape the archive besides its inputs; a change of any makes it stale."""
    goal = target(config_path, _data_path(model))
    return {
        "image": goal.runtime.label,
        "python": goal.runtime.python,
        "network_isolation": goal.network_isolation,
        "smkit": version("smkit"),
    }


def package_config(
    config_path: Path,
    *,
    force: bool = False,
    python: str | None = None,
    implicit: bool = False,
    say: Say = say,
    show: Say = print,
) -> list[Path]:
    """Build each piece of model data of the config that comes from ``model_code/`` and is missing or
    stale (archives, uncompressed prefixes, the archives of multi-model sets, the archives of adapter
    components' and channels' folders), saying what it did, after checking the custom handler files of the config's vLLM
    model folders (not when ``implicit``); the paths built.

    ``implicit`` (before synth, deploy or a local endpoint): a stale multi-model archive that smkit did not
    build (no record of its inputs) is refused, naming it, instead of being rebuilt from ``model_code``.
    """
    deployment = load_deployment(config_path)
    unknown = unknown_members(deployment)
    if unknown:
        raise ModelDataError(f"{config_path}: " + "; ".join(unknown))
    models = project_models(deployment)
    checked = [] if implicit else check_engine_handlers(deployment, say=say, show=show)
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
        if model.kind in FOLDER_KINDS:
            if _package_folder(model, force=force, say=say, show=show):
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
            raise ModelDataError(
                f"multi-model archive {model.archive} is stale ({reason}) and was not built by smkit package "
                f"--config; package it again: smkit package --config {config_path} (rebuilds it from "
                f"{model.model_dir}), or the command that built it"
            )
        say(f"packaging {model.model_dir} -> {what} {model.archive} ({reason})")
        prefix = model.kind == "prefix"
        manifest = build_for(
            target(config_path, _data_path(model)),
            model.model_dir / "code",
            model.model_dir / "artifacts",
            None if prefix else model.archive,
            BuildOptions(python=python, uncompressed=model.archive if prefix else None),
            say=say,
        )
        model.record(settings)
        show(manifest.summary())
        show("\n".join(size_report(manifest)))
        built.append(model.archive)
    return built


def _package_folder(model: ProjectModel, *, force: bool, say: Say, show: Say) -> bool:
    """Archive an adapter component's or a channel's folder when its archive is missing or stale; whether it
    did."""
    from smkit.packaging.folder import archive_folder

    settings = {"smkit": version("smkit")}
    reason = "--force" if force else model.stale(settings)
    what = "adapter" if model.kind == "adapter" else f"channel of container {model.containers[0]}"
    if reason is None:
        say(f"{what} archive {model.archive} is up to date with {model.model_dir}")
        return False
    say(f"packaging {what} {model.name}: {model.model_dir} -> {model.archive} ({reason})")
    digest = archive_folder(model.model_dir, model.archive, label=f"{model.kind} folder")
    model.record(settings)
    size = model.archive.stat().st_size
    show(f"{what} {model.name}: {model.archive} ({size:,} bytes, sha256 {digest})")
    return True


def check_engine_handlers(deployment: ResolvedDeployment, *, say: Say = say, show: Say = print) -> list[Path]:
    """Check the custom handler file (``model.py``) of each local model folder on AWS's vLLM image in the
    engine environment, the folder's ``requirements.txt`` layered over it (smkit.llm.handlers), and show
    what serves each route; the folders checked. A refusal is a PackagingError naming the file and line."""
    from smkit.llm.engine import engine_environment
    from smkit.llm.handlers import check_handler_file, handler_folders

    checked = []
    for container in handler_folders(deployment):
        folder = container.model_data.path
        assert folder is not None  # handler_folders: a local folder
        say(f"checking the custom handlers of container {container.name} ({folder}) with vLLM's server code")
        try:
            python, layers = engine_environment(folder)
            report = check_handler_file(folder, container.environment, python=python, extra_paths=layers)
        except ModelEnvError as exc:
            raise ModelDataError(f"container {container.name}: the engine's environment: {exc}") from None
        show(report.summary())
        checked.append(folder)
    return checked
