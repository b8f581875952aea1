"""Build (once) and reuse the interpreter a model runs in locally, never touching the kit's own venv.

Two layers, as in the serving image, both built by uv (:mod:`smkit.modelenv.uvtool`) and cached under
``<cache>``, the one place ``smkit cache`` lists and prunes (:mod:`smkit.modelenv.cache`):

1. The **image layer**: a venv with the image's Python version and the packages the image installs
   (``container/requirements*.txt``, written from uv.lock by ``make lock``; for an AWS framework image also
   its framework, e.g. ``torch==2.6.0.*``), with their bytecode as the image's ``pip install`` writes it.
   Cached under ``<cache>/envs/<hash of version and packages>``, shared by every checkout and install of
   the kit: the kit's ``smkit`` package is never copied in. A line of the venv's ``smkit-source.pth`` puts
   the folder ``$SMKIT_SOURCE_PATH`` names on ``sys.path``; each kit process sets it (:func:`export_source`)
   to a folder holding only a link to its own ``smkit``, and its children inherit it, so they run the
   source of the kit that started them.
2. The **model layer**: ``code/requirements.txt`` resolved once for the image layer's interpreter
   (``uv pip compile``; from the wheels' own names when the archive vendors ``code/wheels``), the
   distributions the image already installs at those versions left out, the rest installed exactly as
   resolved (``--no-deps``) into ``<cache>/models/<hash of the image layer and the resolved set>``.
   ``smkit train`` (a model folder), ``smkit package`` (the same folder with its vendored wheels), ``serve``,
   ``local-endpoint`` and ``batch-transform --local`` (the archive) resolve to the same set and so share
   one layer. The serving runtime looks for a model's install where it would put it
   (``SMKIT_REQUIREMENTS_DIR``, :func:`smkit.hosting.requirements.target_dir`): that path is a link to the
   layer, so the runtime finds it satisfied.

A layer is written into a staging folder and renamed into place with a completion record, so a build that
was killed leaves nothing that is used: the next build removes it and builds again.
``<cache>`` is ``$SMKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/smkit``, else ``~/.cache/smkit``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

import smkit
from smkit.contract import SMKIT_REQUIREMENTS_DIR
from smkit.dockerimage import container_dir
from smkit.hosting import requirements as model_requirements
from smkit.modelenv import uvtool
from smkit.modelenv.image_runtime import ImageRuntime, ModelEnvError
from smkit.modelenv.lockinstall import install_lock
from smkit.requirement_lines import requirement_lines

CACHE_VAR = "SMKIT_CACHE_DIR"
SOURCE_VAR = "SMKIT_SOURCE_PATH"
# Run by site at the start of an environment's interpreter (a .pth line that begins with "import").
SOURCE_PTH = f"import os, sys; sys.path.extend(p for p in [os.environ.get({SOURCE_VAR!r})] if p and p not in sys.path)\n"
# SMKIT_MODEL_ENVS=false: serve, local-endpoint and batch-transform --local run handlers with smkit's own
# interpreter (as before model environments), for handlers whose packages that interpreter already has.
ENVS_VAR = "SMKIT_MODEL_ENVS"
COMPLETE = ".smkit-complete"
# The kit's image definition: the wheel's package data, else the checkout's container/.
CONTAINER_DIR = container_dir()
# What the kit's image installs when container/requirements.txt is missing (a source tree without it):
# the serving runtime's own dependencies (pyproject.toml's `image` group), at the versions installed here.
RUNTIME_DISTRIBUTIONS = (
    "httptools",
    "installer",
    "isal",
    "numpy",
    "packaging",
    "prometheus-client",
    "uv",
    "uvloop",
    "websockets",
)


@dataclass(frozen=True)
class ModelEnvironment:
    """Where a model's handler runs: an interpreter and the directories its requirements live in.

    Attributes:
        python: the interpreter (the image layer's, or the one given with ``--python``).
        extra_paths: the model layer (searched after ``code/``), empty when nothing is installed.
        requirements_dir: the runtime's ``SMKIT_REQUIREMENTS_DIR`` (where it finds the model layer).
        runtime: the image this environment stands for.
    """

    python: str
    extra_paths: tuple[str, ...] = ()
    requirements_dir: str | None = None
    runtime: ImageRuntime = field(default_factory=ImageRuntime)
    extra_environ: dict[str, str] = field(default_factory=dict)

    def environ(self) -> dict[str, str]:
        """Variables for a serving process started with :attr:`python`."""
        base = {SMKIT_REQUIREMENTS_DIR: self.requirements_dir} if self.requirements_dir else {}
        return {**base, **self.extra_environ}


def envs_enabled() -> bool:
    """False when ``SMKIT_MODEL_ENVS`` is ``false`` / ``0`` / ``no``."""
    return os.environ.get(ENVS_VAR, "true").strip().lower() not in ("false", "0", "no", "off")


def cache_root() -> Path:
    """The cache directory (see the module docstring)."""
    if os.environ.get(CACHE_VAR):
        # Absolute: the environments' interpreters are run from other working folders (the model's).
        return Path(os.environ[CACHE_VAR]).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).absolute() / "smkit"


def _say(message: str) -> None:
    print(f"smkit: {message}", file=sys.stderr, flush=True)


def image_requirements(
    runtime: ImageRuntime, model_requirements_text: str = "", *, container_dir: Path = CONTAINER_DIR
) -> list[str]:
    """The image layer's packages: the kit image's pins, plus the framework an AWS image ships.

    The kit's image installs ``container/requirements.txt``, ``container/requirements-extra.txt`` and the
    config's ``image.requirements`` (container/Dockerfile), so all three are the image layer here too.
    """
    pinned = container_dir / "requirements.txt"
    if pinned.is_file():
        packages = _file_lines(pinned)
    else:
        packages = [f"{name}=={metadata.version(name)}" for name in RUNTIME_DISTRIBUTIONS]
    extra = container_dir / "requirements-extra.txt"
    if runtime.framework is None and extra.is_file():
        packages += _file_lines(extra)
    packages += runtime.requirements
    named = {_name(line) for line in requirement_lines(model_requirements_text) if _name(line)}
    for requirement, distributions in runtime.framework_requirements:
        if not named.intersection(distributions):
            packages.append(requirement)
    return packages


def _file_lines(path: Path) -> list[str]:
    try:
        return requirement_lines(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelEnvError(f"{path}: cannot read it ({exc.strerror})") from None


def _name(line: str) -> str:
    """The canonical distribution name a requirement line asks for ('' for options such as ``-r``)."""
    try:
        return canonicalize_name(Requirement(line).name)
    except InvalidRequirement:
        return ""


def base_interpreter(version: str) -> str:
    """An interpreter of ``version`` ("3.11") to create venvs from: this one, else ``pythonX.Y``."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        raise ModelEnvError(
            f"the image runs Python {version}, and no python{version} is on PATH; install Python {version} "
            "(e.g. with your package manager or pyenv) or use an interpreter that has the "
            "model's requirements installed"
        )
    return found


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_writable(root: Path) -> None:
    """Refuse a cache folder this process cannot create files in, naming it and the fix."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".smkit-probe-", dir=root)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise ModelEnvError(
            f"the cache folder {root} is not writable ({exc.strerror or exc}); set {CACHE_VAR} to a folder "
            "you can write to, or fix the folder's permissions"
        ) from None


def _run(command: list[str], what: str, *, progress: bool) -> None:
    code, tail = model_requirements.run_pip(command, show=progress)
    if code != 0:
        raise ModelEnvError(f"{what} failed (exit {code}): {' | '.join(tail)}")


def source_folder() -> Path:
    """A folder holding only ``smkit``, a link to this kit's package: one per source location, under the
    cache (the folder that holds the package itself may hold other packages, a checkout's ``tests``, or a
    venv's whole site-packages, which must not reach a model's environment)."""
    source = Path(smkit.__file__).resolve().parent
    folder = cache_root() / "sources" / hashlib.sha256(str(source).encode()).hexdigest()[:16]
    link = folder / "smkit"
    if not (link.is_symlink() and link.resolve() == source):
        ensure_writable(cache_root())
        folder.mkdir(parents=True, exist_ok=True)
        staged = folder / f".smkit.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        staged.symlink_to(source, target_is_directory=True)
        os.replace(staged, link)
    return folder


def export_source() -> None:
    """Name this kit's source in ``$SMKIT_SOURCE_PATH`` for every process started from here on (the
    environments' interpreters import ``smkit`` from it)."""
    os.environ[SOURCE_VAR] = str(source_folder())


def _add_source_line(venv: Path, python: str) -> None:
    """Write the venv's ``smkit-source.pth`` (:data:`SOURCE_PTH`)."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run(
        [python, "-I", "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    Path(site, "smkit-source.pth").write_text(SOURCE_PTH, encoding="utf-8")


@dataclass(frozen=True)
class ImageLayer:
    """The image layer of a runtime: its venv, the packages it installs and the key they hash to."""

    venv: Path
    packages: tuple[str, ...]
    key: str

    @property
    def python(self) -> str:
        """The venv's interpreter."""
        return str(self.venv / "bin" / "python")


def image_layer(runtime: ImageRuntime, model_requirements_text: str = "") -> ImageLayer:
    """Where the image layer of ``runtime`` lives (built or not)."""
    packages = image_requirements(runtime, model_requirements_text)
    key_data = {
        "python": runtime.python,
        "packages": packages,
        "bytecode": True,
        "source": SOURCE_VAR,  # smkit comes from $SMKIT_SOURCE_PATH: a venv that linked one path is not reused
    }
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:16]
    return ImageLayer(cache_root() / "envs" / f"py{runtime.python}-{key}", tuple(packages), key)


def image_environment(
    runtime: ImageRuntime, model_requirements_text: str = "", *, progress: bool = True
) -> str:
    """The image layer's interpreter for ``runtime``, built on first use; returns its path."""
    layer = image_layer(runtime, model_requirements_text)
    venv, python = layer.venv, layer.python
    export_source()
    marker = venv / COMPLETE
    with building(venv, cache_root()) as needed:
        if not needed:
            return python
        base = base_interpreter(runtime.python)
        if progress:
            _say(
                f"building the image environment once (Python {runtime.python}, {len(layer.packages)} "
                f"packages of {runtime.label}) in {venv}"
            )
        # --seed: pip in the venv, as in the image (a container installs at start with it).
        uvtool.run_uv(
            ["venv", "--quiet", "--seed", "--python", base, str(venv)],
            f"creating the venv {venv}",
            progress=False,
        )
        # --compile-bytecode: the image's `pip install` writes the .pyc of every module it installs, and
        # its PYTHONDONTWRITEBYTECODE keeps Python from writing them later; without them every runtime start
        # here would compile NumPy's modules again.
        args = ["pip", "install", "--quiet", "--compile-bytecode", "--python", python]
        args += [*uvtool.index_options(), *layer.packages]
        uvtool.run_uv(args, f"installing the image's packages into {venv}", progress=progress)
        _add_source_line(venv, python)
        record = {
            "kind": "image",
            "python": runtime.python,
            "image": runtime.label,
            "packages": layer.packages,
        }
        marker.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return python


