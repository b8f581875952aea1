"""``smkit top`` in a real terminal (a pty) against a running ``smkit serve``, and its arithmetic."""

from __future__ import annotations

import json
import math
import os
import pty
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving_harness import REPO, Server, start_server
from serving_models import write_model

from smkit.top import parse, quantile, rows

MODEL = """
import json


def model_fn(model_dir):
    return "model"


def input_fn(body, content_type):
    return json.loads(body)


def predict_fn(data, model):
    if data.get("fail"):
        raise RuntimeError("failed on purpose")
    return data
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("top")
    server = start_server(root, ["serve", "--model", str(write_model(root, "m", MODEL))], module="smkit.cli")
    yield server
    server.stop()


def _in_a_terminal(argv: list[str]) -> str:
    """Run ``argv`` with a pty as its terminal; everything it wrote, without escape sequences."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "260", "LINES": "60"}
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=REPO)
    os.close(follower)
    out = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0, out.decode(errors="replace")
    return ANSI.sub("", out.decode(errors="replace"))


def test_top_shows_rates_errors_phases_and_workers_in_a_terminal(served: Server) -> None:
    stop = threading.Event()

    def traffic() -> None:  # requests keep coming while top reads: every interval sees some
        while not stop.is_set():
            served.invoke(json.dumps({"x": 1}), "application/json")
            served.invoke(json.dumps({"fail": True}), "application/json")

    sender = threading.Thread(target=traffic)
    sender.start()
    try:
        shown = _in_a_terminal(
            [
                sys.executable,
                "-m",
                "smkit.cli",
                "top",
                str(served.port),
                "--interval",
                "0.5",
                "--iterations",
                "3",
            ]
        )
    finally:
        stop.set()
        sender.join()
    for heading in ("req/s", "4xx", "5xx", "queue_wait", "input_fn", "predict_fn", "output_fn", "total"):
        assert heading in shown, shown
    rates = [float(m.group(1)) for m in re.finditer(r"│ -\s+│ -\s+│\s+([0-9.]+) │", shown)]
    assert rates and max(rates) > 0, shown
    assert re.search(r"│ -\s+│ 0\s+│ \d+\s+│ \d+\s+│ 2\s+│", shown), shown  # 2 workers ready


def test_top_refuses_a_target_it_cannot_read() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "top", "not a port"], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 2
    assert (
        "'not a port' is neither a URL nor a port; give e.g. http://127.0.0.1:8080/metrics or 8080"
        in done.stderr
    )


def test_quantiles_are_estimated_as_prometheus_does() -> None:
    buckets = {0.1: 50.0, 0.5: 90.0, 1.0: 100.0, math.inf: 100.0}
    assert quantile(0.5, buckets) == pytest.approx(0.1)
    assert quantile(0.99, buckets) == pytest.approx(0.95)
    assert quantile(0.5, {0.1: 0.0, math.inf: 0.0}) is None
    assert quantile(0.99, {0.1: 1.0, math.inf: 2.0}) == 0.1  # in +Inf: the largest finite bound


def test_rows_compare_two_readings(tmp_path: Path) -> None:
    def text(ok: int, failed: int, fast: int, slow: int) -> str:
        return (
            "# TYPE smkit_requests counter\n"
            f'smkit_requests_total{{route="/invocations",status="200",model="a"}} {ok}\n'
            f'smkit_requests_total{{route="/invocations",status="500",model="a"}} {failed}\n'
            "# TYPE smkit_request_phase_seconds histogram\n"
            f'smkit_request_phase_seconds_bucket{{phase="predict_fn",model="a",le="0.01"}} {fast}\n'
            f'smkit_request_phase_seconds_bucket{{phase="predict_fn",model="a",le="1.0"}} {fast + slow}\n'
            f'smkit_request_phase_seconds_bucket{{phase="predict_fn",model="a",le="+Inf"}} {fast + slow}\n'
            f'smkit_request_phase_seconds_count{{phase="predict_fn",model="a"}} {fast + slow}\n'
            f'smkit_request_phase_seconds_sum{{phase="predict_fn",model="a"}} 1.0\n'
        )

    found = rows(parse(text(10, 1, 10, 0), 100.0), parse(text(30, 3, 10, 20), 102.0))
    assert len(found) == 1
    row = found[0]
    assert (row.model, row.rps, row.errors_5xx) == ("a", 11.0, 2.0)
    assert row.p50["predict_fn"] == pytest.approx(0.505)  # only the 20 slow ones came in between
