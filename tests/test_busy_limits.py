"""The kit's own limits hold on a busy machine: checks are bounded in CPU time, not wall time
(smkit.bounded.run_bounded), and the local endpoint waits as long as the variant's start-up health check
allows, and packaging (what `make package-model` runs per archive) succeeds. The ``busy`` fixture runs two
busy loops per core while a test runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from smkit.bounded import LimitExceeded, run_bounded
from smkit.packaging import PackagingError
from smkit.packaging.handler_check import check_handler

BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"


@pytest.fixture
def busy() -> Iterator[int]:
    """Two busy loops per core (at least 2), stopped after the test; yields how many run."""
    count = 2 * (os.cpu_count() or 1)
    loops = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"]) for _ in range(count)]
    try:
        yield count
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_a_check_within_its_cpu_limit_passes_on_a_busy_machine(busy: int) -> None:
    # One CPU second of work competing with the busy loops takes several wall-clock seconds; only the CPU
    # time counts against the limit.
    done = run_bounded([sys.executable, "-c", BURN.format(seconds=1.0)], cpu_s=3.0)
    assert done.returncode == 0, done.stderr


def test_a_check_that_works_too_long_is_stopped_by_its_cpu_limit() -> None:
    with pytest.raises(LimitExceeded, match=r"^used more than 1 s of CPU time \(\d+ s wall-clock\)$"):
        run_bounded([sys.executable, "-c", BURN.format(seconds=60)], cpu_s=1.0)


def test_a_check_that_waits_is_stopped_when_it_uses_no_cpu() -> None:
    with pytest.raises(LimitExceeded, match=r"^used no CPU for 1 s, after [\d.]+ s of CPU \(it waits on"):
        run_bounded([sys.executable, "-c", "import time; time.sleep(60)"], cpu_s=1.0, idle_s=1.0)


def test_handler_check_names_its_cpu_limit_and_the_option(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "requirements.txt").write_text("")
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "code" / "inference.py").write_text(
        BURN.format(seconds=60) + "\n\ndef model_fn(model_dir):\n    return None\n"
    )
    with pytest.raises(PackagingError) as info:
        check_handler(tmp_path / "code", tmp_path / "artifacts", timeout_s=1.0)
    message = str(info.value)
    assert "inference.py: importing and loading used more than 1 s of CPU time" in message
    assert message.endswith(
        "move slow work out of module level, or raise --check-timeout (seconds of the check's CPU time; "
        "default 120)"
    )


def test_the_local_endpoint_starts_on_a_busy_machine(busy: int, tmp_path: Path) -> None:
    from smkit.local import LocalEndpoint

    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(
        "def model_fn(model_dir):\n    return None\n\n\ndef predict_fn(data, model):\n    return data\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(
        "name: busy\nenvironment: dev\nimage:\n  source: build\nmodel:\n  containers:\n    - name: m\n"
        "      model_data:\n        source: prefix\n        path: model\nendpoint:\n  type: realtime\n"
        "  variants:\n    - name: only\n      instance_type: ml.m5.large\n"
    )
    with LocalEndpoint(config, root=tmp_path, python=sys.executable) as endpoint:
        answer = endpoint.client().invoke_endpoint(
            EndpointName=endpoint.name, Body=b'{"x": 1}', ContentType="application/json"
        )
        assert answer["Body"].read() == b'{"x": 1}'


def test_packaging_a_model_succeeds_on_a_busy_machine(busy: int, tmp_path: Path) -> None:
    # What `make package-model` runs for every archive (scripts/package_models.py): `smkit package`, whose
    # handler check loads the model in its environment under a CPU-time limit, then compresses with every
    # core. Training is the examples' own scripts and has no limit of the kit's.
    code, artifacts = tmp_path / "code", tmp_path / "artifacts"
    code.mkdir()
    artifacts.mkdir()
    (code / "requirements.txt").write_text("")
    (code / "inference.py").write_text(
        "import os\n\nimport numpy\n\n\ndef model_fn(model_dir):\n"
        "    return numpy.load(os.path.join(model_dir, 'weights.npy'))\n\n\n"
        "def predict_fn(data, model):\n    return (numpy.asarray(data) * model).tolist()\n"
    )
    (artifacts / "weights.npy").write_bytes(
        subprocess.run(
            [sys.executable, "-c", "import io, sys, numpy; b = io.BytesIO(); numpy.save(b, numpy.arange(3.0)); "
             "sys.stdout.buffer.write(b.getvalue())"],
            capture_output=True, check=True,
        ).stdout
    )  # fmt: skip
    output = tmp_path / "model.tar.gz"
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "package", "--code", str(code), "--artifacts", str(artifacts),
         "--output", str(output), "--no-vendor-wheels"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert output.is_file()
