"""The environment each local container runs in: the model's, as on the endpoint (smkit.modelenv).

Network isolation is honoured as on AWS: an archive that vendors wheels (``code/wheels``) is installed
from them offline; one that does not, with requirements the image lacks, would fail to install on the
endpoint, and the local endpoint says so before serving it from the index.
"""

from __future__ import annotations

import sys
from pathlib import Path

from smkit.contract import SMKIT_FRAMEWORK
from smkit.local.artifacts import ArtifactError
from smkit.modelenv import ImageRuntime, ModelEnvError, ModelEnvironment, model_environment
from smkit.serving import requirements
from smkit.tfs.layout import inspect_layout


def _lacks_wheels(model_dir: Path) -> bool:
    req = requirements.requirements_file(str(model_dir))
    if req is None or requirements.wheels_dir(str(model_dir)) is not None:
        return False
    return any(line.split("#", 1)[0].strip() for line in Path(req).read_text(encoding="utf-8").splitlines())


def environment_for(
    model_dir: Path | None, runtime: ImageRuntime, *, python: str | None, isolated: bool, label: str
) -> ModelEnvironment:
    """The environment of one container (``model_dir`` None: multi-model, each model installs at load)."""
    if model_dir is not None and inspect_layout(model_dir).is_tfs:
        # The TF Serving form (smkit/tfs) runs in smkit's own interpreter, with smkit[tensorflow], and
        # installs code/requirements.txt itself (docs/tensorflow-serving.md).
        return ModelEnvironment(python=python or sys.executable, runtime=runtime)
    try:
        if model_dir is None:
            # Multi-model: every model installs its own requirements when it loads (serving.multimodel),
            # into the process that already holds the others' modules; that runs with smkit's interpreter.
            env = ModelEnvironment(python=python or sys.executable, runtime=runtime)
        else:
            if isolated and python is None and _lacks_wheels(model_dir):
                print(
                    f"smkit: warning: {label}: network isolation is on and the archive has no code/wheels, "
                    "so on AWS the container cannot install code/requirements.txt unless the image already "
                    "satisfies it; package it with `smkit package --config CONFIG` to vendor the wheels",
                    file=sys.stderr,
                    flush=True,
                )
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
    model: Path, runtime: ImageRuntime, *, python: str | None, isolated: bool = True
) -> ModelEnvironment:
    """The environment of a model given as an archive or a folder (``smkit serve``, batch ``--local``)."""
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
