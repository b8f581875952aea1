"""Workers forked from the worker template (smkit/serving/worker/template.py): what a worker's model_fn finds.

The template must hand each worker a process in which nothing but the runtime has been imported and no
thread has run, and the worker must be the front end's own child (so it is waited for and replaced as
before). The frameworks' own fork-safety journey (OpenMP and BLAS pools started in model_fn, then requests
from two workers) is tests/frameworks/test_framework_models.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from serving_harness import start_server
from serving_models import write_model
from waiting import wait_until

from smkit.serving.wire.messages import TEMPLATE_NAME

# model_fn records what the process holds before the model's code runs; transform_fn reports it.
REPORTER = """
import json, os, sys, threading

LOADED = {
    "libraries": sorted(m for m in ("numpy", "torch", "sklearn", "xgboost", "lightgbm") if m in sys.modules),
    "threads": threading.active_count(),
    "name": open("/proc/self/comm").read().strip(),
    "parent": os.getppid(),
}


def model_fn(model_dir):
    return LOADED


def transform_fn(model, data, content_type, accept):
    return json.dumps({**model, "pid": os.getpid()}), "application/json"
"""


def test_a_forked_worker_starts_clean_and_is_the_front_ends_child(tmp_path: Path) -> None:
    model = write_model(tmp_path, "model", REPORTER)
    server = start_server(
        tmp_path, ["--model", str(model), "--workers", "2"], env={"SMKIT_ACCESS_LOG": "false"}
    )
    try:
        seen = server.invoke("x", "text/plain").json()
        assert seen["libraries"] == [] and seen["threads"] == 1
        assert seen["name"] == "smkit-worker" and seen["parent"] == server.proc.pid
        first = set(server.children())
        assert len(first) == 2 and seen["pid"] in first
        names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in _all_children(server.proc.pid)}
        assert names == {TEMPLATE_NAME, "smkit-worker"}
        # A worker that dies is replaced from the same template, as the front end's child again.
        victim = seen["pid"]
        os.kill(victim, signal.SIGKILL)
        replaced = wait_until(
            lambda: len(now := set(server.children())) == 2 and victim not in now and now,
            timeout=server.answer_bound(loading=True),
            what="a replacement worker",
        )
        answers = [server.invoke("x", "text/plain").json() for _ in range(8)]
        assert {a["pid"] for a in answers} <= replaced
        assert {(a["parent"], a["name"], a["threads"]) for a in answers} == {
            (server.proc.pid, "smkit-worker", 1)
        }
        assert "starting a replacement" in server.log()
    finally:
        assert server.stop() == 0


def _all_children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.extend(int(child) for child in task.read_text().split())
    return found


# Run apart from pytest: starting a template makes the process the reaper of its orphaned descendants.
NO_TEMPLATE = """
import logging, os
from smkit.serving.front.forking import start_template

logging.basicConfig(level=logging.INFO, format="%(message)s")
before = len(os.listdir("/proc/self/fd"))
print(start_template("/nonexistent/python3", {}), len(os.listdir("/proc/self/fd")) - before)
"""


def test_a_template_that_cannot_start_leaves_the_workers_to_new_interpreters_and_says_so_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_TEMPLATE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["None", "0"]  # no template, no descriptor left open
    said = [line for line in done.stderr.splitlines() if "workers start as new interpreters" in line]
    assert said == [
        "workers start as new interpreters: [Errno 2] No such file or directory: '/nonexistent/python3'"
    ]
