"""Real model shapes (bench/shapes.py) on smkit vs sagemaker-inference 1.10.1 + Multi Model Server 1.1.11.

    python -m bench.models --rounds 3 --nice -10     # writes bench/results/models.json + BENCHMARKS.md
    python -m bench.models --profiles numpy --sizes 1KB --rounds 1 --seconds 1 --no-markdown   # smoke

Servers (``--servers``), all with the same worker count (default 2) and model directory:

- ``smkit``: ``python -m smkit.serving``, no thread variable set: the runtime's own choice
  (one thread per pool in every worker, docs/serving-runtime.md).
- ``smkit-1thread``: the same with ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` set by hand.
- ``smkit-share``: every pool variable set by hand to the worker's share of the CPUs, ``cpus // workers``.
- ``smkit-machine``: pools as large as the machine set by hand (``OMP_NUM_THREADS=<cpus>`` ...): what
  every worker got before the runtime sized them.
- ``toolkit``: the toolkit + MMS (bench/reference.py), which sets ``OMP_NUM_THREADS=1`` in its workers.

Rounds are interleaved (every server of a profile, then the next profile, then the next round) and the
medians reported. Each round starts with the next server (round 1: smkit, smkit-1thread, toolkit; round 2:
smkit-1thread, toolkit, smkit; ...): the first server after a profile switch measured up to 10% slower
than the same configuration run second, so a fixed order would favour the later servers. For every profile and payload size the table also gives the CPU limit: the CPUs
divided by the handler chain's own CPU per request with one thread, timed alone (bench/handler_floor.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import shapes
from bench.common import (
    BENCHMARKS_MD,
    LOOPBACK,
    PORTS_BELOW,
    RESULTS_DIR,
    BenchError,
    ManagedServer,
    ServerSpec,
    apply_niceness,
    exit_on_sigterm,
    machine_facts,
    replace_section,
    rotated,
    running,
    smkit_spec,
    write_json,
)
from bench.envs import IMAGE_REQUIREMENTS, ensure_venv, java_version, package_versions, read_requirements
from bench.hogs import cpu_hogs
from bench.load import Request, closed_loop
from bench.models_report import aggregate, markdown, targets
from bench.reference import TOOLKIT_PINS, toolkit_spec
from smkit.cpus import available_cpus
from smkit.process import free_port
from smkit.serving.front.threads import THREAD_VARIABLES

FLOOR_SCRIPT = Path(__file__).resolve().parent / "handler_floor.py"
CONTENT_TYPE = "application/octet-stream"
SERVERS = ("smkit", "smkit-1thread", "smkit-share", "smkit-machine", "toolkit")
WORKER_MARKERS = ("smkit.serving.worker.model_worker", "model_service_worker")
WORKER_NAME = (
    "smkit-worker"  # the process name of smkit's model workers (smkit/serving/worker/model_worker.py)
)


def venvs(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """(smkit's, the toolkit's) interpreters: the image's or the toolkit's pins plus the frameworks.

    ``--smkit-python PATH`` uses that interpreter for smkit instead (it must hold the profiles' frameworks);
    the toolkit's venv is built only when the toolkit is measured.
    """
    names = {line.split("==")[0] for line in shapes.REQUIREMENTS}
    image = [line for line in read_requirements(IMAGE_REQUIREMENTS) if line.split("==")[0] not in names]
    if args.smkit_python == "image":
        ours = ensure_venv("models-smkit", [*image, *shapes.REQUIREMENTS])
    else:
        ours = Path(args.smkit_python)
    toolkit = None
    if "toolkit" in args.server_names:
        toolkit = ensure_venv("models-toolkit", [*TOOLKIT_PINS, *shapes.REQUIREMENTS])
    return ours, toolkit


def spec(
    server: str, model_dir: Path, work: Path, workers: int, pythons: tuple[Path, Path | None]
) -> ServerSpec:
    port = free_port(LOOPBACK, below=PORTS_BELOW)
    if server == "toolkit":
        return toolkit_spec(
            name=server,
            model_dir=model_dir,
            work_dir=work / "toolkit",
            port=port,
            workers=workers,
            python=pythons[1],
        )
    built = smkit_spec(
        name=server, python=pythons[0], args=["--model", str(model_dir)], port=port, workers=workers
    )
    cpus = available_cpus().count
    threads = {
        "smkit": None,
        "smkit-1thread": 1,
        "smkit-share": max(1, cpus // workers),
        "smkit-machine": cpus,
    }
    extra: dict[str, str] = {}
    if server == "smkit-1thread":
        extra = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    elif threads[server] is not None:
        extra = dict.fromkeys(THREAD_VARIABLES, str(threads[server]))
    return ServerSpec(name=server, argv=built.argv, port=port, env={**built.env, **extra}, cwd=built.cwd)


def handler_floor(python: Path, model_dir: Path, payload: Path, calls: int) -> dict[str, Any]:
    """CPU per call of the model's hooks alone, one thread (every pool variable set to 1)."""
    env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "1")}
    argv = [
        str(python),
        str(FLOOR_SCRIPT),
        str(model_dir),
        str(payload),
        CONTENT_TYPE,
        CONTENT_TYPE,
        str(calls),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        raise BenchError(f"handler floor of {model_dir.name} failed: {done.stderr.strip()[-1500:]}")
    import json  # noqa: PLC0415

    floor: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return floor


def worker_threads(server: ManagedServer, busy: set[int]) -> list[int]:
    """OS threads of each model worker process that worked during the level (the Python main thread
    plus every library pool; MMS keeps an idle extra worker process, left out)."""
    found = []
    for proc in server.processes():
        try:
            forked = proc.name() == WORKER_NAME  # a worker forked from the template keeps its cmdline
            if proc.pid in busy and (
                forked or any(marker in " ".join(proc.cmdline()) for marker in WORKER_MARKERS)
            ):
                found.append(proc.num_threads())
        except Exception:  # noqa: BLE001, S112 - a process that just exited is skipped
            continue
    return sorted(found)


def measure(
    server_name: str,
    model_dir: Path,
    shape_list: list[shapes.Shape],
    counts: dict[str, int],
    args: argparse.Namespace,
    pythons: tuple[Path, Path | None],
    work: Path,
) -> dict[str, Any]:
    """Start one server for one profile, run every size and level, stop it."""
    server_spec = spec(server_name, model_dir, work, args.workers, pythons)
    out: dict[str, Any] = {"loadavg_1min_before": round(os.getloadavg()[0], 2), "runs": {}}
    with running(server_spec, work / "logs") as server:
        for shape in shape_list:
            body = shape.body()
            request = Request(
                "POST", "/invocations", body, {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
            )
            first = closed_loop(server.port, request, total=2, concurrency=1, timeout_s=120)
            if first.errors:
                raise BenchError(f"{server_name} {shape.name}: {first.error_samples}\n{server.log_tail()}")
            # Warm-up: every worker past its first call (lazy imports, pools starting).
            closed_loop(server.port, request, total=4 * args.workers, concurrency=2 * args.workers)
            for level in args.levels:
                total = max(counts[shape.name], 4 * level)
                cpu_before = server.cpu_by_pid()
                result = closed_loop(server.port, request, total=total, concurrency=level, timeout_s=120)
                deltas = {pid: cpu - cpu_before.get(pid, 0.0) for pid, cpu in server.cpu_by_pid().items()}
                spent = sum(deltas.values())
                result.server_cpu_s = round(spent, 3)
                busy = {pid for pid, cpu in deltas.items() if cpu > 0.01 * spent}
                run = {**result.as_dict(), "worker_threads": worker_threads(server, busy)}
                out["runs"][f"{shape.name}@{level}"] = run
                print(
                    f"  {shape.name:16s} {server_name:14s} c={level:<3d} {result.throughput_rps:8.1f} req/s  "
                    f"p50 {result.p50_ms:8.2f} ms  p99 {result.p99_ms:8.2f} ms  "
                    f"CPU/req {1e3 * spent / total:7.2f} ms  threads {run['worker_threads']}  errors {result.errors}",
                    flush=True,
                )
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.models", description=__doc__.splitlines()[0])
    p.add_argument(
        "--profiles", default=",".join(shapes.PROFILES), help="comma list of bench/shapes.py profiles"
    )
    p.add_argument("--sizes", default=",".join(shapes.SIZES), help="comma list of payload sizes: 1KB, 2MB")
    p.add_argument(
        "--servers", default="smkit,smkit-1thread,toolkit", help=f"comma list of {', '.join(SERVERS)}"
    )
    p.add_argument("--concurrency", default="4,16", help="comma list of concurrency levels")
    p.add_argument("--workers", type=int, default=2, help="worker processes for every server")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    p.add_argument(
        "--seconds", type=float, default=4.0, help="aimed duration of each level (sets request counts)"
    )
    p.add_argument("--hogs", type=int, default=0, help="busy loops running in other sessions meanwhile")
    p.add_argument("--nice", type=int, default=0, help="nice value for client and servers (e.g. -10 as root)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "models.json", help="JSON result path")
    p.add_argument(
        "--smkit-python",
        default="image",
        help="interpreter for smkit: 'image' (venv of the image's requirements plus the frameworks) or a path",
    )
    p.add_argument("--section", default="models", help="BENCHMARKS.md section to rewrite")
    p.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    args = p.parse_args(argv)
    args.levels = [int(x) for x in args.concurrency.split(",") if x]
    args.profile_names = [x for x in args.profiles.split(",") if x]
    args.size_names = [x for x in args.sizes.split(",") if x]
    args.server_names = [x for x in args.servers.split(",") if x]
    for given, known, flag in (
        (args.profile_names, shapes.PROFILES, "--profiles"),
        (args.size_names, tuple(shapes.SIZES), "--sizes"),
        (args.server_names, SERVERS, "--servers"),
    ):
        unknown = [x for x in given if x not in known]
        if unknown:
            p.error(f"{flag} {','.join(unknown)}: unknown; choose from {', '.join(known)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    apply_niceness(args.nice)
    exit_on_sigterm()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    machine = {**machine_facts(), "available_cpus": available_cpus().describe()}
    work = Path(tempfile.mkdtemp(prefix="smkit-bench-models-"))
    rounds: dict[str, dict[str, list[dict[str, Any]]]] = {}
    floors: dict[str, dict[str, Any]] = {}
    try:
        pythons = venvs(args)
        dirs = {
            name: shapes.build_model(name, pythons[0], work / "models" / name) for name in args.profile_names
        }
        by_profile = {
            name: [shapes.Shape(name, size) for size in args.size_names] for name in args.profile_names
        }
        counts: dict[str, int] = {}
        for name, shape_list in by_profile.items():
            for shape in shape_list:
                payload = work / "payloads" / f"{name}-{shape.size}.bin"
                payload.parent.mkdir(parents=True, exist_ok=True)
                payload.write_bytes(shape.body())
                floors[shape.name] = handler_floor(
                    pythons[0], dirs[name], payload, 20 if shape.rows > 100 else 500
                )
                limit = machine["cpus"] * 1e6 / floors[shape.name]["cpu_us_per_call"]
                floors[shape.name]["cpu_limit_rps"] = round(limit, 1)
                counts[shape.name] = int(min(20000, max(8, 0.5 * limit * args.seconds)))
                print(
                    f"{shape.name}: hooks alone {floors[shape.name]['cpu_us_per_call']} us CPU/call, CPU limit {limit:.1f} req/s"
                )
        with cpu_hogs(args.hogs):
            for round_no in range(1, args.rounds + 1):
                print(f"round {round_no}/{args.rounds}", flush=True)
                for name, shape_list in by_profile.items():
                    for position, server in enumerate(rotated(args.server_names, round_no - 1)):
                        run = measure(server, dirs[name], shape_list, counts, args, pythons, work)
                        run["position"] = position
                        rounds.setdefault(name, {}).setdefault(server, []).append(run)
    except BenchError as exc:
        print(f"bench.models: {exc}", file=sys.stderr)
        print(f"logs kept in {work}", file=sys.stderr)
        return 1
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    summary = {
        name: {server: aggregate(runs) for server, runs in by_server.items()}
        for name, by_server in rounds.items()
    }
    result = {
        "generated_at": started,
        "machine": machine,
        "config": {
            "profiles": args.profile_names,
            "sizes": {size: shapes.SIZES[size] * shapes.ROW_BYTES for size in args.size_names},
            "servers": args.server_names,
            "concurrency": args.levels,
            "workers": args.workers,
            "rounds": args.rounds,
            "hogs": args.hogs,
            "requests_per_level": counts,
        },
        "versions": {
            "smkit": package_versions(pythons[0]),
            "toolkit": {**package_versions(pythons[1]), "java": java_version()} if pythons[1] else None,
            "frameworks": list(shapes.REQUIREMENTS),
            "reference": list(TOOLKIT_PINS),
        },
        "handler_floor": floors,
        "profiles": summary,
        "raw_rounds": rounds,
    }
    result["targets"] = targets(summary, rounds)
    write_json(args.out, result)
    table = markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, args.section, table)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
