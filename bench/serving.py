"""Serving benchmark: smkit vs its peers (the toolkit + Multi Model Server, nginx + gunicorn + Flask,
FastAPI + uvicorn: bench/peers.py, TorchServe: bench/torchserve.py) vs a bare handler on smkit.

    python -m bench.serving                # full run: writes bench/results/serving.json + BENCHMARKS.md
    python -m bench.serving --requests 20 --servers smkit --out smoke.json --no-markdown   # smoke

Every server serves the same model directory with the same worker count on 127.0.0.1 and is measured
alone: cold start (process start to the first 200 on ``GET /ping``, and to the first 200 invocation),
then for each concurrency level a closed loop of ``text/csv`` requests of 10 rows (see
``bench.load.closed_loop``) while a prober sends ``GET /ping`` every 50 ms. Model profiles
(``bench.profiles``): the packaged example model (``build/model.tar.gz``, made by ``make
package-model``), a 20 ms CPU-bound and a 1 s sleeping ``predict_fn``, a RandomForest unbatched and
batched. The example model's targets are evaluated at concurrency 8, the profiles' targets on every
profile. With ``--rounds N`` each round starts with the next server (``bench.common.rotated``), so no
server always runs first. The example model's warm-up of the JIT-compiled front ends (MMS's, TorchServe's)
defaults to the one bench/warmup.py's curve chose (``bench/results/warmup.json``), so they are measured at
their steady state; the CPython servers, level from their first block on that curve, get ``--warmup-others``.

``smkit-baseline`` is smkit's serving runtime as it was at ``--baseline`` (``git archive`` of ``smkit/``
imported in place of this tree, same interpreter and venv): the same run says whether this tree serves as
fast as the baseline did, per shape. Every server's processes get the same native thread pools
(:data:`THREAD_ENV`: one thread per pool, what smkit gives each of 2 workers on 2 CPUs).

    python -m bench.serving --prepare      # build every server's venv and the baseline tree, measure nothing
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from bench.common import (
    BENCHMARKS_MD,
    LOOPBACK,
    PORTS_BELOW,
    REPO_ROOT,
    RESULTS_DIR,
    BenchError,
    ManagedServer,
    ServerSpec,
    apply_niceness,
    exit_on_sigterm,
    export_tree,
    machine_facts,
    replace_section,
    rotated,
    running,
    smkit_spec,
    write_json,
)
from bench.envs import java_version, package_versions, resolve_smkit_python
from bench.example_model import (
    DEFAULT_EXPECTED,
    DEFAULT_MODEL,
    DEFAULT_PAYLOAD,
    check_answer,
    extract_model,
    load_payload,
)
from bench.hogs import cpu_hogs
from bench.load import Request, closed_loop, invoke_once
from bench.peers import PEER_PINS, fastapi_spec, gunicorn_spec, nginx_binary, peers_python
from bench.profiles import (
    PROFILES,
    RF_PROFILES,
    PingProber,
    Profile,
    add_requirements,
    rf_requirements,
    write_profile_model,
)
from bench.reference import TOOLKIT_PINS, toolkit_python, toolkit_spec
from bench.serving_plan import estimate
from bench.serving_report import aggregate, failures, markdown, profile_targets, targets
from bench.shapes import ROW_BYTES, Shape
from bench.torchserve import TORCHSERVE_PINS, torchserve_python, torchserve_spec
from smkit.process import free_port
from smkit.serving.front.threads import THREAD_VARIABLES

FLOOR_SCRIPT = Path(__file__).resolve().parent / "handler_floor.py"
WARMUP_JSON = RESULTS_DIR / "warmup.json"
WARMUP_FALLBACK = 10_000
# The example model's warm-up of the servers without a JIT: smkit's curve is level from its first block of
# 1,000 (bench/results/warmup.json); gunicorn and FastAPI run the same CPython code from the first request.
WARMUP_OTHERS = 1000
JIT_SERVERS = ("toolkit", "torchserve")
SMKIT_SERVERS = ("smkit", "smkit-baseline", "smkit-metrics-off", "constant")
# The tree before the structural refactoring that had to leave serving as fast as it was (within 3%).
BASELINE_COMMIT = "6e65ef3"
DEFAULT_SERVERS = ("smkit", "smkit-baseline", "toolkit", "gunicorn", "fastapi", "torchserve")
# Thread parity: every server's processes start with one thread per native pool (OpenMP, OpenBLAS, MKL,
# joblib, ...), what smkit gives each of 2 workers on 2 CPUs by default and what MMS sets for OMP.
THREAD_ENV = dict.fromkeys(THREAD_VARIABLES, "1")
ROW_TYPE = "application/octet-stream"


@dataclass(frozen=True)
class Setup:
    """Everything one run shares."""

    model_dir: Path
    work_dir: Path
    workers: int
    request: Request
    expected: list[float] | None
    smkit_python: Path | None
    baseline_tree: Path | None = None


def _smkit(
    name: str, setup: Setup, port: int, args: Sequence[str], env: dict[str, str] | None = None
) -> ServerSpec:
    assert setup.smkit_python is not None
    spec = smkit_spec(name=name, python=setup.smkit_python, args=args, port=port, workers=setup.workers)
    return replace(spec, env={**spec.env, **(env or {})})


def _baseline(setup: Setup, model: Path, port: int) -> ServerSpec:
    """smkit as it was at the baseline commit: its exported tree on PYTHONPATH and as the working directory."""
    if setup.baseline_tree is None:
        raise BenchError("smkit-baseline needs the baseline tree (--baseline COMMIT)")
    spec = _smkit("smkit-baseline", setup, port, ["--model", str(model)])
    return replace(spec, env={**spec.env, "PYTHONPATH": str(setup.baseline_tree)}, cwd=setup.baseline_tree)


def _peer(name: str, spec: Callable[..., ServerSpec]) -> Callable[[Setup, Path, int], ServerSpec]:
    """A peer server's builder: ``spec`` with its name, the model, a work folder of its own, the port and
    the run's worker count."""
    return lambda setup, model, port: spec(
        name=name, model_dir=model, work_dir=setup.work_dir / name, port=port, workers=setup.workers
    )


