"""Model profiles for ``bench.serving`` and the ``/ping`` prober that runs during every load level.

Three profiles, served by every server from the same model directory:

- ``example``: the packaged example model (``build/model.tar.gz``), hooks of ~50-80 us.
- ``cpu20ms``: ``predict_fn`` burns 20 ms of its own thread's CPU (``time.thread_time``: other threads
  of a worker process do not shorten it), like a mid-size tree ensemble or a small network.
- ``sleep1s``: ``predict_fn`` sleeps 1 s (I/O-bound: a remote call, a GPU wait). smkit serves it as its
  user would: with ``SMKIT_WORKER_CONCURRENCY=32`` (docs/serving-runtime.md, "Handlers that wait").
- ``sleep1s-async``: the same wait written as ``async def predict_fn`` awaiting ``asyncio.sleep(1)``
  (smkit awaits it on the worker's event loop; the peers run it with ``asyncio.run`` on their threads).
- ``rf``: bench/shapes.py's 100-tree scikit-learn RandomForest (``predict_proba``), one-row requests of
  80 bytes (``application/octet-stream``), no server batching.
- ``rf-batched``: the same model and requests with each server's own dynamic batching: smkit's
  ``SAGEMAKER_TS_BATCH_SIZE`` / ``SAGEMAKER_TS_MAX_BATCH_DELAY`` and TorchServe's ``batchSize`` /
  ``maxBatchDelay`` (16 requests, 2 ms: the 32 callers of the top level over 2 workers, as
  docs/handler-semantics.md advises); a batch goes through the model's ``predict_batch_fn`` once
  (bench/batching.py's model). Only the servers that batch run it.

The two synthetic profiles define ``input_fn`` and ``output_fn`` themselves, so every server runs the same
Python for them and only the runtime differs. Their request counts per level are smaller: at 2 workers
the sleeping profile serves at most 2 requests per second. Each profile's own warm-up (``Profile.warmup``)
is sent to every server alike; the example model's long warm-up, which only a JIT-compiled front end
needs, is ``bench.serving``'s.
"""

from __future__ import annotations

import http.client
import json
import shutil
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import shapes
from bench.batching import build as build_rf
from bench.common import LOOPBACK, BenchError
from bench.envs import read_requirements
from bench.load import percentile
from smkit.digest import sha256_file

SYNTHETIC = """
import asyncio
import json
import time


def model_fn(model_dir):
    return None


def input_fn(data, content_type):
    return data


{kind}def predict_fn(data, model):
{body}
    return [1.0]


def output_fn(prediction, accept):
    return json.dumps({{"predictions": prediction}}), "application/json"
"""
CPU_20MS = """    end = time.thread_time() + 0.020
    spins = 0
    while time.thread_time() < end:
        spins += 1"""
SLEEP_1S = "    time.sleep(1.0)"
SLEEP_1S_ASYNC = "    await asyncio.sleep(1.0)"
BODIES = {"cpu20ms": ("", CPU_20MS), "sleep1s": ("", SLEEP_1S), "sleep1s-async": ("async ", SLEEP_1S_ASYNC)}
# The setting a user of a model that waits gives smkit: requests per worker at once.
WAITING_ENV = {"SMKIT_WORKER_CONCURRENCY": "32"}
# Dynamic batching of the rf-batched profile: (requests per batch, max delay in ms).
RF_BATCH = (16, 2)
# Requests per level. The 1 s profiles' rounds agree to the percent (a server overlaps the waits or it
# does not), so one or two waves of callers per level say it all; the others are sized so that a run of
# every server, profile and round stays near 30 minutes on 2 cores (bench/serving_plan.py).
CPU_REQUESTS = {1: 60, 8: 200, 32: 250}
SLEEP_REQUESTS = {1: 2, 8: 8, 32: 32}
RF_REQUESTS = {1: 100, 8: 400, 32: 600}
RF_BATCHED_REQUESTS = {1: 100, 8: 400, 32: 1000}
# Servers without a batching of their own; they serve the rf profile.
UNBATCHED_PEERS = ("toolkit", "gunicorn", "fastapi")


@dataclass(frozen=True)
class Profile:
    """One model profile: its name, label and how many requests each concurrency level sends."""

    name: str
    label: str
    requests: dict[int, int] | None  # None: the --requests option, for every level
    smkit_env: tuple[tuple[str, str], ...] = ()  # what the model's container environment sets for smkit
    cannot_serve: tuple[str, ...] = ()  # servers that cannot run this handler at all
    batch: tuple[int, int] | None = None  # (requests per batch, max delay ms) for the servers that batch
    one_row: bool = False  # one 80-byte float64 row per request (bench/shapes.py) instead of the CSV body
    warmup: int = 0  # requests sent at the top concurrency after start, before the levels (every server)

    def capped(self, most: int) -> Profile:
        """This profile with at most ``most`` requests per level (0: unchanged)."""
        if most <= 0 or self.requests is None:
            return self
        capped = {level: min(n, most) for level, n in self.requests.items()}
        return replace(self, requests=capped, warmup=min(self.warmup, most))

    def count(self, level: int, default: int) -> int:
        """Requests for ``level``."""
        if self.requests is None:
            return default
        return self.requests.get(level, max(self.requests.values()))


