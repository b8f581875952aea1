"""Dynamic batching: 1-row requests to vectorized models, smkit batched vs unbatched vs toolkit + MMS.

    python -m bench.batching --rounds 3 --nice -10     # writes bench/results/batching.json + BENCHMARKS.md
    python -m bench.batching --profiles sklearn_rf --rounds 1 --requests 100 --no-markdown   # smoke

Models (bench/shapes.py, each built by its own library in the benchmark venvs): ``sklearn_rf`` (a
100-tree RandomForest), ``xgboost`` (a booster, through a DMatrix) and ``torch_mlp`` (a 3-layer MLP). Every
request is one row of 10 float64 features (80 bytes of ``application/octet-stream``). The model directory
is the same for every server: bench/shapes.py's hooks plus a ``predict_batch_fn`` that stacks the rows,
calls ``predict_fn`` once and splits the answer (the toolkit and unbatched smkit never call it).

Servers, 2 workers each:

- ``batched``: smkit with ``SAGEMAKER_TS_BATCH_SIZE`` / ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (``--batch-size``,
  default 16: the 32 clients of the top level over 2 workers, as docs/handler-semantics.md advises;
  ``--max-delay-ms``, default 2);
- ``unbatched``: smkit without them (what every model gets by default);
- ``toolkit``: sagemaker-inference 1.10.1 + Multi Model Server 1.1.11 (bench/reference.py; Java).

Rounds are interleaved (every server of a profile, then the next profile, then the next round; each round
starts with the next server) and medians reported. Goals: batched >= 3x unbatched req/s at c=32 with a p99
no worse; at c=1 a p50 within the max delay + 1 ms of unbatched.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
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
from bench.load import Request, closed_loop
from bench.models import venvs
from bench.reference import toolkit_spec
from smkit.cpus import available_cpus
from smkit.process import free_port

PROFILES = ("sklearn_rf", "xgboost", "torch_mlp")
SERVERS = ("batched", "unbatched", "toolkit")
CONTENT_TYPE = "application/octet-stream"
BATCH_HOOK = """

def predict_batch_fn(inputs, model):
    counts = [len(rows) for rows in inputs]
    answer = predict_fn(np.concatenate(inputs), model)
    return np.split(answer, np.cumsum(counts)[:-1])
"""
NUMBERS = ("throughput_rps", "p50_ms", "p99_ms", "mean_ms")


def build(profile: str, python: Path, dest: Path) -> Path:
    """bench/shapes.py's model for ``profile`` with the batched hook added."""
    model_dir = shapes.build_model(profile, python, dest)
    code = model_dir / "code" / "inference.py"
    code.write_text(code.read_text() + textwrap.dedent(BATCH_HOOK))
    return model_dir


def spec(server: str, model_dir: Path, work: Path, args: argparse.Namespace, pythons: Any) -> ServerSpec:
    port = free_port(LOOPBACK, below=PORTS_BELOW)
    if server == "toolkit":
        return toolkit_spec(
            name=server, model_dir=model_dir, work_dir=work / "toolkit", port=port, workers=args.workers,
            python=pythons[1],
        )  # fmt: skip
    built = smkit_spec(
        name=server, python=pythons[0], args=["--model", str(model_dir)], port=port, workers=args.workers
    )
    env = {**built.env, "SMKIT_ACCESS_LOG": "false"}
    if server == "batched":
        env["SAGEMAKER_TS_BATCH_SIZE"] = str(args.batch_size)
        env["SAGEMAKER_TS_MAX_BATCH_DELAY"] = str(args.max_delay_ms)
    return ServerSpec(name=server, argv=built.argv, port=port, env=env, cwd=built.cwd)