SPEC_BUILDERS: dict[str, Callable[[Setup, Path, int], ServerSpec]] = {
    "smkit": lambda setup, model, port: _smkit("smkit", setup, port, ["--model", str(model)]),
    "smkit-baseline": _baseline,
    "constant": lambda setup, model, port: _smkit("constant", setup, port, ["--constant"]),
    # The same server with /metrics off: what the metrics cost (docs/observability.md).
    "smkit-metrics-off": lambda setup, model, port: _smkit(
        "smkit-metrics-off", setup, port, ["--model", str(model)], {"SMKIT_METRICS": "false"}
    ),
    "gunicorn": _peer("gunicorn", gunicorn_spec),
    "fastapi": _peer("fastapi", fastapi_spec),
    "toolkit": _peer("toolkit", toolkit_spec),
    "torchserve": _peer("torchserve", torchserve_spec),
}


def chosen_warmup(path: Path = WARMUP_JSON) -> int:
    """The warm-up bench/warmup.py's curve chose (its ``warmup_requests``), or 10,000 without a curve."""
    try:
        return int(json.loads(path.read_text())["warmup_requests"]) or WARMUP_FALLBACK
    except (OSError, ValueError, KeyError, TypeError):
        return WARMUP_FALLBACK


def check_probabilities(name: str, answer: bytes) -> None:
    """A one-row answer must be the row's class probabilities: 10 float64 values summing to 1."""
    values = struct.unpack(f"<{len(answer) // 8}d", answer[: len(answer) // 8 * 8])
    if len(answer) != ROW_BYTES or abs(sum(values) - 1.0) > 1e-6:
        raise BenchError(f"{name}: the RandomForest answered {answer[:200]!r}, not 10 probabilities")


def profile_request(profile: Profile, setup: Setup) -> Request:
    """The request of ``profile``: the example's CSV body, or one float64 row (bench/shapes.py)."""
    if not profile.one_row:
        return setup.request
    row = Shape("sklearn_rf", "1KB").body()[:ROW_BYTES]
    return Request("POST", "/invocations", row, {"Content-Type": ROW_TYPE, "Accept": ROW_TYPE})


def first_invocation(
    server: ManagedServer, request: Request, timeout_s: float = 120.0
) -> tuple[float, bytes]:
    """Seconds from process start to the first 200 invocation, and that answer's body."""
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        status, body = invoke_once(server.port, request)
        if status == 200:
            return time.perf_counter() - server.started_at, body
        time.sleep(0.01)
    raise BenchError(f"{server.spec.name}: no 200 invocation within {timeout_s:.0f} s:\n{server.log_tail()}")


def handler_floor(python: Path, setup: Setup, payload: Path, calls: int) -> dict[str, Any]:
    """CPU per call of the model's handler chain alone, in the interpreter smkit runs with."""
    argv = [
        str(python),
        str(FLOOR_SCRIPT),
        str(setup.model_dir),
        str(payload),
        "text/csv",
        "application/json",
    ]
    done = subprocess.run([*argv, str(calls)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BenchError(f"handler floor failed: {done.stderr.strip()[-1500:]}")
    floor: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return floor


def measure_server(
    name: str,
    setup: Setup,
    *,
    levels: Sequence[int],
    requests: int,
    warmup: int,
    profile: Profile = PROFILES["example"],
    model_dir: Path | None = None,
) -> dict[str, Any]:
    """Start one server, take cold start, warm it up, run every concurrency level, stop it."""
    model = model_dir or setup.model_dir
    port = free_port(LOOPBACK, below=PORTS_BELOW)
    if name == "torchserve" and profile.batch:  # TorchServe's own batching
        spec = torchserve_spec(
            name=name, model_dir=model, work_dir=setup.work_dir / name, port=port, workers=setup.workers,
            batch=profile.batch,
        )  # fmt: skip
    else:
        spec = SPEC_BUILDERS[name](setup, model, port)
    if name in SMKIT_SERVERS and profile.smkit_env:
        spec = replace(spec, env={**spec.env, **dict(profile.smkit_env)})
    spec = replace(spec, env={**THREAD_ENV, **spec.env})
    request = profile_request(profile, setup)
    load_before = round(os.getloadavg()[0], 2)
    with running(spec, setup.work_dir / "logs") as server:
        cold_ping = server.cold_start_s
        cold_invoke, answer = first_invocation(server, request)
        expect: bytes | None = answer
        if profile.one_row:
            check_probabilities(name, answer)
            # A RandomForest's probabilities vary in their last bit with the order its tree threads finish.
            expect = None
        if warmup:
            closed_loop(server.port, request, total=warmup, concurrency=max(levels))
        runs = {}
        for level in levels:
            cpu_before = server.cpu_by_pid()
            sched_before = server.schedstat()
            with PingProber(server.port) as prober:
                result = closed_loop(
                    server.port,
                    request,
                    total=profile.count(level, requests),
                    concurrency=level,
                    expect_body=expect,
                )
            spent = [cpu - cpu_before.get(pid, 0.0) for pid, cpu in server.cpu_by_pid().items()]
            result.server_cpu_s = round(sum(spent), 3)
            sched = [
                [now - then for now, then in zip(stat, sched_before.get(pid, (0, 0, 0)), strict=True)]
                for pid, stat in server.schedstat().items()
            ]
            # Shows whether the workers share the load: 1.0 means one process did all the work.
            result.busiest_process_cpu_share = round(max(spent) / sum(spent), 3) if sum(spent) > 0 else None
            # Time the server's threads were runnable but waiting for a CPU: what other load took from it.
            waits = {"server_run_s": round(sum(x[0] for x in sched) / 1e9, 3)}
            waits["server_runqueue_wait_s"] = round(sum(x[1] for x in sched) / 1e9, 3)
            waits["server_timeslices"] = sum(x[2] for x in sched)
            runs[str(level)] = {**result.as_dict(), **prober.summary(), **waits}
            ping = prober.summary()
            print(
                f"  {profile.name:8s} {name:9s} c={level:<3d} {result.throughput_rps:8.1f} req/s  "
                f"p50 {result.p50_ms:8.2f} ms  p99 {result.p99_ms:8.2f} ms  errors {result.errors}  "
                f"/ping p99 {ping['ping_p99_ms']:.1f} ms max {ping['ping_max_ms']:.1f} ms",
                flush=True,
            )
        rss = server.rss_bytes()
        processes = len(server.processes())
        threads = _threads(server)
        stopping = time.perf_counter()
    return {
        "stop_s": round(time.perf_counter() - stopping, 3),
        "threads_per_process": threads,
        "cold_start_ping_s": round(cold_ping or 0.0, 3),
        "cold_start_first_invocation_s": round(cold_invoke, 3),
        "answer_matches_expected": check_answer(name, answer, setup.expected)
        if profile.name == "example"
        else None,
        "rss_mb_after_runs": round(rss / 2**20, 1),
        "processes": processes,
        "pids": server.stopped_pids,
        "loadavg_1min_before": load_before,
        "runs": runs,
    }


def _threads(server: ManagedServer) -> list[list[Any]]:
    """[name, threads] of every process of the server, as ``ps -o comm,nlwp`` shows them."""
    found = []
    for proc in server.processes():
        with suppress(psutil.Error):
            found.append([proc.name(), proc.num_threads()])
    return sorted(found)


def _nginx_version(binary: str) -> str:
    done = subprocess.run([binary, "-v"], capture_output=True, text=True)
    return (done.stderr or done.stdout).strip()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.serving", description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help="model.tar.gz (default build/model.tar.gz)"
    )
    p.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD, help="CSV body of 10 rows")
    p.add_argument("--expected", type=Path, default=DEFAULT_EXPECTED, help="expected predictions JSON")
    p.add_argument("--rows", type=int, default=10, help="rows the payload must have (default 10)")
    p.add_argument("--requests", type=int, default=2000, help="example-model requests per concurrency level")
    p.add_argument("--concurrency", default="1,8,32", help="comma list of concurrency levels")
    p.add_argument("--workers", type=int, default=2, help="worker processes for every server")
    p.add_argument(
        "--servers",
        default=",".join(DEFAULT_SERVERS),
        help=f"comma list of {', '.join(SPEC_BUILDERS)} (default {','.join(DEFAULT_SERVERS)})",
    )
    p.add_argument(
        "--baseline",
        default=BASELINE_COMMIT,
        help=f"commit whose smkit/ the smkit-baseline server runs (default {BASELINE_COMMIT})",
    )
    p.add_argument(
        "--floor-calls", type=int, default=2000, help="calls for the handler-floor measurement (0: skip)"
    )
    p.add_argument(
        "--profiles",
        default=",".join(PROFILES),
        help=f"comma list of model profiles: {', '.join(PROFILES)} (bench/profiles.py)",
    )
    p.add_argument(
        "--slow-requests",
        type=int,
        default=0,
        help="cap the requests per level of the profiles other than example (smoke runs; 0: their own counts)",
    )
    p.add_argument("--rounds", type=int, default=1, help="repeat all servers, report medians")
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="example-model warm-up requests of the JIT servers (toolkit, torchserve) after start (default: "
        f"the one bench/warmup.py's curve chose, from {WARMUP_JSON.relative_to(REPO_ROOT)}; "
        f"{WARMUP_FALLBACK} without it)",
    )
    p.add_argument(
        "--warmup-others",
        type=int,
        default=None,
        help=f"example-model warm-up requests of the other servers (default {WARMUP_OTHERS}, at most --warmup)",
    )
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "serving.json", help="JSON result path")
    p.add_argument(
        "--smkit-python",
        default="image",
        help="interpreter for smkit: 'image' (venv with the image's and the model's requirements) or a path",
    )
    p.add_argument("--nice", type=int, default=0, help="nice value for client and servers (e.g. -10 as root)")
    p.add_argument(
        "--hogs", type=int, default=0, help="busy loops in sessions of their own, nice 0, during every run"
    )
    p.add_argument("--section", default="serving", help="BENCHMARKS.md section to rewrite")
    p.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    p.add_argument(
        "--prepare", action="store_true", help="build every server's venv and the baseline tree, then exit"
    )
    p.add_argument(
        "--allow-gunicorn-alone",
        action="store_true",
        help="without an nginx binary, measure gunicorn alone instead of failing (not the AWS sample)",
    )
    args = p.parse_args(argv)
    args.levels = [int(x) for x in args.concurrency.split(",") if x]
    args.server_names = [x for x in args.servers.split(",") if x]
    args.profile_names = [x for x in args.profiles.split(",") if x]
    if not set(args.profile_names) <= set(PROFILES):
        p.error(f"--profiles {args.profiles}: choose from {', '.join(PROFILES)}")
    unknown = [x for x in args.server_names if x not in SPEC_BUILDERS]
    if unknown:
        p.error(f"--servers {','.join(unknown)}: unknown; choose from {', '.join(SPEC_BUILDERS)}")
    if args.warmup is None:
        args.warmup = chosen_warmup()
    if args.warmup_others is None:
        args.warmup_others = min(WARMUP_OTHERS, args.warmup)
    if args.requests < max(args.levels) or min(args.levels) < 1:
        p.error(f"--requests {args.requests} must be >= every concurrency level and levels >= 1")
    return args


