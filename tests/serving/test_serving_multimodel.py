"""Multi-model container API (docs/multi-model.md) over a real socket, with two worker processes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from serving_harness import Server, make_tarball, start_server
from serving_models import Models, write_model

from smkit.hosting import requirements


def load(server: Server, name: str, url: str) -> tuple[int, dict]:
    response = server.request(
        "POST", "/models", json.dumps({"model_name": name, "url": url}), {"Content-Type": "application/json"}
    )
    return response.status, response.json()


def invoke(server: Server, name: str, body: str = "1", content_type: str = "text/csv", **headers: str):
    return server.request("POST", f"/models/{name}/invoke", body, {"Content-Type": content_type, **headers})


@pytest.fixture(scope="module")
def mme(models: Models, server_tmp: Path) -> Iterator[Server]:
    root = server_tmp / "mme-root"
    root.mkdir()
    make_tarball(models.echo, root / "ondemand.tar.gz")
    server = start_server(
        server_tmp,
        ["--multi-model", str(root)],
        env={"SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT": "text/csv", "PIP_NO_INDEX": "1"},
    )
    assert load(server, "echo", str(models.echo))[0] == 200
    yield server
    server.stop()


def test_two_models_with_same_helper_module_both_work(mme: Server, models: Models, tmp_path: Path) -> None:
    tarball = make_tarball(models.iso_b, tmp_path / "iso_b.tar.gz")
    assert load(mme, "iso_a", f"file://{models.iso_a}") == (200, {"status": "Model 'iso_a' loaded"})
    assert load(mme, "iso_b", f"file://{tarball}")[0] == 200
    # One caller: one worker (the idle one that finished last) holds both models, whose code shares a
    # module name, and answers each from its own.
    for _ in range(4):
        assert invoke(mme, "iso_a").body == b"a:a:a"
        assert invoke(mme, "iso_b").body == b"b:b:b"


def test_list_and_describe(mme: Server, models: Models) -> None:
    listing = mme.request("GET", "/models").json()
    names = [m["modelName"] for m in listing["models"]]
    assert "echo" in names and names == sorted(names)
    assert listing["nextPageToken"] is None
    described = mme.request("GET", "/models/echo")
    assert described.status == 200
    assert described.json()[0]["modelUrl"] == str(models.echo)


def test_handler_semantics_through_transform_fn_with_context(mme: Server) -> None:
    as_text = invoke(mme, "echo", '{"a": 1}', "application/json", Accept="*/*").json()
    assert as_text == {
        "type": "str",
        "content_type": "application/json",
        "accept": "text/csv",
        "model_dir_ok": True,
    }
    as_bytes = invoke(mme, "echo", "{}", "application/json; charset=utf-8", Accept="a/b, c/d").json()
    assert as_bytes["type"] == "bytes"
    assert as_bytes["accept"] == "a/b, c/d"
    plain = invoke(mme, "echo", "x", "text/csv", Accept="text/plain")
    assert plain.headers["content-type"] == "text/plain" and plain.body == b"plain"
    form = invoke(mme, "echo", "a=1&b=2", "application/x-www-form-urlencoded").json()
    assert form["type"] == "bytes"  # the toolkit hands such a body over as None
    status = invoke(mme, "echo", "x", "text/csv", **{"X-Test-Status": "202"})
    assert status.status == 202
    nothing = invoke(mme, "echo", "x", "text/csv", Accept="application/json", **{"X-Test-None": "1"})
    assert nothing.status == 200 and nothing.body == b"null"  # as for any other JSON value


def test_target_model_header_on_invocations(mme: Server) -> None:
    response = mme.request(
        "POST", "/invocations", "1", {"Content-Type": "text/csv", "X-Amzn-SageMaker-Target-Model": "echo"}
    )
    assert response.status == 200 and response.json()["type"] == "str"


def test_on_demand_load_from_model_dir(mme: Server) -> None:
    response = invoke(mme, "ondemand.tar.gz")
    assert response.status == 200
    assert "ondemand.tar.gz" in [m["modelName"] for m in mme.request("GET", "/models").json()["models"]]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "fragment"),
    [
        ("POST", "/models/missing/invoke", "1", 404, "'missing' is not loaded"),
        ("GET", "/models/missing", None, 404, "'missing' is not loaded"),
        ("DELETE", "/models/missing", None, 404, "'missing' is not loaded"),
        ("POST", "/models", "{not json", 400, "not JSON"),
        ("POST", "/models", '{"model_name": "x"}', 400, '"url"'),
        ("POST", "/models", '{"model_name": "x", "url": "s3://bucket/m.tar.gz"}', 400, "scheme 's3'"),
        ("POST", "/models", '{"model_name": "x", "url": "/no/such/model.tar.gz"}', 400, "does not exist"),
        ("POST", "/invocations", "1", 400, "X-Amzn-SageMaker-Target-Model"),
    ],
    ids=[
        "invoke-unknown",
        "get-unknown",
        "delete-unknown",
        "load-bad-json",
        "load-no-url",
        "load-s3",
        "load-missing-path",
        "invocations-without-target",
    ],
)
def test_bad_requests_then_good(
    mme: Server, method: str, path: str, body: str | None, status: int, fragment: str
) -> None:
    response = mme.request(method, path, body, {"Content-Type": "application/json"} if body else {})
    assert response.status == status, response.body
    assert fragment in response.json()["message"]
    assert invoke(mme, "echo").status == 200


def test_duplicate_load_is_409_then_good(mme: Server, models: Models) -> None:
    status, error = load(mme, "echo", str(models.echo))
    assert status == 409 and "already loaded" in error["message"]
    assert invoke(mme, "echo").status == 200


def test_model_fn_failing_is_500_then_good_load(mme: Server, models: Models) -> None:
    status, error = load(mme, "failing", str(models.failing))
    assert status == 500 and "weights file is corrupt" in error["message"]
    assert mme.request("GET", "/models/failing").status == 404
    assert load(mme, "failing", str(models.echo))[0] == 200
    assert invoke(mme, "failing").status == 200


def test_unmet_per_model_requirements_fail_the_load_clearly(mme: Server, models: Models) -> None:
    status, error = load(mme, "unmet", str(models.unmet_requirements))
    assert status == 500
    assert "requirements.txt" in error["message"] and "smkit-test-no-such-package==9.9.9" in error["message"]
    assert invoke(mme, "echo").status == 200


def test_unload_then_invoke_is_404(mme: Server, models: Models) -> None:
    assert load(mme, "temp", str(models.echo))[0] == 200
    assert invoke(mme, "temp").status == 200
    deleted = mme.request("DELETE", "/models/temp")
    assert deleted.status == 200
    for _ in range(3):  # the worker that served it dropped its copy; another never had one
        assert invoke(mme, "temp").status == 404


@pytest.fixture(scope="module")
def budget_server(server_tmp: Path) -> Iterator[Server]:
    server = start_server(
        server_tmp,
        ["--multi-model", str(server_tmp), "--workers", "1"],
        env={"SMKIT_MME_MEMORY_BUDGET_MB": "100"},
    )
    yield server
    server.stop()


def names(server: Server) -> list[str]:
    return [m["modelName"] for m in server.request("GET", "/models").json()["models"]]


def test_lru_unload_under_memory_budget_and_507_when_alone_too_big(
    budget_server: Server, models: Models
) -> None:
    big = str(models.big[40])
    assert load(budget_server, "one", big)[0] == 200
    assert load(budget_server, "two", big)[0] == 200
    assert names(budget_server) == ["one", "two"]
    assert invoke(budget_server, "one").body == b"40"  # "one" is now the most recently used
    assert load(budget_server, "three", big)[0] == 200
    assert names(budget_server) == ["one", "three"]
    status, error = load(budget_server, "huge", str(models.big[160]))
    assert status == 507
    assert error["type"] == "InsufficientStorage" and "SMKIT_MME_MEMORY_BUDGET_MB" in error["message"]
    assert names(budget_server) == ["one", "three"]
    assert invoke(budget_server, "three").body == b"40"


def test_model_cache_disabled_unloads_after_every_call(models: Models, server_tmp: Path) -> None:
    server = start_server(
        server_tmp,
        ["--multi-model", str(server_tmp)],
        env={"SMKIT_MODEL_CACHE_SETTING": "Disabled", "SAGEMAKER_MULTI_MODEL": "true"},
    )
    try:
        assert load(server, "once", str(models.echo))[0] == 200
        assert invoke(server, "once").status == 200
        assert names(server) == []
        assert invoke(server, "once").status == 404
    finally:
        server.stop()


def _install_copy_of_numpy(target: Path) -> None:
    """What ``pip install --target`` leaves when a requirement depends on numpy: numpy installed again."""
    site = Path(str(metadata.distribution("numpy").locate_file("")))
    version = metadata.version("numpy")
    for name in ("numpy", "numpy.libs", f"numpy-{version}.dist-info"):
        if (site / name).is_dir():
            shutil.copytree(site / name, target / name)


def test_a_model_with_numpy_in_its_requirements_folder_uses_the_runtimes_numpy(
    server_tmp: Path, tmp_path: Path
) -> None:
    model = write_model(
        tmp_path,
        "with-numpy",
        """
        import numpy as np

        def model_fn(model_dir):
            return np.linalg

        def transform_fn(model, data, content_type, accept):
            return str(model.norm(np.array([3.0, 4.0]))), "text/plain"
        """,
        **{"code__requirements.txt": f"numpy=={metadata.version('numpy')}\n"},
    )
    base = tmp_path / "requirements"
    target = Path(requirements.target_dir(str(model), str(base)))
    target.mkdir(parents=True)
    _install_copy_of_numpy(target)
    server = start_server(
        server_tmp,
        ["--multi-model", str(tmp_path), "--workers", "1"],
        env={"SMKIT_REQUIREMENTS_DIR": str(base), "PIP_NO_INDEX": "1"},
    )
    try:
        status, loaded = load(server, "with-numpy", str(model))
        assert status == 200, loaded  # was: 500, "maximum recursion depth exceeded"
        for _ in range(2):
            answer = invoke(server, "with-numpy")
            assert (answer.status, answer.body) == (200, b"5.0")
    finally:
        server.stop()
