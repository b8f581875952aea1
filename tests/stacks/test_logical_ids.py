"""Logical ids of stateful resources are pinned: a changed id would make CloudFormation replace them.

Renaming a construct on these paths deletes (or, with Retain, orphans) the key, the buckets with captured
data and async results, the repository with its images, or the live endpoint.
"""

from __future__ import annotations

import pytest
from stack_support import SynthesizedApp

SERVING = {
    "EncryptionKey514CDF8F": "AWS::KMS::Key",
    "StorageBucket5CB7C8EA": "AWS::S3::Bucket",
    "StorageAccessLogs96FB524C": "AWS::S3::Bucket",
    "EndpointEEF1FD8F": "AWS::SageMaker::Endpoint",
    "MonitoringAlarmTopicAF62D4F1": "AWS::SNS::Topic",
}
ASYNC_TOPICS = {"AsyncSuccess07F05982": "AWS::SNS::Topic", "AsyncError0ABD61DD": "AWS::SNS::Topic"}
ECR = {"ServingRepositoryF9BEC8E2": "AWS::ECR::Repository"}
STATEFUL = {"AWS::KMS::Key", "AWS::S3::Bucket", "AWS::SageMaker::Endpoint", "AWS::ECR::Repository"}


@pytest.mark.parametrize(
    "case",
    [
        "realtime",
        "serverless",
        "multi-model",
        "multi-container",
        "async",
        "inference-components",
        "realtime-shadow",
    ],
)
def test_serving_stack_logical_ids(synthesized: SynthesizedApp, case: str) -> None:
    resources = synthesized.template_json(case)["Resources"]
    expected = SERVING | (ASYNC_TOPICS if case == "async" else {})
    assert {k: resources[k]["Type"] for k in expected if k in resources} == expected
    stateful = {k for k, r in resources.items() if r["Type"] in STATEFUL}
    assert stateful <= set(expected), f"unpinned stateful resources: {stateful - set(expected)}"


def test_ecr_stack_logical_ids(synthesized: SynthesizedApp) -> None:
    resources = synthesized.template_json("realtime", "ecr")["Resources"]
    assert {k: r["Type"] for k, r in resources.items()} == ECR
