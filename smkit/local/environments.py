"""The environment each local container runs in: the model's, as on the endpoint (smkit.modelenv).

A single model runs in its model environment (the image layer plus its model layer). A multi-model
container runs in the image layer alone, as on AWS: each model installs its own ``code/requirements.txt``
when it is first loaded (smkit.serving.worker.multimodel, into the cache's ``requirements`` folder), so a handler
importing a package that neither the image nor its requirements provide fails to load here as it would on
the endpoint, with the same error a single model gets.

Network isolation is honoured as on AWS: an archive that vendors wheels (``code/wheels``) is installed
from them offline (smkit.hosting.requirements). One that does not can only run if the image already
satisfies its ``code/requirements.txt``; the container could not install the rest at start, so the local
endpoint refuses to start it, naming the lines and the fixes.
"""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

from smkit.contract import SMKIT_FRAMEWORK
from smkit.hosting import requirements
from smkit.local.artifacts import ArtifactError
from smkit.modelenv import (
    ImageRuntime,
    ModelEnvError,
    ModelEnvironment,
    cache_root,
    image_environment,
    model_environment,
)
from smkit.modelenv.provided import unmet_by_image
from smkit.tfs.layout import inspect_layout


def refusal(label: str, requirements_path: str, unmet: tuple[str, ...], runtime: ImageRuntime) -> str:
    """Why a network-isolated container cannot start, and the three ways out."""
    n = len(unmet)
    return (
        f"{label}: network isolation is on and {requirements_path} needs {', '.join(repr(u) for u in unmet)}, "
        f"which {runtime.label} does not provide and the archive does not vendor (no code/wheels), so on AWS "
        f"the container could not install {'it' if n == 1 else 'them'} at start. Fix one of: package the "
        "model with `smkit package --config CONFIG` (vendors the wheels into code/wheels); add "
        f"{'the line' if n == 1 else 'the lines'} to the image's requirements (image.requirements in the "
        "config, or container/requirements-extra.txt for every model); or turn model.network_isolation off"
    )


def check_isolated(model_dir: Path, runtime: ImageRuntime, label: str) -> None:
    """Refuse (:class:`ArtifactError`) a model the isolated endpoint could not install; see the module."""
    req = requirements.requirements_file(str(model_dir))
    if req is None or requirements.wheels_dir(str(model_dir)) is not None:
        return
    unmet = unmet_by_image(runtime, Path(req).read_text(encoding="utf-8"))
    if unmet:
        raise ArtifactError(refusal(label, req, unmet, runtime))


def check_isolated_archives(prefix: Path, runtime: ImageRuntime, label: str) -> None:
    """:func:`check_isolated` for every archive of a multi-model prefix (each installs when it loads)."""
    for archive in sorted(prefix.rglob("*.tar.gz")) if prefix.is_dir() else ():
        try:
            with tarfile.open(archive) as tar:
                text, vendored = None, False
                for member in tar:
                    name = member.name.removeprefix("./")
                    if name == "code/requirements.txt" and member.isfile():
                        handle = tar.extractfile(member)
                        text = handle.read().decode("utf-8") if handle else ""
                    vendored = vendored or (name.startswith("code/wheels/") and name.endswith(".whl"))
        except (tarfile.TarError, OSError, UnicodeDecodeError) as exc:
            raise ArtifactError(f"{label}: {archive}: {exc}") from None
        if text is not None and not vendored:
            unmet = unmet_by_image(runtime, text)
            if unmet:
                where = f"{archive.relative_to(prefix)}'s code/requirements.txt"
                raise ArtifactError(refusal(label, where, unmet, runtime))


def environment_for(
    model_dir: Path | None,
    runtime: ImageRuntime,
    *,
    python: str | None,
    isolated: bool,
    label: str,
    multi_model_prefix: Path | None = None,
) -> ModelEnvironment:
    """The environment of one container (``model_dir`` None: multi-model, the image layer alone; each
    model installs its requirements when it loads).

    With ``isolated`` and no ``python`` (which stands for the image as it is), a model whose requirements
    neither the archive's wheels nor the image provide is refused, as the endpoint would fail to start it.
    """
    if model_dir is not None and inspect_layout(model_dir).is_tfs:
        # The TF Serving form (smkit/tfs) runs in smkit's own interpreter, with smkit[tensorflow], and
        # installs code/requirements.txt itself (docs/tensorflow-serving.md).
        return ModelEnvironment(python=python or sys.executable, runtime=runtime)
    try:
        if isolated and python is None and runtime.framework is None:
            if model_dir is not None:
                check_isolated(model_dir, runtime, label)
            elif multi_model_prefix is not None:
                check_isolated_archives(multi_model_prefix, runtime, label)
        if model_dir is None and python is not None:
            env = ModelEnvironment(python=python, runtime=runtime)
        elif model_dir is None:
            # Multi-model: the image's interpreter (smkit is linked into it); every model installs its own
            # requirements when it loads (serving.multimodel), into the cache as a single model's are.
            requirements_dir = str(cache_root() / "requirements")
            env = ModelEnvironment(
                python=image_environment(runtime), requirements_dir=requirements_dir, runtime=runtime
            )
        else:
            env = model_environment(model_dir, runtime, python=python)
    except ModelEnvError as exc:
        raise ArtifactError(f"{label}: the model's environment: {exc}") from None
    if runtime.framework is not None:
        return ModelEnvironment(
            python=env.python,
            extra_paths=env.extra_paths,
            requirements_dir=env.requirements_dir,
            runtime=runtime,
            extra_environ={SMKIT_FRAMEWORK: runtime.framework},
        )
    return env


def environment_for_path(
    model: Path, runtime: ImageRuntime, *, python: str | None, isolated: bool
) -> ModelEnvironment:
    """The environment of a model given as an archive or a folder (``smkit serve``, batch ``--local``).

    ``isolated``: the config the model is for has network isolation on (then see :func:`environment_for`).
    """
    import tempfile

    from smkit.archive import ArchiveError, safe_extract

    if model.is_dir():
        return environment_for(model, runtime, python=python, isolated=isolated, label=str(model))
    with tempfile.TemporaryDirectory(prefix="smkit-env-") as scratch:
        try:
            safe_extract(model, Path(scratch) / "model")
        except (ArchiveError, OSError) as exc:
            raise ArtifactError(f"{model}: {exc}") from None
        return environment_for(
            Path(scratch) / "model", runtime, python=python, isolated=isolated, label=str(model)
        )
