"""Shadow variant locally (config/realtime-shadow.yaml with a recognisable candidate model): the shadow gets a
copy of the sampled requests, its answers are captured under its own variant name and never returned."""

from __future__ import annotations

import json

import pytest
import yaml

from smkit.config import parse_config
from smkit.local import LocalEndpoint
from smkit.packaging import build_archive

CANDIDATE = """
import json


def model_fn(model_dir):
    return "candidate"


def transform_fn(model, data, content_type, accept):
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    rows = len(text.strip().splitlines())
    return json.dumps({"model": model, "rows": rows}), "application/json"
"""


@pytest.fixture(scope="module")
def endpoint(repo, tmp_path_factory):
    work = tmp_path_factory.mktemp("candidate")
    (work / "code").mkdir()
    (work / "code" / "inference.py").write_text(CANDIDATE)
    (work / "code" / "requirements.txt").write_text("")
    (work / "artifacts").mkdir()
    build_archive(work / "code", work / "artifacts", work / "candidate.tar.gz")
    data = yaml.safe_load((repo / "config" / "realtime-shadow.yaml").read_text())
    data["model"]["containers"][1]["model_data"]["path"] = str(work / "candidate.tar.gz")
    config = parse_config(data, source="realtime-shadow with a test candidate", base_dir=repo / "config")
    with LocalEndpoint(config, root=repo, seed=3, data_capture_dir=tmp_path_factory.mktemp("capture")) as ep:
        yield ep


def test_callers_get_production_answers_and_the_shadow_gets_the_sampled_copies_captured(endpoint, sample):
    runtime = endpoint.client()
    shadows = endpoint.runtime.shadows
    shadow = shadows.shadow("shadow")
    production = endpoint.runtime.variant("production")
    capture = endpoint.runtime.capture
    before = (shadow.answered, shadow.failed, production.invocations, capture.captured)
    for _ in range(40):
        answer = runtime.invoke_endpoint(
            EndpointName=endpoint.name,
            ContentType="text/csv",
            Accept="application/json",
            Body=sample("tabular", "request.csv"),
        )
        assert answer["InvokedProductionVariant"] == "production"
        assert "predictions" in json.loads(answer["Body"].read())  # never the candidate's answer
    endpoint.run(shadows.join(), 60)
    answered = shadow.answered - before[0]
    # 50% sampling with a fixed seed: some but not all of the 40 requests were copied, none failed.
    assert 5 <= answered <= 35 and shadow.failed == before[1]
    assert production.invocations - before[2] == 40
    # Capture samples 100%: every production answer and every shadow answer, each under its variant.
    assert capture.captured - before[3] == 40 + answered
    files = sorted((capture.root / "shadow").rglob("capture.jsonl"))
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(records) == shadow.answered
    assert {json.loads(r["captureData"]["endpointOutput"]["data"])["model"] for r in records} == {"candidate"}
    assert records[-1]["captureData"]["endpointInput"]["encoding"] == "CSV"
    assert json.loads(records[-1]["captureData"]["endpointOutput"]["data"])["rows"] == 10


def test_a_failing_shadow_changes_nothing_for_the_caller(endpoint):
    runtime = endpoint.client()
    shadow = endpoint.runtime.shadows.shadow("shadow")
    answered, failed = shadow.answered, shadow.failed
    # The shadow's container goes away: its copies fail, the callers' answers do not change.
    endpoint.run(shadow.variant.stop(), 30)
    try:
        for _ in range(10):
            resp = runtime.invoke_endpoint(
                EndpointName=endpoint.name,
                ContentType="text/csv",
                Body=b"59.0,2.0,32.1,101.0,157.0,93.2,38.0,4.0,4.8598,87.0",
            )
            assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200
        endpoint.run(endpoint.runtime.shadows.join(), 60)
        assert shadow.answered == answered and shadow.failed > failed
    finally:
        endpoint.run(shadow.variant.start(), 120)