def measure(
    server: str, model_dir: Path, work: Path, args: argparse.Namespace, pythons: Any
) -> dict[str, Any]:
    """Start one server, run every concurrency level with 1-row requests, stop it."""
    body = shapes.Shape("x", "1KB").body()[: shapes.ROW_BYTES]  # one row
    request = Request("POST", "/invocations", body, {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    out: dict[str, Any] = {"loadavg_1min_before": round(os.getloadavg()[0], 2), "runs": {}}
    with running(spec(server, model_dir, work, args, pythons), work / "logs") as running_server:
        port = running_server.port
        first = closed_loop(port, request, total=2, concurrency=1, timeout_s=120)
        if first.errors:
            raise BenchError(f"{server} {model_dir.name}: {first.error_samples}\n{running_server.log_tail()}")
        closed_loop(port, request, total=8 * args.workers, concurrency=4 * args.workers)  # warm-up
        for level in args.levels:
            total = max(args.requests, 8 * level)
            result = closed_loop(port, request, total=total, concurrency=level, timeout_s=120)
            out["runs"][f"c={level}"] = result.as_dict()
            print(
                f"  {model_dir.name:11s} {server:9s} c={level:<3d} {result.throughput_rps:8.1f} req/s  "
                f"p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms  errors {result.errors}",
                flush=True,
            )
    return out


def summarize(rounds: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Median over rounds of every number, per profile, server and level."""
    out: dict[str, Any] = {}
    for profile, servers in rounds.items():
        out[profile] = {}
        for server, runs in servers.items():
            out[profile][server] = {
                level: {
                    **{n: round(statistics.median(r["runs"][level][n] for r in runs), 3) for n in NUMBERS},
                    "errors": sum(r["runs"][level]["errors"] for r in runs),
                    "requests": runs[0]["runs"][level]["requests"],
                }
                for level in runs[0]["runs"]
            }
    return out


def goals(summary: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Batched vs unbatched: >= 3x req/s and a p99 no worse at c=32; at c=1 a p50 within delay + 1 ms."""
    out: dict[str, Any] = {}
    for profile, servers in summary.items():
        batched, unbatched = servers.get("batched"), servers.get("unbatched")
        if batched is None or unbatched is None:
            continue
        top = f"c={max(args.levels)}"
        if top in batched:
            ratio = batched[top]["throughput_rps"] / unbatched[top]["throughput_rps"]
            out[f"{profile} {top} req/s batched / unbatched"] = {
                "value": round(ratio, 2), "target": ">= 3.0", "met": ratio >= 3.0,
            }  # fmt: skip
            p99 = batched[top]["p99_ms"] / unbatched[top]["p99_ms"]
            out[f"{profile} {top} p99 batched / unbatched"] = {
                "value": round(p99, 2), "target": "<= 1.0", "met": p99 <= 1.0,
            }  # fmt: skip
        if "c=1" in batched:
            extra = batched["c=1"]["p50_ms"] - unbatched["c=1"]["p50_ms"]
            bound = args.max_delay_ms + 1.0
            out[f"{profile} c=1 p50 batched - unbatched (ms)"] = {
                "value": round(extra, 2), "target": f"<= {bound:g}", "met": extra <= bound,
            }  # fmt: skip
    return out


def markdown(result: dict[str, Any]) -> str:
    machine, config = result["machine"], result["config"]
    lines = [
        f"Measured {result['generated_at']} on {machine['available_cpus']} shared by client and servers "
        f"(load average {machine['loadavg_at_start']} at start, {machine['loadavg_at_end']} at end; nice "
        f"{machine['nice']}); {config['workers']} workers each, {config['rounds']} interleaved round(s), median "
        f"shown; 1-row requests (80 bytes); batched: SAGEMAKER_TS_BATCH_SIZE={config['batch_size']}, "
        f"SAGEMAKER_TS_MAX_BATCH_DELAY={config['max_delay_ms']} ms.",
        "",
        "| model | concurrency | server | req/s | p50 (ms) | p99 (ms) | errors |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for profile, servers in result["summary"].items():
        for level in next(iter(servers.values())):
            for server, runs in servers.items():
                r = runs[level]
                lines.append(
                    f"| {profile} | {level[2:]} | {server} | {r['throughput_rps']:.0f} | {r['p50_ms']:.2f} | "
                    f"{r['p99_ms']:.2f} | {r['errors']} |"
                )
    lines += ["", "| goal | value | target | met |", "| --- | ---: | --- | --- |"]
    for name, goal in result["goals"].items():
        lines.append(f"| {name} | {goal['value']} | {goal['target']} | {'yes' if goal['met'] else 'no'} |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.batching", description=__doc__.splitlines()[0])
    p.add_argument("--profiles", default=",".join(PROFILES), help=f"comma list of {', '.join(PROFILES)}")
    p.add_argument("--servers", default=",".join(SERVERS), help=f"comma list of {', '.join(SERVERS)}")
    p.add_argument("--concurrency", default="1,8,32", help="comma list of concurrency levels")
    p.add_argument("--workers", type=int, default=2, help="worker processes for every server")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    p.add_argument("--requests", type=int, default=600, help="requests per level (at least 8 x concurrency)")
    p.add_argument("--batch-size", type=int, default=16, help="SAGEMAKER_TS_BATCH_SIZE of the batched server")
    p.add_argument("--max-delay-ms", type=int, default=2, help="SAGEMAKER_TS_MAX_BATCH_DELAY (ms)")
    p.add_argument("--nice", type=int, default=0, help="nice value for client and servers (e.g. -10 as root)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "batching.json", help="JSON result path")
    p.add_argument(
        "--smkit-python", default="image", help="'image' (the benchmark venv) or an interpreter path"
    )
    p.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    args = p.parse_args(argv)
    args.levels = [int(x) for x in args.concurrency.split(",") if x]
    args.profile_names = [x for x in args.profiles.split(",") if x]
    args.server_names = [x for x in args.servers.split(",") if x]
    for given, known, flag in (
        (args.profile_names, PROFILES, "--profiles"),
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
    rounds: dict[str, dict[str, list[dict[str, Any]]]] = {
        p: {s: [] for s in args.server_names} for p in args.profile_names
    }
    with tempfile.TemporaryDirectory(prefix="smkit-bench-batching-") as tmp:
        work = Path(tmp)
        try:
            pythons = venvs(
                argparse.Namespace(smkit_python=args.smkit_python, server_names=args.server_names)
            )
            dirs = {name: build(name, pythons[0], work / "models" / name) for name in args.profile_names}
            for n in range(args.rounds):
                print(f"round {n + 1} of {args.rounds}", flush=True)
                for profile in args.profile_names:
                    for server in rotated(args.server_names, n):
                        rounds[profile][server].append(measure(server, dirs[profile], work, args, pythons))
        except BenchError as exc:
            print(f"bench.batching: {exc}", file=sys.stderr)
            return 1
    summary = summarize(rounds)
    machine["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result = {
        "generated_at": started,
        "machine": machine,
        "config": {
            "workers": args.workers,
            "rounds": args.rounds,
            "requests": args.requests,
            "levels": args.levels,
            "batch_size": args.batch_size,
            "max_delay_ms": args.max_delay_ms,
        },  # fmt: skip
        "summary": summary,
        "goals": goals(summary, args),
        "rounds": rounds,
    }
    write_json(args.out, result)
    table = markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "batching", table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
