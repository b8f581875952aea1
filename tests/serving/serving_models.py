"""Tiny models written into tmp dirs, one per handler semantic the serving tests exercise."""

from __future__ import annotations

import base64
import hashlib
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

# Default chain (input_fn/output_fn from the runtime), predict_fn with the trailing context argument, a
# helper module, a weights file, and magic first values that make the handler misbehave on purpose.
CHAIN = """
import os
import signal
import time

import numpy as np

import helper


class TeapotError(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.status_code = 418
        self.message = message


def model_fn(model_dir):
    with open(os.path.join(model_dir, "weights.txt")) as handle:
        return float(handle.read())


def predict_fn(data, model, context):
    array = np.asarray(data, dtype=float)
    flag = float(array.flat[0]) if array.size else 0.0
    if flag == -1:
        raise RuntimeError("boom in predict_fn")
    if flag == -2:
        raise TeapotError("short and stout")
    if flag == -3:
        time.sleep(5)
    if flag == -4:
        os.kill(os.getpid(), signal.SIGKILL)
    attributes = context.get_request_header(0, "X-Amzn-SageMaker-Custom-Attributes")
    if attributes:
        context.set_response_header(0, "X-Amzn-SageMaker-Custom-Attributes", "echo=" + attributes)
    return array * model * helper.SCALE
"""

# transform_fn with context, echoing what the handler received.
ECHO = """
import json


def model_fn(model_dir):
    return "echo"


def transform_fn(model, data, content_type, accept, context):
    if context.get_request_header(0, "X-Test-None"):
        return None
    status = context.get_request_header(0, "X-Test-Status")
    if status:
        context.set_response_status(int(status), "Custom")
    body = {
        "type": type(data).__name__,
        "content_type": content_type,
        "accept": accept,
        "model_dir_ok": context.system_properties["model_dir"].endswith("echo"),
    }
    if accept == "text/plain":
        return "plain"
    return json.dumps(body), "application/json"
"""

ISOLATED = """
import helper


def model_fn(model_dir):
    return helper.NAME


def transform_fn(model, data, content_type, accept):
    import helper as late

    return f"{model}:{helper.NAME}:{late.NAME}", "text/plain"
"""

FAILING = """
def model_fn(model_dir):
    raise RuntimeError("weights file is corrupt")
"""

MIXED = """
def model_fn(model_dir):
    return 1


def transform_fn(model, data, content_type, accept):
    return "x"


def predict_fn(data, model):
    return data
"""

SLOW_LOAD = """
import os
import time


def model_fn(model_dir):
    time.sleep(1.0)
    marker = os.environ.get("SMKIT_TEST_LOADED_MARKER")
    if marker:
        open(marker, "w").close()
    return 1


def transform_fn(model, data, content_type, accept):
    return "loaded", "text/plain"
"""

BIG = """
import numpy as np

MB = {mb}


def model_fn(model_dir):
    return np.ones(MB * 1024 * 1024 // 8)


def transform_fn(model, data, content_type, accept):
    return str(model.nbytes // (1024 * 1024)), "text/plain"
"""


@dataclass(frozen=True)
class Models:
    """Paths of the written model directories."""

    chain: Path
    echo: Path
    iso_a: Path
    iso_b: Path
    failing: Path
    mixed: Path
    slow_load: Path
    unmet_requirements: Path
    big: dict[int, Path]


def write_model(root: Path, name: str, inference: str, **extra: str) -> Path:
    model_dir = root / name
    (model_dir / "code").mkdir(parents=True)
    (model_dir / "code" / "inference.py").write_text(textwrap.dedent(inference))
    for relative, content in extra.items():
        path = model_dir / relative.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return model_dir


def write_all(root: Path) -> Models:
    return Models(
        chain=write_model(
            root,
            "chain",
            CHAIN,
            **{
                "weights.txt": "1.5",
                "code__helper.py": "SCALE = 2.0\n",
                "code__requirements.txt": "numpy>=1.0  # satisfied: nothing to install\n",
            },
        ),
        echo=write_model(root, "echo", ECHO),
        iso_a=write_model(root, "iso_a", ISOLATED, **{"code__helper.py": "NAME = 'a'\n"}),
        iso_b=write_model(root, "iso_b", ISOLATED, **{"code__helper.py": "NAME = 'b'\n"}),
        failing=write_model(root, "failing", FAILING),
        mixed=write_model(root, "mixed", MIXED),
        slow_load=write_model(root, "slow_load", SLOW_LOAD),
        unmet_requirements=write_model(
            root, "unmet", ECHO, **{"code__requirements.txt": "smkit-test-no-such-package==9.9.9\n"}
        ),
        big={mb: write_model(root, f"big{mb}", BIG.format(mb=mb)) for mb in (40, 160)},
    )


def tiny_wheel(dest: Path) -> Path:
    """A pure-Python wheel ``smkit_fixture_dep`` (``VALUE = 42``) built by hand: no index, no build backend."""
    name, version = "smkit_fixture_dep", "1.0"
    files = {
        f"{name}/__init__.py": "VALUE = 42\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    wheel = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel
