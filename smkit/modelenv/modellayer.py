"""The model layer: a model's requirements resolved once and installed once, shared by every command.

The layer's key is the image layer's key plus the resolved set (``name==version`` of every distribution
the model adds to the image), so a model folder and its packaged archive, whose vendored wheels are that
same set, share one layer (smkit.modelenv.builder explains the two layers).

- Without ``code/wheels`` the file is resolved by ``uv pip compile`` for the image layer's interpreter
  and the pins are installed with ``--no-deps`` (the resolution is already done).
- With ``code/wheels`` the wheels are the resolution (``smkit package`` downloaded them for the image's
  platform): they are installed offline, with no index and no user configuration, as on an endpoint with
  network isolation. A wheel that is not a readable zip archive is refused, naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from smkit.hosting import requirements as model_requirements
from smkit.modelenv import uvtool
from smkit.modelenv.builder import (
    COMPLETE,
    ImageLayer,
    ModelEnvironment,
    _say,
    building,
    cache_root,
    ensure_writable,
    image_environment,
    image_layer,
)
from smkit.modelenv.image_runtime import ImageRuntime, ModelEnvError
from smkit.requirement_lines import localized_text, requirement_lines

MODELS_DIR = "models"


def _pin(name: str, version: str) -> str:
    with contextlib.suppress(InvalidVersion):
        version = str(Version(version))
    return f"{canonicalize_name(name)}=={version}"


def image_pins(layer: ImageLayer) -> set[str]:
    """The image layer's ``name==version`` pins, normalized (what a model need not install again)."""
    pins = set()
    for line in layer.packages:
        name, sep, version = line.partition("==")
        if sep and not any(c in version for c in "*;, <>!~"):
            pins.add(_pin(name.strip(), version.strip()))
    return pins


def wheel_pins(wheels: Path) -> list[str]:
    """The resolution vendored wheels stand for, one ``name==version`` per wheel file."""
    pins = []
    for path in sorted(wheels.glob("*.whl")):
        try:
            name, version, _, _ = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise ModelEnvError(
                f"{path}: not a wheel file name ({exc}); package the model again (smkit package) so that "
                "code/wheels holds the wheels it downloaded"
            ) from None
        pins.append(_pin(name, str(version)))
    return pins


def _wheel_pin(path: Path) -> str:
    name, version, _, _ = parse_wheel_filename(path.name)
    return _pin(name, str(version))


