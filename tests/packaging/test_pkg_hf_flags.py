"""``HF_TRUST_REMOTE_CODE`` means the same to the packager's check as to the serving runtime: one reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from smkit.hosting.env import ServingEnv, ServingEnvError
from smkit.packaging.errors import PackagingError
from smkit.packaging.hfcheck import check_pipeline


def _check(folder: Path, value: str) -> None:
    env = {"HF_TASK": "text-classification", "HF_TRUST_REMOTE_CODE": value}
    check_pipeline(folder, env, load_model=False, python="python3", extra_paths=(), timeout_s=60)


@pytest.mark.parametrize("value", ["t", "y", "maybe"])
def test_a_value_the_runtime_refuses_is_refused_by_the_packager(tmp_path: Path, value: str) -> None:
    environ = {"HF_TRUST_REMOTE_CODE": value}
    with pytest.raises(ServingEnvError, match=f"HF_TRUST_REMOTE_CODE={value!r} is not a boolean"):
        ServingEnv.from_environ(environ)
    with pytest.raises(PackagingError) as refused:
        _check(tmp_path, value)
    assert f"HF_TRUST_REMOTE_CODE={value!r} is not a boolean; use true or false" in str(refused.value)
    assert "model.containers[].environment" in str(refused.value)


@pytest.mark.parametrize("value", ["true", "1", "yes", "on", "false", "0", "no", "off", ""])
def test_a_value_the_runtime_takes_is_taken_by_the_packager(tmp_path: Path, value: str) -> None:
    ServingEnv.from_environ({"HF_TRUST_REMOTE_CODE": value})
    _check(tmp_path, value)
