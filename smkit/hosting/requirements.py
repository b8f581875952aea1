"""A model's ``code/requirements.txt``: check it is satisfied, else pip-install it before loading.

Framework images pip-install this file at container start and stop when that fails (docs/handler-semantics.md).
Here the install goes with ``pip install --target`` into a directory of its own (the model directory is
read-only on SageMaker and the image runs as a non-root user), which is then searched right after the
model's ``code/`` directory. In multi-model mode every model gets its own target directory, so two
models may pin different versions of a pure-Python package; a package another model already imported in
the same worker process is shared, as Python can hold one copy of a module name per process.

Network isolation (``EnableNetworkIsolation``) leaves the container without an index: when the archive
carries the requirements' wheels in ``code/wheels/`` (``smkit package`` vendors them), those wheels are
the resolution already made for the image, so they are installed as they are, offline and with no
resolver, by the fastest installer the image has (:func:`wheel_installer`): uv (in the kit's image), else
unpacking each wheel into the target (pypa's ``installer``, in the kit's image too), else
``pip install --no-deps --no-compile``. The bytecode ``smkit package`` compiled for the modules the handler
imports (``code/wheels/bytecode.<cache tag>.zip``, smkit/packaging/bytecode.py) is then put next to their
installed sources (:func:`add_bytecode`). A multi-model endpoint does this at a model's first load, inside
SageMaker's 60 s load limit. The local endpoint runs this very install, which is how a local run
predicts the one on AWS.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement

from smkit.requirement_lines import file_lines, installed_versions, is_satisfied, localized_text

WHEELS_DIR = "wheels"  # code/wheels: vendored wheels for an offline install
BYTECODE_GLOB = "bytecode.*.zip"  # code/wheels/bytecode.<cache tag>.zip (smkit/packaging/bytecode.py)


class RequirementsError(RuntimeError):
    """``code/requirements.txt`` is not satisfied and could not be installed."""


@dataclass(frozen=True)
class RequirementsPlan:
    """What a requirements file needs: ``unsatisfied`` lines (empty when nothing is to install)."""

    path: str
    unsatisfied: tuple[str, ...]


def requirements_file(model_dir: str) -> str | None:
    """``model_dir/code/requirements.txt`` when it exists."""
    path = os.path.join(model_dir, "code", "requirements.txt")
    return path if os.path.isfile(path) else None


def _installed(extra_paths: tuple[str, ...]) -> dict[str, str | None]:
    dists = metadata.distributions(path=[*extra_paths, *sys.path])
    return installed_versions((dist.metadata["Name"] or "", dist.version) for dist in dists)


def _satisfied(line: str, installed: dict[str, str | None]) -> bool:
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return False  # options (-r, --index-url), URLs, editables: let pip decide
    return is_satisfied(requirement, installed)


def unsatisfied(lines: list[str], extra_paths: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The requirement ``lines`` that this interpreter's installed distributions do not meet."""
    installed = _installed(extra_paths) if lines else {}
    return tuple(line for line in lines if not _satisfied(line, installed))


def plan(model_dir: str, extra_paths: tuple[str, ...] = ()) -> RequirementsPlan | None:
    """Read the model's requirements file and list the lines not met by installed distributions."""
    path = requirements_file(model_dir)
    if path is None:
        return None
    return RequirementsPlan(path, unsatisfied(file_lines(path), extra_paths))


def wheels_dir(model_dir: str) -> str | None:
    """``model_dir/code/wheels`` when it holds vendored wheels (then the install is offline)."""
    path = os.path.join(model_dir, "code", WHEELS_DIR)
    return path if os.path.isdir(path) and any(n.endswith(".whl") for n in os.listdir(path)) else None


