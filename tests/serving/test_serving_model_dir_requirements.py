"""Requirement lines that name a file by where SageMaker extracts the model (``/opt/ml/model/...``).

JumpStart's scripts ship their wheels in the code folder and name them so in ``code/requirements.txt``
(``/opt/ml/model/code/lib/lightgbm/lightgbm-4.1.0-py3-none-manylinux_2_28_x86_64.whl``): pip installs them
once the model sits at ``/opt/ml/model``. Locally the model sits elsewhere; the packager, the model
environments and the serving runtime read such a line as the same file under the model folder.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest
from serving_harness import start_server
from serving_models import write_model

from smkit.packaging.errors import PackagingError
from smkit.packaging.requirements import parse_requirements
from smkit.requirement_lines import localized_text

WHEEL_LINE = "/opt/ml/model/code/lib/tinyvendored/tinyvendored-1.0-py3-none-any.whl"

HANDLER = """
import tinyvendored


def model_fn(model_dir):
    return tinyvendored.ANSWER


def transform_fn(model, data, content_type, accept):
    return model, "text/plain"
"""


def build_wheel(path: Path) -> None:
    """A pure-Python wheel of ``tinyvendored`` 1.0 (one module), as a build backend writes it."""
    files = {
        "tinyvendored.py": b"ANSWER = 'vendored wheel from /opt/ml/model/code/lib'\n",
        "tinyvendored-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinyvendored\nVersion: 1.0\n",
        "tinyvendored-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("tinyvendored-1.0.dist-info/RECORD,,")
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("tinyvendored-1.0.dist-info/RECORD", "\n".join(record) + "\n")


def test_lines_under_opt_ml_model_name_the_model_folder_here(tmp_path: Path) -> None:
    text = f"numpy==2.4.6\n{WHEEL_LINE}\n"
    assert localized_text(text, tmp_path) == (
        f"numpy==2.4.6\n{tmp_path}/code/lib/tinyvendored/tinyvendored-1.0-py3-none-any.whl\n"
    )
    assert localized_text("numpy==2.4.6\n", tmp_path) is None
    assert localized_text(text, "/opt/ml/model") is None  # on SageMaker the line is right as written


def test_the_packager_reads_the_line_as_the_wheel_it_names(tmp_path: Path) -> None:
    code = tmp_path / "code"
    build_wheel(code / "lib" / "tinyvendored" / "tinyvendored-1.0-py3-none-any.whl")
    (code / "requirements.txt").write_text(f"{WHEEL_LINE}\n")
    [requirement] = parse_requirements(code / "requirements.txt", label="code/requirements.txt")
    assert requirement.name == "tinyvendored"
    assert requirement.url == f"file://{WHEEL_LINE}"  # the archive's manifest names no path of this machine


def test_the_packager_refuses_a_line_naming_a_file_the_code_folder_lacks(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "requirements.txt").write_text(f"{WHEEL_LINE}\n")
    with pytest.raises(PackagingError, match="which is not in the code folder") as raised:
        parse_requirements(code / "requirements.txt", label="code/requirements.txt")
    assert "code/requirements.txt line 1" in str(raised.value)
    (code / "requirements.txt").write_text("/opt/ml/model/code/lib/notes.txt\n")
    with pytest.raises(PackagingError, match="names no wheel or source distribution file"):
        parse_requirements(code / "requirements.txt", label="code/requirements.txt")


def test_the_runtime_installs_the_wheel_from_the_model_folder_and_serves(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("model-dir-wheel")
    model = write_model(root, "vendored", HANDLER)
    (model / "code" / "requirements.txt").write_text(f"{WHEEL_LINE}\n")
    build_wheel(model / "code" / "lib" / "tinyvendored" / "tinyvendored-1.0-py3-none-any.whl")
    server = start_server(
        root,
        ["--model", str(model), "--workers", "1"],
        env={"SMKIT_REQUIREMENTS_DIR": str(root / "installed"), "PIP_NO_INDEX": "1"},
    )
    try:
        answer = server.invoke("x", "text/plain")
    finally:
        server.stop()
    assert answer.status == 200, answer.body
    assert answer.body == b"vendored wheel from /opt/ml/model/code/lib"