PROFILES: dict[str, Profile] = {
    "example": Profile("example", "example model", None),
    "cpu20ms": Profile("cpu20ms", "predict_fn burns 20 ms CPU", CPU_REQUESTS, warmup=64),
    "sleep1s": Profile("sleep1s", "predict_fn sleeps 1 s", SLEEP_REQUESTS, tuple(WAITING_ENV.items())),
    "sleep1s-async": Profile(
        "sleep1s-async",
        "async predict_fn awaits 1 s",
        SLEEP_REQUESTS,
        tuple(WAITING_ENV.items()),
        # The toolkit calls predict_fn and gets a coroutine it never awaits: every request answers 500.
        cannot_serve=("toolkit",),
    ),
    "rf": Profile("rf", "RandomForest, 1-row requests", RF_REQUESTS, one_row=True, warmup=200),
    "rf-batched": Profile(
        "rf-batched",
        "RandomForest, 1-row requests, batched",
        RF_BATCHED_REQUESTS,
        (
            ("SAGEMAKER_TS_BATCH_SIZE", str(RF_BATCH[0])),
            ("SAGEMAKER_TS_MAX_BATCH_DELAY", str(RF_BATCH[1])),
        ),
        cannot_serve=UNBATCHED_PEERS,
        batch=RF_BATCH,
        one_row=True,
        warmup=200,
    ),
}
RF_PROFILES = ("rf", "rf-batched")


def rf_requirements() -> list[str]:
    """What the RandomForest profiles add to every server's venv (bench/shapes.py's scikit-learn pin)."""
    return [line for line in shapes.REQUIREMENTS if line.startswith("scikit-learn==")]


def add_requirements(model_dir: Path, extra: list[str]) -> None:
    """Append ``extra`` to ``model_dir``'s ``code/requirements.txt``: with every profile's model holding the
    same list, each server's benchmark venv is built once for the whole run."""
    path = model_dir / "code" / "requirements.txt"
    lines = read_requirements(path)
    missing = [line for line in extra if line not in lines]
    if missing:
        path.write_text("".join(f"{line}\n" for line in [*lines, *missing]))
        _record(model_dir, path)


def _record(model_dir: Path, path: Path) -> None:
    """Update the size and sha256 that the model's ``smkit-manifest.json`` lists for ``path``, as packaging
    the changed model again would: smkit refuses to load a model whose files differ from its manifest."""
    manifest_path = model_dir / "smkit-manifest.json"
    if not manifest_path.is_file():
        return
    manifest = json.loads(manifest_path.read_text())
    name = path.relative_to(model_dir).as_posix()
    for entry in manifest.get("files", []):
        if entry.get("path") == name:
            entry["size"] = path.stat().st_size
            entry["sha256"] = sha256_file(path)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def write_profile_model(name: str, example_dir: Path, dest: Path, python: Path | None = None) -> Path:
    """The model directory for profile ``name`` (the example's own for ``example``; the RandomForest
    trained with ``python``, an interpreter that has scikit-learn)."""
    if name == "example":
        return example_dir
    if dest.exists():
        shutil.rmtree(dest)
    if name in RF_PROFILES:
        if python is None:
            raise BenchError(f"profile {name}: no interpreter with scikit-learn to train the model")
        model_dir = build_rf("sklearn_rf", python, dest)
        shutil.copy(example_dir / "code" / "requirements.txt", model_dir / "code" / "requirements.txt")
        return model_dir
    kind, body = BODIES[name]
    (dest / "code").mkdir(parents=True)
    (dest / "code" / "inference.py").write_text(SYNTHETIC.format(kind=kind, body=body).lstrip())
    # The example's requirements, so every profile runs in the same benchmark venvs.
    requirements = example_dir / "code" / "requirements.txt"
    if requirements.is_file():
        shutil.copy(requirements, dest / "code" / "requirements.txt")
    return dest


class PingProber:
    """``GET /ping`` on a fresh connection every ``interval_s`` while a load level runs.

    A probe that fails or takes longer than SageMaker's 2 s is counted as a failure (its time is kept as
    the 2 s it was allowed).
    """

    def __init__(self, port: int, interval_s: float = 0.05, timeout_s: float = 2.0) -> None:
        self.port = port
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PingProber:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.perf_counter()
            ok = False
            conn = http.client.HTTPConnection(LOOPBACK, self.port, timeout=self.timeout_s)
            try:
                conn.request("GET", "/ping")
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            spent = time.perf_counter() - began
            if not ok:
                self.failures += 1
                spent = max(spent, self.timeout_s)
            self.latencies.append(spent)
            self._stop.wait(self.interval_s)

    def summary(self) -> dict[str, Any]:
        """p50/p99/max in ms, probes and failures."""
        values = sorted(self.latencies)
        return {
            "ping_probes": len(values),
            "ping_failures": self.failures,
            "ping_p50_ms": round(percentile(values, 50) * 1000, 3),
            "ping_p99_ms": round(percentile(values, 99) * 1000, 3),
            "ping_max_ms": round((values[-1] if values else 0.0) * 1000, 3),
        }
