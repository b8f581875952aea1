"""One lock for every environment: .venv is uv.lock, the image pins come from it, and a newer release on
the index changes nothing (docs/toolchain.md, "The lock")."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import distributions
from pathlib import Path

from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
UV = str(Path(sys.executable).with_name("uv"))


def locked() -> dict[str, set[str]]:
    """Package name -> the versions uv.lock holds for it (more than one where markers fork, e.g. numpy)."""
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    versions: dict[str, set[str]] = {}
    for package in lock["package"]:
        versions.setdefault(canonicalize_name(package["name"]), set()).add(package["version"])
    return versions


def test_every_package_of_the_venv_is_the_locked_version() -> None:
    lock = locked()
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions()}
    assert len(installed) > 100  # the dev environment: CDK, moto, TensorFlow, ...
    wrong = {name: version for name, version in installed.items() if version not in lock.get(name, set())}
    assert not wrong, f"installed but not as uv.lock says (run `make setup`): {wrong}"


def test_the_image_pins_are_generated_from_the_lock() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scripts.image_pins", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # And read the other way: each pin is a version the lock holds, so an edit by hand shows here too.
    lock = locked()
    for name in ("requirements.txt", "requirements-sklearn.txt"):
        for line in (REPO / "container" / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                package, _, version = line.partition("==")
                assert version.split(";")[0].strip() in lock[canonicalize_name(package)], (name, line)


def test_the_image_pins_check_names_a_hand_edit(tmp_path: Path) -> None:
    """--check compares with the lock, not with what is installed: a pin edited by hand fails it."""
    work = tmp_path / "repo"
    (work / "container").mkdir(parents=True)
    (work / "scripts").mkdir()
    for name in (
        "pyproject.toml",
        "uv.lock",
        "container/Dockerfile",
        "scripts/__init__.py",
        "scripts/image_pins.py",
    ):
        (work / name).write_bytes((REPO / name).read_bytes())
    for name in ("requirements.txt", "requirements-sklearn.txt"):
        text = (REPO / "container" / name).read_text()
        (work / "container" / name).write_text(
            re.sub(r"^packaging==.*$", "packaging==26.3", text, flags=re.M)
        )
    result = subprocess.run(
        [sys.executable, "-m", "scripts.image_pins", "--check"], cwd=work, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "container/requirements.txt" in result.stderr and "make lock" in result.stderr


def fake_wheel(folder: Path, name: str, version: str) -> Path:
    """A valid, installable wheel of NAME VERSION whose module says it is the fake."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\nFAKE = True\n',
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def test_a_newer_release_on_the_index_changes_nothing(tmp_path: Path) -> None:
    """The frozen install of `make setup` takes the locked packaging although packaging 99.0 is offered first."""
    makefile = (REPO / "Makefile").read_text()
    assert "$(UV) sync --frozen --extra dev" in makefile  # the command this test runs, with a smaller extra
    links = tmp_path / "links"
    links.mkdir()
    fake_wheel(links, "packaging", "99.0")
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}

    # The control: an install that resolves takes the fake, so the offer is real.
    control = tmp_path / "control"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(control)], check=True, env=env)
    subprocess.run(
        [
            UV,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(control / "bin" / "python"),
            "--find-links",
            str(links),
            "packaging",
        ],
        check=True,
        env=env,
    )
    assert version_in(control, "packaging") == "99.0"

    # The frozen install, with the same directory first in line: the lock's version.
    frozen = tmp_path / "frozen"
    subprocess.run(
        [
            UV,
            "sync",
            "--frozen",
            "--quiet",
            "--extra",
            "serve",
            "--no-install-project",
            "--find-links",
            str(links),
        ],
        cwd=REPO,
        check=True,
        env={**env, "UV_PROJECT_ENVIRONMENT": str(frozen)},
    )
    assert {version_in(frozen, "packaging")} == locked()["packaging"] != {"99.0"}


def version_in(venv: Path, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_pyproject_change_without_make_lock_fails_the_check(tmp_path: Path) -> None:
    """`make lint` runs `uv lock --check`: the committed pair passes, a dependency added by hand does not."""
    assert "$(UV) lock --check" in (REPO / "Makefile").read_text()
    for name in ("pyproject.toml", "uv.lock"):
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    # As `make lint` runs it: online. With --offline, a machine whose uv cache lacks the metadata of some
    # platform's wheels (a fresh CI machine) fails the changed project as "unsatisfiable" instead.
    check = [UV, "lock", "--check", "--python", sys.executable]
    assert subprocess.run(check, cwd=tmp_path, capture_output=True, env=env).returncode == 0
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('"tqdm>=4.70,<5",\n', '"tqdm>=4.70,<5",\n    "six",\n', 1)
    )
    assert '"six"' in pyproject.read_text()
    result = subprocess.run(check, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert result.returncode != 0 and "needs to be updated" in result.stderr, result.stderr
