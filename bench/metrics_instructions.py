"""Instructions per request of the serving runtime with ``/metrics`` on and off, counted by callgrind.

    python -m bench.metrics_instructions      # writes bench/results/metrics_instructions.json + BENCHMARKS.md

A count, not a time: the same code gives the same figure on a busy or a quiet machine, where CPU time per
request moves by a third between rounds (``BENCHMARKS.md``, "Metrics on vs off"). The front end and its one
model worker (the example model, ``build/model.tar.gz``) both run under valgrind's callgrind; instrumentation
is switched on after a warm-up and off after the measured requests, so only those are counted. Needs
valgrind (``callgrind_control``).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCHMARKS_MD, REPO_ROOT, RESULTS_DIR, machine_facts, replace_section, write_json
from bench.example_model import DEFAULT_MODEL, DEFAULT_PAYLOAD, extract_model, load_payload
from smkit.process import free_port


def _request(conn: http.client.HTTPConnection, body: bytes) -> None:
    conn.request("POST", "/invocations", body, {"Content-Type": "text/csv", "Accept": "application/json"})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"invocation answered {response.status}")


def _tree(pid: int) -> list[int]:
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            pids += _tree(int(child))
    return pids


def count(model_dir: Path, body: bytes, requests: int, metrics: bool, work: Path) -> dict[str, float]:
    """Instructions per request of the front end and of its worker."""
    valgrind, control = shutil.which("valgrind"), shutil.which("callgrind_control")
    assert valgrind is not None and control is not None
    out = work / ("on" if metrics else "off")
    out.mkdir()
    wrapper = work / f"worker-python-{'on' if metrics else 'off'}"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec {valgrind} --tool=callgrind --instr-atstart=no --callgrind-out-file={out}/worker.%p "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "SMKIT_METRICS": "true" if metrics else "false",
        "SMKIT_WORKER_PYTHON": str(wrapper),
        "SMKIT_ACCESS_LOG": "false",
    }
    argv = [valgrind, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/front.%p"]
    argv += [sys.executable, "-m", "smkit.serving", "--model", str(model_dir), "--port", str(port)]
    argv += ["--host", "127.0.0.1", "--workers", "1"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                _request(conn, body)
                break
            except (OSError, SystemExit):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the server under valgrind did not start") from None
                time.sleep(0.5)
        for _ in range(100):  # warm-up
            _request(conn, body)
        pids = [str(p) for p in _tree(proc.pid)]
        subprocess.run([control, "--instr=on", *pids], check=True, capture_output=True)
        for _ in range(requests):
            _request(conn, body)
        subprocess.run([control, "--instr=off", *pids], check=True, capture_output=True)
        subprocess.run([control, "--dump", *pids], check=True, capture_output=True)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    totals: dict[str, int] = {"front": 0, "worker": 0}
    for dump in out.iterdir():
        role = "front" if dump.name.startswith("front") else "worker"
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("totals:"):
                totals[role] = max(totals[role], int(line.split()[1]))
    return {role: total / requests for role, total in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_instructions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "metrics_instructions.json")
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.metrics_instructions: valgrind is not installed", file=sys.stderr)
        return 1
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-metrics-callgrind-") as tmp:
        work = Path(tmp)
        model_dir = extract_model(args.model, work / "model")
        body = load_payload(args.payload, 10)
        off = count(model_dir, body, args.requests, False, work)
        on = count(model_dir, body, args.requests, True, work)
    result: dict[str, Any] = {
        "generated_at": started,
        "machine": machine_facts(),
        "requests": args.requests,
        "off": off,
        "on": on,
        "front_ratio": on["front"] / off["front"],
        "total_ratio": (on["front"] + on["worker"]) / (off["front"] + off["worker"]),
    }
    write_json(args.out, result)
    table = "\n".join(
        [
            f"Counted {started} with callgrind, {args.requests} requests of the example model (10 CSV rows), one "
            "worker, access log off.",
            "",
            "| /metrics | front end instructions/request | worker instructions/request | total |",
            "| --- | ---: | ---: | ---: |",
            f"| off | {off['front']:,.0f} | {off['worker']:,.0f} | {off['front'] + off['worker']:,.0f} |",
            f"| on | {on['front']:,.0f} | {on['worker']:,.0f} | {on['front'] + on['worker']:,.0f} |",
            f"| on / off | {result['front_ratio']:.3f} | {on['worker'] / off['worker']:.3f} | "
            f"{result['total_ratio']:.3f} |",
        ]
    )
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "metrics-instructions", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
