"""``smkit local-endpoint`` as a process: serves boto3, and SIGTERM ends it and every container it started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading

import boto3
from waiting import wait_until

from smkit.cpus import available_cpus


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_cli_serves_and_stops_every_container_on_sigterm(repo, sample):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "smkit.cli",
            "local-endpoint",
            "--config",
            "config/serverless.yaml",
            "--port",
            "0",
        ],
        cwd=repo,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = []
        assert proc.stderr is not None
        for line in proc.stderr:
            banner.append(line)
            if "Ctrl-C" in line:
                break
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining the containers' logs
        text = "".join(banner)
        url = re.search(r"on (http://127\.0\.0\.1:\d+)", text).group(1)
        pids = [int(p) for p in re.findall(r"pid (\d+)", text)]
        # Serverless has no instance type: one worker per CPU this machine gives the process
        # (docs/resolved-deployment.md), and the banner says how many.
        cpus = available_cpus().count
        workers = f"{cpus} model worker{'s' if cpus != 1 else ''}"
        assert f"main-tabular: {workers} (one per local CPU (serverless: no instance type))" in text, text
        assert pids and all(_alive(p) for p in pids)
        runtime = boto3.client(
            "sagemaker-runtime",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        )
        resp = runtime.invoke_endpoint(
            EndpointName="tabular-serverless", ContentType="text/csv", Body=sample("tabular", "request.csv")
        )
        assert resp["InvokedProductionVariant"] == "main"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        wait_until(
            lambda: not any(_alive(p) for p in pids),
            timeout=5,
            what="no serving process to outlive the gateway",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