def python_tag(python: str = sys.executable) -> str:
    """``cp311``: the interpreter kind and version that compiled wheels are built for."""
    if python == sys.executable:
        return f"cp{sys.version_info.major}{sys.version_info.minor}"
    code = "import sys; print(f'cp{sys.version_info.major}{sys.version_info.minor}')"
    return subprocess.run(
        [python, "-I", "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def target_dir(model_dir: str, base: str | None, *, tag: str | None = None) -> str:
    """The install directory for a model's requirements.

    One per requirements-file content, vendored wheel set and interpreter version, so an offline install
    from vendored wheels never reuses an earlier online one and compiled packages match the interpreter.
    """
    path = requirements_file(model_dir)
    digest = hashlib.sha256(Path(path).read_bytes() if path else b"")
    wheels = wheels_dir(model_dir)
    for name in sorted(os.listdir(wheels)) if wheels else ():
        digest.update(f"\0{name}".encode())
    digest.update(f"\0{tag or python_tag()}".encode())
    root = base or os.path.join(tempfile.gettempdir(), "smkit-requirements")
    return os.path.join(root, digest.hexdigest()[:16])


# Unpacks wheels into a target folder (purelib and platlib at its top, as pip's --target does) with pypa's
# installer (https://installer.pypa.io/en/stable/api/destinations/), run by the model's interpreter.
_UNPACK = """\
import os, sys
try:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile
except ImportError:
    sys.exit(3)
target = sys.argv[1]
scheme = {"purelib": target, "platlib": target, "headers": os.path.join(target, "include"),
          "scripts": os.path.join(target, "bin"), "data": target}
destination = SchemeDictionaryDestination(scheme, interpreter=sys.executable, script_kind="posix")
for path in sys.argv[2:]:
    with WheelFile.open(path) as source:
        install(source, destination, {"INSTALLER": b"smkit"})
"""
NO_INSTALLER = 3  # _UNPACK's exit status when the interpreter has no `installer`


def uv_executable() -> str | None:
    """uv, when this image or machine has it (``$SMKIT_UV``, the ``uv`` wheel's binary, ``uv`` on PATH);
    ``SMKIT_UV=none``: do not use uv (the wheels are unpacked instead)."""
    if os.environ.get("SMKIT_UV") == "none":
        return None
    if os.environ.get("SMKIT_UV"):
        return os.environ["SMKIT_UV"]
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def wheel_installer(python: str, target: str, files: list[str]) -> list[list[str]]:
    """The commands that install resolved wheel ``files`` into ``target``, fastest first, none resolving.

    None writes bytecode: compiling every module of scikit-learn + pandas + scipy at install costs more
    than the first load's imports compiling the modules they use (make bench-modelenv); with the image's
    ``PYTHONDONTWRITEBYTECODE`` each worker compiles them when it loads the model.

    uv (links from its cache), else the interpreter unpacking them with ``installer`` (exit
    :data:`NO_INSTALLER` when it has none), else pip with neither dependencies nor bytecode.
    """
    commands = []
    uv = uv_executable()
    if uv is not None:
        # uv's cache beside the install folders: the image's user may have no writable home, and on the same
        # file system uv links the unpacked files instead of copying them.
        cache = os.path.join(os.path.dirname(target), ".uv-cache")
        commands.append(
            [uv, "pip", "install", "--quiet", "--python", python, "--target", target, "--no-deps"]
            + ["--no-index", "--offline", "--no-config", "--cache-dir", cache, *files]
        )
    commands.append([python, "-c", _UNPACK, target, *files])
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-compile"]
    commands.append([*pip, "--no-index", "--no-deps", "--target", target, *files])
    return commands


def pip_install_command(python: str, requirements: str, target: str, wheels: str | None) -> list[str]:
    """``pip install --target`` of a requirements file (the image's own way); offline from ``wheels``.

    Used when no wheel files are vendored (``wheels`` then is a find-links folder without wheels, or None).
    """
    command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if wheels is not None:
        command += ["--no-index", "--find-links", wheels]
    return [*command, "--target", target, "-r", requirements]


def run_pip(command: list[str], *, show: bool, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Run pip, copying its output line by line to stderr when ``show``; return (exit code, last lines)."""
    tail: list[str] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if show:
                sys.stderr.write(line)
                sys.stderr.flush()
            tail = [*tail[-7:], line.rstrip()]
    errors = [line for line in tail if line.startswith("ERROR")]
    return proc.returncode, (errors or tail)[-5:]


def offline_environ() -> dict[str, str]:
    """This process's environment without any pip configuration: an offline install sees only the wheels.

    On the endpoint there is no pip configuration either, so a local find-links directory or index that
    happens to hold a missing wheel cannot make the local install pass where the endpoint's would fail.
    ``PIP_CONFIG_FILE=os.devnull`` skips every configuration file (pip's documented switch).
    """
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    environ["PIP_CONFIG_FILE"] = os.devnull
    return environ


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """An exclusive lock on ``path + '.lock'``: one installer per target, across processes."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _writable(folder: str, requirements: str) -> None:
    """Refuse an install folder this process cannot create folders in, naming it and the fix."""
    try:
        os.makedirs(folder, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".smkit-probe-", dir=folder))
    except OSError as exc:
        raise RequirementsError(
            f"{requirements}: cannot install the model's requirements into {folder} "
            f"({exc.strerror or exc}); set SMKIT_REQUIREMENTS_DIR to a folder this user can write to"
        ) from None


def install(model_dir: str, target: str, *, python: str = sys.executable, quiet: bool = True) -> None:
    """Install the model's requirements into ``target`` (atomically: a failed install leaves nothing).

    ``quiet=False`` lets pip's own progress through to stderr (the local commands show it while an
    environment builds). Raises :class:`RequirementsError` with pip's last lines on failure.
    """
    path = requirements_file(model_dir)
    if path is None:
        return
    wheels = wheels_dir(model_dir)
    _writable(os.path.dirname(target), path)
    with _locked(target):
        if os.path.isdir(target):
            return
        staging = tempfile.mkdtemp(prefix=os.path.basename(target) + ".", dir=os.path.dirname(target))
        files = sorted(str(p) for p in Path(wheels).glob("*.whl")) if wheels else []
        try:
            if files:
                code, tail = _install_wheels(python, staging, files, quiet=quiet)
                if code == 0 and wheels is not None:
                    add_bytecode(wheels, staging)
            else:
                command = pip_install_command(python, _local_file(path, model_dir, staging), staging, wheels)
                if quiet:
                    command.insert(command.index("install") + 1, "--quiet")
                code, tail = run_pip(command, show=not quiet, env=offline_environ() if wheels else None)
            if code != 0:
                source = f"the vendored wheels in {wheels} (offline)" if wheels else "the package index"
                raise RequirementsError(
                    f"{path}: {'the wheel installer' if files else 'pip'} could not install "
                    f"{', '.join(file_lines(path))} from {source} (exit {code}): "
                    + " | ".join(tail)
                    + (
                        "; package the model again so that code/wheels holds every wheel (smkit package)"
                        if wheels
                        else "; fix the requirement line, vendor the wheels (smkit package --vendor-wheels) "
                        "or make the index reachable"
                    )
                )
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{staging}.requirements.txt")


def _local_file(path: str, model_dir: str, staging: str) -> str:
    """``path``, or a copy beside ``staging`` whose lines naming ``/opt/ml/model/...`` name the same files
    under ``model_dir``, where the model sits here (:func:`smkit.requirement_lines.localized_text`)."""
    with open(path, encoding="utf-8") as handle:
        localized = localized_text(handle.read(), model_dir)
    if localized is None:
        return path
    local = f"{staging}.requirements.txt"
    with open(local, "w", encoding="utf-8") as handle:
        handle.write(localized)
    return local


def ensure(
    model_dir: str, *, install: bool, base_dir: str | None, python: str = sys.executable
) -> tuple[str, ...]:
    """Make the model's requirements importable; return the extra ``sys.path`` entries to use.

    Raises :class:`RequirementsError` naming the file, the unmet lines and pip's output when the
    install fails or installing is switched off (``SMKIT_INSTALL_REQUIREMENTS=false``).
    """
    target = target_dir(model_dir, base_dir, tag=python_tag(python))
    existing = (target,) if os.path.isdir(target) else ()
    if python != sys.executable and requirements_file(model_dir) is not None:
        # The workers run another interpreter (SMKIT_WORKER_PYTHON): what this process has installed says
        # nothing about it, so the content-hashed install directory is the only evidence.
        if existing or not install:
            return existing
        _install(model_dir, target, python=python)
        return (target,)
    needed = plan(model_dir, existing)
    if needed is None:
        return ()
    if not needed.unsatisfied:
        return existing
    unmet = ", ".join(needed.unsatisfied)
    if not install:
        raise RequirementsError(
            f"{needed.path}: not satisfied ({unmet}) and SMKIT_INSTALL_REQUIREMENTS=false; "
            "install them into the image or set SMKIT_INSTALL_REQUIREMENTS=true"
        )
    if existing:  # an earlier install no longer satisfies the file (should not happen: content-hashed)
        shutil.rmtree(target, ignore_errors=True)
    _install(model_dir, target, python=python)
    return (target,)


_install = install


def add_bytecode(wheels: str, target: str) -> int:
    """Put the packaged bytecode in ``wheels`` (``bytecode.*.zip``) next to the sources installed in ``target``.

    Only members of the form ``<folder>/__pycache__/<module>.<tag>.pyc`` whose ``<folder>/<module>.py`` was
    installed are written, inside ``target`` (this module stays free of smkit.archive, whose isal a
    worker's interpreter may lack). Each is a checked-hash file, so Python uses it only for the
    exact source it was compiled from. Bytecode saves compiling and nothing more: a damaged zip (a member
    failing its CRC) is reported on stderr and the rest of it skipped, and the import compiles the sources.
    Returns the number of files written.
    """
    written = 0
    for path in sorted(Path(wheels).glob(BYTECODE_GLOB)):
        try:
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    parts = PurePosixPath(info.filename).parts
                    if (
                        info.is_dir()
                        or len(parts) < 2
                        or parts[-2] != "__pycache__"
                        or not parts[-1].endswith(".pyc")
                        or any(part in ("", ".", "..", "/") for part in parts)  # only inside target
                    ):
                        continue
                    source = os.path.join(target, *parts[:-2], parts[-1].split(".", 1)[0] + ".py")
                    if not os.path.isfile(source):
                        continue
                    data = archive.read(info)  # whole, so its CRC is checked before anything is written
                    dest = os.path.join(target, *parts)
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    with open(dest, "wb") as out:
                        out.write(data)
                    written += 1
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            print(
                f"smkit: {path}: bytecode not used ({exc}); the imports compile the sources", file=sys.stderr
            )
    return written


def _install_wheels(python: str, target: str, files: list[str], *, quiet: bool) -> tuple[int, list[str]]:
    """Install vendored wheels with the first installer of :func:`wheel_installer` this image has."""
    code, tail = 1, ["no installer ran"]
    for command in wheel_installer(python, target, files):
        code, tail = run_pip(command, show=not quiet, env=offline_environ())
        if code == NO_INSTALLER and command[1] == "-c":
            continue  # the interpreter has no `installer`: the next one
        return code, tail
    return code, tail