def warmups(args: argparse.Namespace) -> dict[str, int]:
    """The example model's warm-up per server: the curve's for the JIT servers, ``--warmup-others`` else."""
    return {name: args.warmup if name in JIT_SERVERS else args.warmup_others for name in args.server_names}


def prepare(args: argparse.Namespace, model_dir: Path, work: Path) -> tuple[Path | None, Path | None]:
    """Everything the servers need before the first is started, so a missing piece fails the run at once:
    every venv, nginx for the AWS sample, Java, the baseline tree. Returns smkit's python and that tree."""
    names = set(args.server_names)
    began = time.perf_counter()
    smkit_python = None
    if names & set(SMKIT_SERVERS):
        smkit_python = resolve_smkit_python(args.smkit_python, model_dir)
    if names & {"gunicorn", "fastapi"}:
        peers_python(model_dir)
    if "gunicorn" in names and nginx_binary() is None and not args.allow_gunicorn_alone:
        raise BenchError(
            "gunicorn is measured as AWS's sample runs it, behind nginx, and no nginx binary was found: "
            "apt-get install nginx-light (or pass --allow-gunicorn-alone to measure gunicorn alone)"
        )
    if "toolkit" in names:
        toolkit_python(model_dir)
    if "torchserve" in names:
        torchserve_python(model_dir)
    tree = export_tree(args.baseline, work / "baseline") if "smkit-baseline" in names else None
    print(f"prepared in {time.perf_counter() - began:.0f} s: venvs of {', '.join(sorted(names))}", flush=True)
    return smkit_python, tree


