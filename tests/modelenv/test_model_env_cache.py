"""Model environments are built once by uv and shared; a broken cache is rebuilt or refused, never used.

One cache per module (``$SMKIT_CACHE_DIR``): its image layer is built once here (uv links from its own
warm cache, so that is seconds) and every test reuses it. The model's one requirement, threadpoolctl, is
a small pure-Python wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import smkit
from smkit.cli import main
from smkit.dockerimage import container_dir
from smkit.hosting import requirements
from smkit.modelenv import CACHE_VAR, ModelEnvError, cache_root, model_environment
from smkit.modelenv.builder import COMPLETE, SOURCE_VAR, image_layer
from smkit.modelenv.cache import entries, prune
from smkit.modelenv.image_runtime import ImageRuntime
from smkit.packaging.vendor import VendorTarget, vendor_wheels

REQUIREMENT = "threadpoolctl==3.8.0\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("smkit-cache")
    saved = os.environ.get(CACHE_VAR)
    os.environ[CACHE_VAR] = str(root)
    yield root
    if saved is None:
        os.environ.pop(CACHE_VAR, None)
    else:
        os.environ[CACHE_VAR] = saved


def _model(root: Path, name: str, text: str = REQUIREMENT) -> Path:
    (root / name / "code").mkdir(parents=True)
    (root / name / "code" / "requirements.txt").write_text(text)
    return root / name


@pytest.fixture(scope="module")
def vendored(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder whose code/wheels holds threadpoolctl's wheel, as `smkit package` vendors it."""
    model = _model(tmp_path_factory.mktemp("vendored"), "model")
    vendor_wheels(
        model / "code", model / "code" / "wheels", target=VendorTarget(), cache=cache, progress=False
    )
    return model


def test_a_model_folder_and_its_packaged_form_share_one_model_layer(cache, vendored, tmp_path, capfd) -> None:
    folder = _model(tmp_path, "folder")
    first = model_environment(folder)
    (layer,) = first.extra_paths
    run = [first.python, "-c", "import threadpoolctl, smkit; print(threadpoolctl.__version__)"]
    version = subprocess.run(run, env={**os.environ, "PYTHONPATH": layer}, capture_output=True, text=True)
    assert version.stdout.strip() == "3.8.0", version.stderr
    capfd.readouterr()
    # The same requirements, now with their vendored wheels: the same resolution, so the same layer.
    packaged = model_environment(vendored)
    assert os.path.realpath(packaged.extra_paths[0]) == os.path.realpath(layer)
    assert packaged.python == first.python
    assert "installing" not in capfd.readouterr().err
    # The serving runtime finds the model's install where it looks for it, already satisfied.
    tag = "cp" + ImageRuntime().python.replace(".", "")
    assert (
        requirements.target_dir(str(vendored), packaged.requirements_dir, tag=tag) == packaged.extra_paths[0]
    )
    assert model_environment(folder) == first  # cached: nothing resolved or installed again
    assert "smkit:" not in capfd.readouterr().err


def test_a_cache_folder_that_is_not_writable_is_refused_with_the_fix(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_VAR, str(blocker / "cache"))
    with pytest.raises(
        ModelEnvError, match=r"the cache folder .*a-file/cache is not writable .*set SMKIT_CACHE_DIR"
    ):
        model_environment(_model(tmp_path, "m"))


