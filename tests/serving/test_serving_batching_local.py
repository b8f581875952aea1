"""Dynamic batching behind the local endpoint: ``batching`` in the deployment config reaches the container as
``SAGEMAKER_TS_BATCH_SIZE`` / ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (as on SageMaker), and concurrent
InvokeEndpoint calls from unmodified boto3 are served by one ``predict_batch_fn`` call."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from serving_models import write_model

from smkit.local import LocalEndpoint

BATCH = 3
WAIT_S = 60.0

MODEL = """
import json


def model_fn(model_dir):
    return None


def input_fn(data, content_type):
    return json.loads(data)


def predict_batch_fn(inputs, model):
    return [{"value": value, "batch": len(inputs)} for value in inputs]


def output_fn(prediction, accept):
    return json.dumps(prediction), "application/json"
"""

CONFIG = """
name: batching-local
image: {{source: build, context: ., dockerfile: Dockerfile}}
model:
  network_isolation: false
  containers:
    - name: main
      model_data: {{source: prefix, path: batched}}
      environment: {{SAGEMAKER_MODEL_SERVER_WORKERS: "1"}}
      batching: {{max_batch_size: {batch}, max_batch_delay_ms: 30000}}
endpoint:
  type: realtime
  variants:
    - {{name: main, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}}
"""


def test_concurrent_invocations_share_one_batch_behind_the_local_endpoint(tmp_path: Path) -> None:
    write_model(tmp_path, "batched", MODEL)
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\n")
    config = tmp_path / "endpoint.yaml"
    config.write_text(CONFIG.format(batch=BATCH))
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path / "logs", model_envs=False) as endpoint:
        runtime = endpoint.client()

        def invoke(value: int) -> dict[str, int]:
            answer = runtime.invoke_endpoint(
                EndpointName=endpoint.name, ContentType="application/json", Body=json.dumps(value)
            )
            result: dict[str, int] = json.loads(answer["Body"].read())
            return result

        with ThreadPoolExecutor(BATCH) as pool:
            answers = [f.result(timeout=WAIT_S) for f in [pool.submit(invoke, n) for n in range(BATCH)]]
    assert answers == [{"value": n, "batch": BATCH} for n in range(BATCH)]
