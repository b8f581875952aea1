"""The serving runtime's check before model_fn (smkit/serving/worker/integrity.py), on a packaged and extracted model.

A real server on 127.0.0.1 (``python -m smkit.serving --model DIR``, what the image and the local endpoint
run): the packaged model loads; a file changed after packaging, and a joblib file importing ``os.system``
put into the extracted model by hand, are each refused by name and never loaded; the off switch serves it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest
from pkg_harness import Model

from smkit.archive import safe_extract
from smkit.packaging import build_archive
from smkit.serving.worker.integrity import VAR_PICKLE_ALLOW, VAR_VERIFY, ModelFileError, verify_model_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))  # serving_harness

from serving_harness import start_server, wait_ready  # noqa: E402
from waiting import wait_until  # noqa: E402

from smkit.process import ping  # noqa: E402


class Command:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


@pytest.fixture
def extracted(tiny: Model) -> Path:
    """The tiny model packaged by smkit package, then extracted as SageMaker does into /opt/ml/model."""
    manifest = build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz")
    assert manifest.archive is not None
    model_dir = tiny.out / "model"
    safe_extract(Path(manifest.archive.path), model_dir)
    return model_dir


def _refused(tmp: Path, model_dir: Path, expect: str, env: dict[str, str] | None = None) -> str:
    server = start_server(
        tmp, ["--model", str(model_dir)], env={"SMKIT_WORKER_RETRIES": "0", **(env or {})}, ready=False
    )
    try:
        wait_until(lambda: expect in server.log(), timeout=60, what=lambda: f"{expect!r} in:\n{server.log()}")
        assert ping(server.port)[0] != 200
        return server.log()
    finally:
        server.stop()


def test_the_packaged_model_loads_and_a_changed_file_is_refused_by_name(
    extracted: Path, tmp_path: Path
) -> None:
    server = start_server(tmp_path, ["--model", str(extracted)])
    assert server.invoke("2.5").status == 200
    server.stop()
    (extracted / "sub" / "extra.bin").write_bytes(b"tampered")
    log = _refused(tmp_path, extracted, f"{extracted / 'sub' / 'extra.bin'}: changed since it was packaged")
    assert "size 8 bytes, packaged 1,280" in log and f"{VAR_VERIFY}=false" in log


def test_a_joblib_file_put_into_the_extracted_model_by_hand_is_refused(
    extracted: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "loaded-it"
    joblib.dump([np.arange(4), Command(f"touch {marker}")], extracted / "model.joblib")
    _refused(
        tmp_path, extracted, f"{extracted / 'model.joblib'}: its pickle imports posix.system (os.system)"
    )
    assert not marker.exists()


def test_the_off_switch_serves_a_changed_model(extracted: Path, tmp_path: Path) -> None:
    (extracted / "weights.txt").write_text("3.0\n")
    server = start_server(tmp_path, ["--model", str(extracted)], env={VAR_VERIFY: "false"}, ready=False)
    try:
        wait_ready(server, timeout=60)
        assert "model files are not checked before they load" in server.log()
    finally:
        server.stop()


def test_direct_calls_name_every_refusal(extracted: Path) -> None:
    verify_model_dir(str(extracted), {})
    joblib.dump({"f": ModelFileError}, extracted / "extra.pkl")
    with pytest.raises(
        ModelFileError, match=r"extra\.pkl: its pickle imports smkit\.serving\.worker\.integrity\."
    ):
        verify_model_dir(str(extracted), {})
    verify_model_dir(str(extracted), {VAR_PICKLE_ALLOW: "smkit.serving.worker.integrity.ModelFileError"})
    with pytest.raises(ModelFileError, match=r"pickle allow entry 'bad entry' is not module\.name"):
        verify_model_dir(str(extracted), {VAR_PICKLE_ALLOW: "bad entry"})
    (extracted / "weights.txt").unlink()
    with pytest.raises(ModelFileError, match=r"weights\.txt: listed in smkit-manifest\.json but missing"):
        verify_model_dir(str(extracted), {})
    manifest = extracted / "smkit-manifest.json"
    data = json.loads(manifest.read_text())
    data["files"].append({"path": "../outside", "size": 1, "sha256": "0" * 64})
    manifest.write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match=r"lists '\.\./outside', which is outside the model directory"):
        verify_model_dir(str(extracted), {})
    manifest.write_text("{not json")
    with pytest.raises(ModelFileError, match=r"smkit-manifest\.json: not a readable manifest"):
        verify_model_dir(str(extracted), {})
    with pytest.raises(ValueError, match=f"{VAR_VERIFY}='maybe' is not a boolean"):
        verify_model_dir(str(extracted), {VAR_VERIFY: "maybe"})