def _write_partial(args: argparse.Namespace, started: str, per_server: Any, per_profile: Any) -> None:
    """What a failed run measured before it failed, beside the result it did not write."""
    partial = args.out.with_suffix(".partial.json")
    write_json(
        partial, {"generated_at": started, "raw_rounds": per_server, "raw_profile_rounds": per_profile}
    )
    print(f"rounds measured before the failure: {partial}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    apply_niceness(args.nice)
    exit_on_sigterm()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    began = time.perf_counter()
    machine = machine_facts()
    work = Path(tempfile.mkdtemp(prefix="smkit-bench-serving-"))
    per_server: dict[str, list[dict[str, Any]]] = {name: [] for name in args.server_names}
    per_profile: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        body = load_payload(args.payload, args.rows)
        expected = json.loads(args.expected.read_text())["predictions"] if args.expected.is_file() else None
        model_dir = extract_model(args.model, work / "model")
        if set(RF_PROFILES) & set(args.profile_names):
            # Every profile's model lists the same requirements: each server's venv is built once.
            add_requirements(model_dir, rf_requirements())
        smkit_python, baseline_tree = prepare(args, model_dir, work)
        if args.prepare:
            shutil.rmtree(work, ignore_errors=True)
            return 0
        plan = estimate(
            args.server_names,
            args.profile_names,
            levels=args.levels,
            requests=args.requests,
            rounds=args.rounds,
            workers=args.workers,
            warmup_for=warmups(args),
            slow_requests=args.slow_requests,
        )
        print(
            f"{len(args.server_names)} servers x {len(args.profile_names)} profiles x {args.rounds} rounds: "
            f"{plan.describe()}",
            flush=True,
        )
        setup = Setup(
            model_dir=model_dir,
            work_dir=work,
            workers=args.workers,
            request=Request(
                "POST", "/invocations", body, {"Content-Type": "text/csv", "Accept": "application/json"}
            ),
            expected=expected,
            smkit_python=smkit_python,
            baseline_tree=baseline_tree,
        )
        floor = None
        if smkit_python is not None and "smkit" in args.server_names and args.floor_calls > 0:
            floor = handler_floor(smkit_python, setup, args.payload, args.floor_calls)
            print(
                f"handler floor (model hooks alone): {floor['cpu_us_per_call']} us CPU per call", flush=True
            )
        model_servers = [name for name in args.server_names if name != "constant"]
        slow = [PROFILES[name].capped(args.slow_requests) for name in args.profile_names if name != "example"]
        per_profile.update(
            {p.name: {name: [] for name in model_servers if name not in p.cannot_serve} for p in slow}
        )
        trainer = smkit_python
        if trainer is None and set(RF_PROFILES) & set(args.profile_names):
            trainer = peers_python(model_dir) if {"gunicorn", "fastapi"} & set(args.server_names) else None
            trainer = trainer or torchserve_python(model_dir)
        dirs = {
            p.name: write_profile_model(p.name, model_dir, work / "profiles" / p.name, trainer) for p in slow
        }
        warmup_for = warmups(args)
        with cpu_hogs(args.hogs):
            for round_no in range(1, args.rounds + 1):
                print(
                    f"round {round_no}/{args.rounds} ({(time.perf_counter() - began) / 60:.1f} min)",
                    flush=True,
                )
                if "example" in args.profile_names:
                    for name in rotated(args.server_names, round_no - 1):
                        per_server[name].append(
                            measure_server(
                                name,
                                setup,
                                levels=args.levels,
                                requests=args.requests,
                                warmup=warmup_for[name],
                            )
                        )
                for profile in slow:  # servers of one profile run back to back: their ratios pair up
                    for name in rotated(model_servers, round_no - 1):
                        if name in profile.cannot_serve:
                            continue
                        per_profile[profile.name][name].append(
                            measure_server(
                                name,
                                setup,
                                levels=args.levels,
                                requests=args.requests,
                                warmup=profile.warmup,
                                profile=profile,
                                model_dir=dirs[profile.name],
                            )
                        )
    except BenchError as exc:
        print(f"bench.serving FAILED: {exc}", file=sys.stderr)
        print(f"logs kept in {work}", file=sys.stderr)
        if any(per_server.values()) or any(r for by in per_profile.values() for r in by.values()):
            _write_partial(args, started, per_server, per_profile)
        return 1
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    machine["wall_time_s"] = round(time.perf_counter() - began, 1)
    machine["estimated_wall_time_s"] = round(plan.total_s, 1)
    versions: dict[str, Any] = {}
    if setup.smkit_python is not None:
        versions["smkit"] = package_versions(setup.smkit_python)
    if "smkit-baseline" in args.server_names:
        versions["smkit-baseline"] = {"commit": args.baseline}
    if "toolkit" in args.server_names:
        versions["toolkit"] = {**package_versions(toolkit_python(setup.model_dir)), "java": java_version()}
    if {"gunicorn", "fastapi"} & set(args.server_names):
        versions["peers"] = {**package_versions(peers_python(setup.model_dir)), "pins": list(PEER_PINS)}
        nginx = nginx_binary()
        versions["peers"]["nginx"] = _nginx_version(nginx) if nginx else "not installed: gunicorn alone"
    if "torchserve" in args.server_names:
        versions["torchserve"] = {
            **package_versions(torchserve_python(setup.model_dir)),
            "pins": list(TORCHSERVE_PINS),
            "java": java_version(),
        }
    servers = {name: aggregate(rounds, args.levels) for name, rounds in per_server.items() if rounds}
    profiles = {
        profile: {name: aggregate(rounds, args.levels) for name, rounds in by_server.items()}
        for profile, by_server in per_profile.items()
    }
    if servers:
        profiles = {"example": {n: d for n, d in servers.items() if n != "constant"}, **profiles}
    result = {
        "generated_at": started,
        "machine": machine,
        "method": {
            "client": "closed loop; one thread per virtual user, each with one keep-alive HTTP/1.1 socket "
            "(re-opened when the server closes it); request bytes prebuilt; latency from send to last body byte",
            "smkit_python": "image-like venv (container/requirements.txt + the model's requirements), "
            "smkit from the source tree"
            if args.smkit_python == "image"
            else args.smkit_python,
            "smkit_baseline": f"smkit/ of commit {args.baseline} (git archive) on PYTHONPATH, same interpreter",
            "isolation": "one server running at a time, each in its own session; all stopped between servers",
            "cold_start": "process start (Popen) to first 200 on GET /ping polled every 5 ms",
            "payload": f"{args.payload.relative_to(REPO_ROOT) if args.payload.is_relative_to(REPO_ROOT) else args.payload.name}"
            f" ({len(body)} bytes, text/csv, Accept application/json)",
            "reference": list(TOOLKIT_PINS) + ["Java 17", "127.0.0.1", "config outside /etc"],
            "native_threads": THREAD_ENV,
            "warmup": {
                "example_jit_servers": args.warmup,
                "example_other_servers": args.warmup_others,
                "jit_servers": list(JIT_SERVERS),
                "profiles": {p.name: p.warmup for p in slow},
            },
        },
        "config": {
            "requests_per_level": args.requests,
            "hogs": args.hogs,
            "concurrency": args.levels,
            "workers": args.workers,
            "rounds": args.rounds,
            "warmup_requests": args.warmup,
            "warmup_others": args.warmup_others,
            "baseline": args.baseline,
            "servers": args.server_names,
            "profiles": args.profile_names,
            "profile_requests": {p.name: p.requests for p in slow},
        },
        "servers": servers,
        "profiles": profiles,
        "handler_floor": floor,
        "versions": versions,
        "raw_rounds": per_server,
        "raw_profile_rounds": per_profile,
    }
    result["targets"] = targets(servers, floor, per_server) if servers else {}
    result["profile_targets"] = profile_targets(
        profiles, {**per_profile, "example": per_server}, args.workers
    )
    write_json(args.out, result)
    table = markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, args.section, table)
    shutil.rmtree(work, ignore_errors=True)
    print(f"wall time {machine['wall_time_s'] / 60:.1f} min (estimated {plan.total_s / 60:.1f})", flush=True)
    bad = failures(result)
    if bad:
        print("bench.serving FAILED: rows with errors or failed /ping probes:", file=sys.stderr)
        for line in bad:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
