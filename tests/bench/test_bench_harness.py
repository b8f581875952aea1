"""The benchmark scripts run end to end in a tiny mode (our server only), so they cannot rot.

No timing is asserted: only that each script starts the server, sends every request, counts no
error, writes its JSON with the documented keys and leaves no server process behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
ARCHIVE = REPO / "build" / "model.tar.gz"


@pytest.fixture(scope="module")
def archive() -> Path:
    assert ARCHIVE.is_file(), "build/model.tar.gz is missing: run `make package-model` (make test does)"
    return ARCHIVE


def run_script(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # The development interpreter: the tiny mode must not build the image-like venv.
        [sys.executable, "-m", module, *args, "--smkit-python", sys.executable, "--no-markdown"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


def written(out: Path, done: subprocess.CompletedProcess[str]) -> Any:
    """The script's JSON result; when it wrote none, the failure shows why (its exit status and output)."""
    assert out.is_file(), f"exit status {done.returncode}, no {out.name}:\n{done.stdout}\n{done.stderr}"
    return json.loads(out.read_text())


def assert_stopped(pids: list[int]) -> None:
    alive = [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert not alive, f"server processes left behind: {alive}"


def test_serving_harness_tiny_run(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "serving.json"
    done = run_script(
        "bench.serving",
        "--model",
        str(archive),
        "--servers",
        "smkit,constant",
        "--requests",
        "20",
        "--concurrency",
        "1,8",
        "--warmup",
        "4",
        "--floor-calls",
        "20",
        "--profiles",
        "example,cpu20ms",
        "--slow-requests",
        "16",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    result = written(out, done)
    slow = result["profiles"]["cpu20ms"]["smkit"]["runs"]["8"]
    assert slow["requests"] == 16 and slow["errors"] == 0
    assert slow["ping_probes"] >= 1 and slow["ping_failures"] == 0
    assert "cpu20ms_ping_c8" in result["profile_targets"]
    ours = result["servers"]["smkit"]
    assert ours["answer_matches_expected"] is True
    assert ours["cold_start_ping_s"] > 0
    assert set(ours["runs"]) == {"1", "8"}
    for run in ours["runs"].values():
        assert run["requests"] == 20
        assert run["errors"] == 0
        assert run["throughput_rps"] > 0
        assert 0 < run["p50_ms"] <= run["p99_ms"]
    assert result["handler_floor"]["calls"] == 20
    assert set(result["targets"]) == {
        "cold_start_s",
        "bare_over_smkit_throughput_c8",
        "bare_ratio_with_hooks_alone_added_c8",
        "smkit_cpu_us_per_request_beyond_bare_and_hooks_c8",
    }
    assert result["servers"]["constant"]["runs"]["8"]["errors"] == 0
    assert result["raw_rounds"]["smkit"][0]["runs"]["8"]["server_run_s"] > 0  # schedstat was read
    assert (
        len(result["raw_rounds"]["smkit"][0]["pids"]) == 4
    )  # front end + the worker template + 2 model workers
    assert_stopped(result["raw_rounds"]["smkit"][0]["pids"])
    assert "| smkit (front end + model workers, example model) | 8 |" in done.stdout


def test_models_harness_tiny_run(tmp_path: Path) -> None:
    """The NumPy profile (the only one whose library the development venv has) on our server."""
    out = tmp_path / "models.json"
    done = run_script(
        "bench.models",
        "--profiles",
        "numpy",
        "--sizes",
        "1KB",
        "--servers",
        "smkit,smkit-1thread",
        "--concurrency",
        "2",
        "--rounds",
        "2",
        "--seconds",
        "0.05",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    result = written(out, done)
    # Each round starts with the next server: every server runs first once.
    positions = {s: [r["position"] for r in runs] for s, runs in result["raw_rounds"]["numpy"].items()}
    assert positions == {"smkit": [0, 1], "smkit-1thread": [1, 0]}
    assert result["handler_floor"]["numpy/1KB"]["cpu_limit_rps"] > 0
    for server in ("smkit", "smkit-1thread"):
        run = result["profiles"]["numpy"][server]["runs"]["numpy/1KB@2"]
        assert run["errors"] == 0 and run["requests"] >= 8 and run["throughput_rps"] > 0
    # One thread by hand: each worker process runs its Python thread and no pool thread.
    assert result["profiles"]["numpy"]["smkit-1thread"]["runs"]["numpy/1KB@2"]["worker_threads"] == [1, 1]
    assert "numpy/1KB@2 req/s vs best of (1 thread, share)" in result["targets"]
    assert "| numpy | 1KB | 2 | CPU limit:" in done.stdout


def test_soak_harness_tiny_run(archive: Path, tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = run_script(
        "bench.soak",
        "--model",
        str(archive),
        "--requests",
        "20",
        "--concurrency",
        "2",
        "--warmup",
        "4",
        "--out",
        str(out),
    )
    result = written(out, done)
    assert result["errors"] == 0, result["error_samples"]
    assert result["rss_mb_start"] > 0 and result["rss_mb_end"] > 0
    assert set(result["criteria"]) == {"zero_errors", "rss_growth_under_10pct", "crashed_worker_replaced"}
    crash = result["criteria"]["crashed_worker_replaced"]
    assert crash["met"] and crash["value"]["killed_pid"] not in crash["value"]["workers_after"]
    assert done.returncode == (0 if result["passed"] else 1)
    assert_stopped(result["server_pids_end"])


def test_serving_rejects_unknown_server_name(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.serving",
            "--servers",
            "smkit,nginx",
            "--out",
            str(tmp_path / "x.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert (
        "--servers nginx: unknown; choose from smkit, smkit-baseline, constant, smkit-metrics-off, gunicorn, "
        "fastapi, toolkit, torchserve" in done.stderr
    )
    assert not (tmp_path / "x.json").exists()


def test_serving_warmup_comes_from_the_warmup_curve(tmp_path: Path) -> None:
    from bench.serving import WARMUP_FALLBACK, chosen_warmup  # noqa: PLC0415 - imports the harness

    curve = tmp_path / "warmup.json"
    curve.write_text(json.dumps({"warmup_requests": 20000}))
    assert chosen_warmup(curve) == 20000
    assert chosen_warmup(tmp_path / "absent.json") == WARMUP_FALLBACK


def test_the_serving_run_is_estimated_from_its_configuration() -> None:
    from bench.profiles import PROFILES  # noqa: PLC0415 - imports the harness
    from bench.serving_plan import estimate  # noqa: PLC0415

    one = estimate(
        ["smkit", "gunicorn"], ["sleep1s"], levels=[8], requests=100, rounds=1, workers=2, warmup_for={}
    )
    # 8 requests at 8 callers: one 1 s wave for smkit, four for gunicorn's two sync workers.
    waves = PROFILES["sleep1s"].count(8, 100) / 8
    assert one.by_profile["sleep1s"] > waves * (1 + 4)
    three = estimate(
        ["smkit", "gunicorn"], ["sleep1s"], levels=[8], requests=100, rounds=3, workers=2, warmup_for={}
    )
    assert three.total_s == 3 * one.total_s
    assert "min on 2 quiet cores" in three.describe()


def test_the_baseline_server_imports_smkit_from_the_baseline_commit(tmp_path: Path) -> None:
    from bench.common import export_tree  # noqa: PLC0415 - imports the harness
    from bench.serving import BASELINE_COMMIT, SPEC_BUILDERS, Setup  # noqa: PLC0415

    tree = export_tree(BASELINE_COMMIT, tmp_path / "baseline")
    assert (tree / "smkit" / "serving" / "__main__.py").is_file()
    setup = Setup(
        model_dir=tmp_path,
        work_dir=tmp_path,
        workers=2,
        request=None,  # type: ignore[arg-type]
        expected=None,
        smkit_python=Path(sys.executable),
        baseline_tree=tree,
    )
    spec = SPEC_BUILDERS["smkit-baseline"](setup, tmp_path, 8080)
    assert spec.env["PYTHONPATH"] == str(tree) and spec.cwd == tree
    assert spec.argv[1:3] == ["-m", "smkit.serving"]


def test_a_requirement_added_to_a_packaged_model_is_recorded_in_its_manifest(tmp_path: Path) -> None:
    import tarfile  # noqa: PLC0415

    from bench.profiles import add_requirements  # noqa: PLC0415 - imports the harness
    from smkit.serving.worker.integrity import verify_model_dir  # noqa: PLC0415

    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(tmp_path, filter="data")
    add_requirements(tmp_path, ["scikit-learn==1.8.0"])
    assert "scikit-learn==1.8.0" in (tmp_path / "code" / "requirements.txt").read_text()
    verify_model_dir(str(tmp_path), {})  # smkit still loads it: the manifest lists the new size and digest


def test_streaming_harness_tiny_run(tmp_path: Path) -> None:
    out = tmp_path / "streaming.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.streaming", "--requests", "1", "--no-markdown", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    for path in ("serve", "local_endpoint_boto3"):
        for mode in ("paced_1ms", "burst"):
            assert report["paths"][path][mode]["first_byte_after_first_yield_ms"] > 0
    assert set(report["targets"]) == {
        "first_byte_within_5ms_of_first_yield",
        "per_chunk_overhead_below_0.2ms",
    }


@pytest.mark.frameworks  # eight servers start under valgrind: minutes of CPU
def test_serving_instructions_tiny_run(archive: Path, tmp_path: Path) -> None:
    """Both trees counted at one and at two callers; the counts are the example model's, not zero."""
    out = tmp_path / "serving_instructions.json"
    argv = [sys.executable, "-m", "bench.serving_instructions", "--model", str(archive), "--requests", "8"]
    argv += ["--warmup", "2", "--concurrency", "1,2", "--workers", "1", "--no-markdown", "--out", str(out)]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    result = written(out, done)
    assert result["baseline"] == "6e65ef3" and set(result["runs"]) == {"1", "2"}
    for row in result["runs"].values():
        for server in ("smkit", "smkit-baseline"):
            # A request costs each side tens of thousands of instructions at the least (the HTTP parse,
            # the handler's CSV parse and NumPy scoring).
            assert row[server]["front"] > 10_000 and row[server]["worker"] > 10_000
        assert row["ratio"]["total"] > 0 and isinstance(row["within_3pct"], bool)
    assert "| 2 |" in done.stdout
