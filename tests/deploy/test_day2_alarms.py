"""The stack's 5XX alarm seen to fire: a config deployed into the emulator with the real CDK CLI, its
endpoint run locally under the deployed name and publishing SageMaker's invocation metrics to the emulated
CloudWatch (smkit/local/cloudwatch.py), and the emulator's alarm evaluator (smkit/emulator/alarms.py)
setting the alarm's state from those datapoints.

Named test_day2_* so it runs before test_deploy.py's final destroy-everything test; it removes what it adds.
"""

from __future__ import annotations

import tarfile
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from deploy_support import synth_assembly

from smkit.emulator import CdkCli, CdkError, MotoServer, deployed_stacks, ensure_bootstrapped
from smkit.emulator.alarms import evaluate_alarms
from smkit.emulator.deploy import with_server_traceback
from smkit.local import LocalEndpoint

HANDLER = """
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    if data == b"fail":
        raise RuntimeError("the model failed")
    return data, content_type
"""
# One variant, alarms evaluated over one minute so that a test sees them change.
CONFIG = """name: errors-alarm
environment: dev
image:
  source: build
model:
  containers:
    - name: flaky
      model_data:
        source: archive
        path: model.tar.gz
endpoint:
  type: realtime
  variants:
    - name: only
      instance_type: ml.m5.large
monitoring:
  alarms: true
  error_5xx_percent: 50
  evaluation_periods: 1
"""
DEADLINE_S = 60.0


def _config(tmp_path: Path) -> Path:
    code = tmp_path / "model" / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text(HANDLER)
    with tarfile.open(tmp_path / "model.tar.gz", "w:gz") as archive:
        archive.add(code, arcname="code")
    (tmp_path / "errors-alarm.yaml").write_text(CONFIG)
    return tmp_path / "errors-alarm.yaml"


def _sum(cloudwatch: object, metric: str, endpoint: str, unit: str) -> tuple[float, str]:
    end = time.time() + 60
    points = cloudwatch.get_metric_statistics(  # type: ignore[attr-defined]
        Namespace="AWS/SageMaker",
        MetricName=metric,
        Dimensions=[{"Name": "EndpointName", "Value": endpoint}, {"Name": "VariantName", "Value": "only"}],
        StartTime=end - 3600,
        EndTime=end,
        Period=3600,
        Statistics=["Sum"],
    )["Datapoints"]
    return sum(p["Sum"] for p in points), {p["Unit"] for p in points}.pop() if points else unit


def test_5xx_errors_of_the_local_endpoint_put_the_stacks_5xx_alarm_in_alarm(
    emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    config = _config(tmp_path)
    ensure_bootstrapped(emulator, cdk, tmp_path / "bootstrap")
    assembly = synth_assembly([config], tmp_path / "cdk.out")
    try:
        cdk.deploy_assembly(assembly=assembly.path)
        cloudwatch = emulator.client("cloudwatch")
        [serving] = [s for s in deployed_stacks(emulator, assembly.path) if s.outputs.get("EndpointName")]
        endpoint_name = serving.outputs["EndpointName"]
        alarms = cloudwatch.describe_alarms(AlarmNames=serving.physical_ids("AWS::CloudWatch::Alarm"))
        [alarm_5xx] = [
            a["AlarmName"]
            for a in alarms["MetricAlarms"]
            if not a.get("AlarmDescription", "").startswith("Rollback")  # the new fleet's: by its config
            and any(
                m.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "Invocation5XXErrors"
                for m in a.get("Metrics", [])
            )
        ]
        # No traffic yet: missing data is not breaching, so the alarm settles in OK.
        [first] = evaluate_alarms(cloudwatch, names=[alarm_5xx])
        assert first.state == "OK", first

        with LocalEndpoint(
            config,
            name=endpoint_name,
            model_envs=False,
            cloudwatch_endpoint_url=emulator.endpoint_url,
            region=emulator.region,
        ) as endpoint:
            runtime = endpoint.client()
            assert runtime.invoke_endpoint(EndpointName=endpoint_name, Body=b"ok")["Body"].read() == b"ok"
            for _ in range(3):
                with pytest.raises(ClientError) as info:
                    runtime.invoke_endpoint(EndpointName=endpoint_name, Body=b"fail")
                assert info.value.response["Error"]["Code"] == "ModelError"
                assert info.value.response["OriginalStatusCode"] == 500
            deadline = time.monotonic() + DEADLINE_S
            while True:
                [evaluation] = evaluate_alarms(cloudwatch, names=[alarm_5xx])
                if evaluation.state == "ALARM" or time.monotonic() > deadline:
                    break
                time.sleep(0.5)  # polling the emulator until the background flush has landed
        assert evaluation.state == "ALARM", evaluation
        assert evaluation.values[-1] == pytest.approx(75.0)  # 3 of 4 requests, in percent
        assert _sum(cloudwatch, "Invocations", endpoint_name, "Count") == (4.0, "Count")
        assert _sum(cloudwatch, "Invocation5XXErrors", endpoint_name, "Count") == (3.0, "Count")
        assert _sum(cloudwatch, "Invocation4XXErrors", endpoint_name, "Count") == (0.0, "Count")
        latency, unit = _sum(cloudwatch, "ModelLatency", endpoint_name, "Microseconds")
        assert latency > 0 and unit == "Microseconds"
        assert _sum(cloudwatch, "OverheadLatency", endpoint_name, "Microseconds")[1] == "Microseconds"
        reason = cloudwatch.describe_alarms(AlarmNames=[alarm_5xx])["MetricAlarms"][0]["StateReason"]
        assert "Evaluated by the emulator" in reason
    except CdkError as exc:
        pytest.fail(with_server_traceback(str(exc), emulator))
    finally:
        cdk.destroy(assembly=assembly.path)