@contextlib.contextmanager
def building(target: Path, root: Path) -> Iterator[bool]:
    """Build the cache entry ``target`` (under ``root``) once across processes: yields False when a finished
    build is there (its use recorded), else True under ``target``'s lock with an unfinished build removed;
    the caller then builds it and writes its ``COMPLETE`` marker before leaving the block."""
    marker = target / COMPLETE
    if marker.is_file():
        touch(marker)
        yield False
        return
    ensure_writable(root)
    with _locked(target):
        if marker.is_file():
            yield False
            return
        if target.exists():
            _say(f"removing {target}: its build did not finish (no {COMPLETE}); building it again")
            shutil.rmtree(target, ignore_errors=True)
        yield True


def touch(marker: Path) -> None:
    """Record a use of a cached layer (``smkit cache prune --unused-days`` reads it)."""
    with contextlib.suppress(OSError):
        os.utime(marker)


def locked_environment(lock: Path, *, python_version: str, label: str, progress: bool = True) -> str:
    """The interpreter of a venv holding exactly the packages pinned in ``lock``, built on first use.

    For an engine image whose program is not the kit's runtime (smkit.llm: AWS's vLLM image): every line of
    ``lock`` is an exact pin and uv installs them with ``--no-deps`` (smkit.modelenv.lockinstall: one
    progress bar, uv's log in ``<cache>/logs/``), so the environment is the lock and nothing else. Cached under ``<cache>/envs/<label>-py<version>-<hash of the lock>``, under the same lock
    file and completion marker as :func:`image_environment`; the kit's ``smkit`` is found as there.
    """
    try:
        text = lock.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelEnvError(f"{lock}: cannot read it ({exc.strerror})") from None
    key_data = {"python": python_version, "lock": text, "source": SOURCE_VAR}
    key = hashlib.sha256(json.dumps(key_data, sort_keys=True).encode()).hexdigest()[:16]
    venv = cache_root() / "envs" / f"{label}-py{python_version}-{key}"
    python = str(venv / "bin" / "python")
    export_source()
    with _locked(venv):
        if (venv / COMPLETE).is_file():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        base = base_interpreter(python_version)
        if progress:
            _say(f"building the {label} environment once from {lock.name} in {venv}")
        # With ensurepip's pip and, on Python 3.11, setuptools: the lock (a pip freeze) leaves both out, and
        # torch's cpp_extension, which vLLM's CPU build imports, imports setuptools.
        _run([base, "-m", "venv", str(venv)], f"creating the venv {venv}", progress=progress)
        log = cache_root() / "logs" / f"{venv.name}.log"
        started = time.monotonic()
        count = install_lock(python, lock, log, label=label, progress=progress)
        if progress:
            _say(f"{count} packages installed in {time.monotonic() - started:.0f} s (uv's log: {log})")
        _add_source_line(venv, python)
        (venv / COMPLETE).write_text(
            json.dumps({"lock": str(lock), "key": key}, indent=2) + "\n", encoding="utf-8"
        )
    return python