def test_the_runtimes_install_folder_that_is_not_writable_is_refused_with_the_fix(tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    model = _model(tmp_path, "m", "smkit-test-not-installed==1.0\n")
    with pytest.raises(requirements.RequirementsError) as info:
        requirements.ensure(str(model), install=True, base_dir=str(blocker / "requirements"))
    assert str(info.value) == (
        f"{model / 'code' / 'requirements.txt'}: cannot install the model's requirements into "
        f"{blocker / 'requirements'} (Not a directory); set SMKIT_REQUIREMENTS_DIR to a folder this user "
        "can write to"
    )


def test_a_half_built_image_layer_is_rebuilt_not_used(cache, tmp_path, capfd) -> None:
    env = model_environment(_model(tmp_path, "m"))
    venv = image_layer(ImageRuntime(), REQUIREMENT).venv
    assert env.python == str(venv / "bin" / "python")
    (venv / COMPLETE).unlink()  # as a build killed before its completion record
    (venv / "bin" / "python").unlink()
    capfd.readouterr()
    again = model_environment(tmp_path / "m")
    assert f"removing {venv}: its build did not finish" in capfd.readouterr().err
    assert (venv / COMPLETE).is_file() and again.python == env.python
    assert subprocess.run([again.python, "-c", "import uvloop"], check=False).returncode == 0


def test_a_half_built_model_layer_is_rebuilt_and_a_killed_builds_staging_removed(
    cache, tmp_path, capfd
) -> None:
    model = _model(tmp_path, "m")
    link = model_environment(model).extra_paths[0]
    layer = Path(os.path.realpath(link))
    (layer / COMPLETE).unlink()
    shutil.rmtree(layer / "threadpoolctl-3.8.0.dist-info")
    staging = layer.parent / f"{layer.name}.killed"
    staging.mkdir()
    os.unlink(link)
    capfd.readouterr()
    model_environment(model)
    assert f"removing {layer}: its build did not finish" in capfd.readouterr().err
    assert (layer / COMPLETE).is_file() and (layer / "threadpoolctl-3.8.0.dist-info").is_dir()
    assert not staging.exists()


def test_a_damaged_vendored_wheel_is_refused_by_path(cache, vendored, tmp_path) -> None:
    model = tmp_path / "damaged"
    shutil.copytree(vendored, model)
    (wheel,) = (model / "code" / "wheels").glob("*.whl")
    wheel.write_bytes(b"not a zip" * 100)
    (model / "code" / "requirements.txt").write_text(REQUIREMENT + "# another archive\n")
    with pytest.raises(
        ModelEnvError, match=rf"{wheel}: the vendored wheel is damaged .*package the model again"
    ):
        model_environment(model)


def test_a_damaged_wheel_in_the_download_cache_is_downloaded_again(cache, vendored, tmp_path, capfd) -> None:
    (cached,) = [p for p in (cache / "wheels").iterdir() if p.is_dir() and (p / ".complete").is_file()]
    (wheel,) = cached.glob("*.whl")
    good = wheel.read_bytes()
    wheel.write_bytes(good[:100])
    dest = tmp_path / "wheels"
    kept = vendor_wheels(vendored / "code", dest, target=VendorTarget(), cache=cache, progress=False)
    assert f"{wheel} does not match the sha256 recorded" in capfd.readouterr().err
    assert (dest / kept[0]).read_bytes() == good and wheel.read_bytes() == good


def test_the_runtime_unpacks_vendored_wheels_without_a_resolver(tmp_path) -> None:
    """In an image without uv the wheels are unpacked by `installer`; a damaged one fails the install."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
    from serving_models import tiny_wheel

    wheel = tiny_wheel(tmp_path)
    commands = requirements.wheel_installer(sys.executable, str(tmp_path / "t"), [str(wheel)])
    unpack = next(c for c in commands if c[1] == "-c")
    assert "pip" not in unpack and subprocess.run(unpack, check=False).returncode == 0
    assert (tmp_path / "t" / "smkit_fixture_dep" / "__init__.py").read_text() == "VALUE = 42\n"
    wheel.write_bytes(b"damaged")
    unpack[2 + 1] = str(tmp_path / "t2")
    assert subprocess.run(unpack, capture_output=True, check=False).returncode not in (
        0,
        requirements.NO_INSTALLER,
    )


def test_smkit_cache_lists_sizes_and_prunes(cache, tmp_path) -> None:
    model_environment(_model(tmp_path, "m"))
    half = cache / "models" / "0123456789abcdef"
    half.mkdir()
    dangling = cache / "requirements" / "dangling"
    dangling.symlink_to(cache / "models" / "gone")
    runner = CliRunner()
    listed = runner.invoke(main, ["cache", "list"], env={CACHE_VAR: str(cache)})
    assert listed.exit_code == 0, listed.output
    assert f"{cache}:" in listed.output and "MiB" in listed.output
    assert f"{half}  [half-built]" in listed.output and f"{dangling}  [dangling]" in listed.output
    assert any(line.startswith("image ") for line in listed.output.splitlines())
    pruned = runner.invoke(main, ["cache", "prune"], env={CACHE_VAR: str(cache)})
    assert pruned.exit_code == 0, pruned.output
    assert f"removed model {half}" in pruned.output and f"removed link {dangling}" in pruned.output
    assert not half.exists() and not dangling.is_symlink()
    assert all(e.state == "ok" for e in entries(cache_root()))
    # --unused-days: whatever was not used since is removed, with the links to it.
    gone = prune(cache, unused_days=1, now=4e9)
    assert {e.kind for e in gone} >= {"image", "model", "link"}
    assert json.dumps([str(p) for p in (cache / "envs").iterdir() if p.is_dir()]) == "[]"


def test_one_image_layer_serves_every_install_of_the_kit(cache, tmp_path) -> None:
    """The layer's key leaves out where smkit lives; its interpreter imports the smkit of the process that
    started it (``$SMKIT_SOURCE_PATH``, set by the kit when it hands out an environment)."""
    env = model_environment(_model(tmp_path, "m"))
    mine = Path(smkit.__file__).resolve().parent
    other = tmp_path / "other-install"
    shutil.copytree(mine, other / "smkit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(container_dir(), other / "smkit" / "container")  # where the wheel keeps it
    where = (
        "import smkit; from smkit.modelenv.builder import image_layer, ImageRuntime; "
        f"print(smkit.__file__); print(image_layer(ImageRuntime(), {REQUIREMENT!r}).venv)"
    )
    layers = {}
    for root in (mine.parent, other):
        done = subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); {where}"],
            capture_output=True, text=True, check=True, env=os.environ.copy(), cwd=tmp_path,
        )  # fmt: skip
        source, venv = done.stdout.split()
        layers[source] = venv
    assert sorted(layers) == sorted([str(mine / "__init__.py"), str(other / "smkit" / "__init__.py")])
    assert set(layers.values()) == {str(image_layer(ImageRuntime(), REQUIREMENT).venv)}

    def imported(source: str | None) -> str:
        environ = {k: v for k, v in os.environ.items() if k != SOURCE_VAR}
        environ.update({SOURCE_VAR: source} if source else {})
        code = "import smkit, os; print(os.path.realpath(smkit.__file__))"
        done = subprocess.run(
            [env.python, "-c", code], capture_output=True, text=True, env=environ, cwd=tmp_path
        )
        return done.stdout.strip() or done.stderr.strip().splitlines()[-1]

    assert imported(os.environ[SOURCE_VAR]) == str(mine / "__init__.py")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "smkit").symlink_to(other / "smkit", target_is_directory=True)
    assert imported(str(linked)) == str((other / "smkit" / "__init__.py").resolve())
    assert imported(None) == "ModuleNotFoundError: No module named 'smkit'"
