"""A handler that starts new interpreters finds the model's own packages in them, as on the toolkit's images.

The model's package comes from a vendored wheel (``code/wheels``, installed offline from
``code/requirements.txt`` into the runtime's own directory, not the interpreter's site-packages), and its
helper module from ``code/``: neither is on the new interpreter's default path.
"""

from __future__ import annotations

import shutil
import subprocess
import venv
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from serving_harness import Server, start_server, wait_ready
from serving_models import tiny_wheel, write_model

HANDLER = """
import multiprocessing
import subprocess
import sys

import helper


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    how = data.decode()
    if how == "subprocess":
        done = subprocess.run(
            [sys.executable, "-c", "import helper; print(helper.value(1))"], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1])
        return done.stdout.strip(), "text/plain"
    if how == "spawn":
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return str(pool.apply(helper.value, (2,))), "text/plain"
    if how == "loky":
        from joblib import Parallel, delayed

        return str(sum(Parallel(n_jobs=2, backend="loky")(delayed(helper.value)(i) for i in (3, 4)))), "text/plain"
    raise ValueError(how)
"""

HELPER = """
import smkit_fixture_dep


def value(x):
    return smkit_fixture_dep.VALUE + x
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("children")
    model = write_model(
        root,
        "children",
        HANDLER,
        **{"code__helper.py": HELPER, "code__requirements.txt": "smkit_fixture_dep==1.0\n"},
    )
    (model / "code" / "wheels").mkdir()
    shutil.copy(tiny_wheel(root), model / "code" / "wheels")
    started = start_server(
        root,
        ["--model", str(model), "--workers", "1"],
        env={"SMKIT_REQUIREMENTS_DIR": str(root / "site"), "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "120"},
        ready=False,
    )
    wait_ready(started, timeout=120)  # pip installs the wheel first: slow on busy shared cores
    yield started
    started.stop()


@pytest.mark.parametrize(("how", "expected"), [("subprocess", b"43"), ("spawn", b"44"), ("loky", b"91")])
def test_interpreters_the_handler_starts_import_the_models_packages(
    server: Server, how: str, expected: bytes
) -> None:
    answer = server.request("POST", "/invocations", how, {"Content-Type": "text/plain"}, timeout=120)
    assert (answer.status, answer.body) == (200, expected)


LOKY_ONLY = """
import helper


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    from joblib import Parallel, delayed

    return str(sum(Parallel(n_jobs=2, backend="loky")(delayed(helper.value)(i) for i in (3, 4)))), "text/plain"
"""


def test_loky_workers_import_joblib_installed_from_the_models_requirements(tmp_path: Path) -> None:
    """The reported case: joblib itself comes from code/requirements.txt, in a model environment without it.

    loky starts ``python -m joblib.externals.loky.backend.popen_loky_posix``: joblib must be importable
    before anything of the parent's ``sys.path`` reaches the child.
    """
    python = tmp_path / "model-env" / "bin" / "python"
    venv.EnvBuilder(with_pip=True).create(python.parent.parent)  # the model's own interpreter: no joblib
    joblib = f"joblib=={metadata.version('joblib')}"
    model = write_model(
        tmp_path,
        "loky",
        LOKY_ONLY,
        **{"code__helper.py": "def value(x):\n    return 42 + x\n", "code__requirements.txt": f"{joblib}\n"},
    )
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={
            "SMKIT_WORKER_PYTHON": str(python),
            "SMKIT_REQUIREMENTS_DIR": str(tmp_path / "site"),
            "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "120",
        },
        ready=False,
    )
    try:
        wait_ready(server, timeout=240)  # pip installs joblib first: slow on busy shared cores
        no_joblib = subprocess.run([str(python), "-c", "import joblib"], capture_output=True, text=True)
        assert no_joblib.returncode != 0  # only the model's requirements directory has it
        answer = server.request("POST", "/invocations", "x", {"Content-Type": "text/plain"}, timeout=120)
        assert (answer.status, answer.body) == (200, b"91")
    finally:
        server.stop()