def check_wheels(wheels: Path) -> list[Path]:
    """The vendored wheel files, each opened as a zip archive first: a damaged one is refused by path."""
    files = sorted(wheels.glob("*.whl"))
    for path in files:
        try:
            with zipfile.ZipFile(path) as archive:
                archive.getinfo(next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD")))
        except (zipfile.BadZipFile, OSError, StopIteration) as exc:
            reason = "it has no .dist-info/RECORD" if isinstance(exc, StopIteration) else str(exc)
            raise ModelEnvError(
                f"{path}: the vendored wheel is damaged ({reason}), so it is not installed; package the "
                "model again (smkit package --config CONFIG, or smkit package --vendor-wheels) to download "
                "it afresh"
            ) from None
    return files


@contextlib.contextmanager
def local_requirements(requirements: Path, model_dir: Path) -> Iterator[Path]:
    """``requirements``, or a copy whose lines naming ``/opt/ml/model/...`` name the same files under
    ``model_dir`` (:func:`smkit.requirement_lines.localized_text`), for as long as the block runs."""
    try:
        text = requirements.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        yield requirements  # resolving reports the file's problem
        return
    localized = localized_text(text, model_dir)
    if localized is None:
        yield requirements
        return
    with tempfile.TemporaryDirectory(prefix="smkit-requirements-") as tmp:
        local = Path(tmp) / "requirements.txt"
        local.write_text(localized, encoding="utf-8")
        yield local


def resolve(
    requirements: Path, interpreter: str, *, progress: bool, constraints: Path | None = None
) -> tuple[list[str], list[str]]:
    """``uv pip compile`` of the file for ``interpreter`` (within ``constraints``): (index options, pins)."""
    output = uvtool.run_uv(
        [
            "pip",
            "compile",
            str(requirements),
            *(["--constraint", str(constraints)] if constraints is not None else []),
            "--python",
            interpreter,
            "--quiet",
            "--no-header",
            "--no-annotate",
            "--emit-index-url",
            "--emit-find-links",
            *uvtool.index_options(),
        ],
        f"resolving {requirements}",
        progress=progress,
    )
    options, pins = [], []
    for raw in output.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-"):
            options.append(line)
        elif "==" in line and " @ " not in line:
            name, _, version = line.partition("==")
            pins.append(_pin(name.strip(), version.split(";")[0].strip()))
        else:
            pins.append(line)  # a direct reference (name @ URL) stays as written
    return options, pins


def model_layer(
    model_dir: Path,
    image: ImageLayer,
    runtime: ImageRuntime,
    *,
    progress: bool,
    requirements: Path | None = None,
    constraints: Path | None = None,
) -> Path:
    """The model layer of ``model_dir`` on ``image`` (built on first use): its folder.

    ``requirements``: the file to install (default ``code/requirements.txt``, with its vendored wheels).
    ``constraints``: a file of ``name==version`` lines the resolution must keep (an engine environment's
    pins, :func:`smkit.llm.layer.requirements_layer`); a package it names is then never installed again.
    """
    wheels_path = model_requirements.wheels_dir(str(model_dir)) if requirements is None else None
    requirements = requirements or model_dir / "code" / "requirements.txt"
    wheels = Path(wheels_path) if wheels_path else None
    provided = image_pins(image)
    if wheels is not None:
        # Checked even when the layer exists: the endpoint would install these very files.
        check_wheels(wheels)
        options: list[str] = []
        pins = wheel_pins(wheels)
    else:
        with local_requirements(requirements, model_dir) as local:
            options, pins = resolve(local, image.python, progress=False, constraints=constraints)
    if constraints is not None:
        # Held to the constraints' versions: installed already (a local label such as +cpu aside).
        names = {pin.partition("==")[0] for pin in provided}
        provided |= {pin for pin in pins if pin.partition("==")[0] in names}
    added = sorted(pin for pin in pins if pin not in provided)
    key_data = {"image": image.key, "python": runtime.python, "pins": added}
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:16]
    root = cache_root() / MODELS_DIR
    layer = root / key
    with building(layer, root) as needed:
        if not needed:
            return layer
        for leftover in root.glob(f"{key}.*"):
            if leftover.is_dir():  # a staging folder of a build that was killed
                shutil.rmtree(leftover, ignore_errors=True)
        source = f"offline from {wheels}" if wheels else "from the package index"
        if progress:
            _say(f"installing {requirements} {source} into {layer} ({len(added)} distributions; once)")
        staging = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
        try:
            _install(staging, image.python, wheels, options, added)
            record = {"kind": "model", "requirements": str(requirements), "source": source, **key_data}
            (staging / COMPLETE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            os.rename(staging, layer)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return layer


def _install(staging: Path, python: str, wheels: Path | None, options: list[str], pins: list[str]) -> None:
    base = ["pip", "install", "--quiet", "--python", python, "--target", str(staging), "--no-deps"]
    if wheels is not None:
        files = check_wheels(wheels)
        added = set(pins)
        chosen = [str(f) for f in files if _wheel_pin(f) in added]
        if chosen:
            uvtool.run_uv(
                [*base, "--no-index", "--offline", *chosen],
                f"installing the vendored wheels of {wheels} (offline)",
                progress=False,
                offline=True,
            )
        return
    if not pins:
        return
    pinned = staging.parent / f"{staging.name}.txt"
    pinned.write_text("\n".join([*options, *pins]) + "\n", encoding="utf-8")
    try:
        uvtool.run_uv([*base, "-r", str(pinned), *uvtool.index_options()], "installing", progress=False)
    finally:
        pinned.unlink(missing_ok=True)


def model_environment(
    model_dir: str | Path,
    runtime: ImageRuntime | None = None,
    *,
    python: str | None = None,
    progress: bool = True,
) -> ModelEnvironment:
    """The environment that runs the model in ``model_dir`` (which holds ``code/requirements.txt``).

    With ``python`` (``--python PATH``) that interpreter is used as it is: nothing is installed, and the
    serving runtime installs what it lacks at start, as in the image. Otherwise the image layer is built
    (or reused) and the model layer resolved and installed once (see the module docstring).
    """
    runtime = runtime or ImageRuntime()
    model_dir = str(model_dir)
    if python is not None:
        return ModelEnvironment(python=python, runtime=runtime)
    req_file = model_requirements.requirements_file(model_dir)
    text = Path(req_file).read_text(encoding="utf-8") if req_file else ""
    interpreter = image_environment(runtime, text, progress=progress)
    base = str(cache_root() / "requirements")
    if req_file is None or not requirement_lines(text):
        return ModelEnvironment(python=interpreter, requirements_dir=base, runtime=runtime)
    tag = "cp" + runtime.python.replace(".", "")
    link = model_requirements.target_dir(model_dir, base, tag=tag)
    if not os.path.isdir(link):
        layer = model_layer(Path(model_dir), image_layer(runtime, text), runtime, progress=progress)
        ensure_writable(Path(base))
        staged = f"{link}.{os.getpid()}.link"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staged)
        os.symlink(layer, staged, target_is_directory=True)
        os.replace(staged, link)
    return ModelEnvironment(python=interpreter, extra_paths=(link,), requirements_dir=base, runtime=runtime)
