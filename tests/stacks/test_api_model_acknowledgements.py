"""The cdk-nag acknowledgements of ``Custom::SageMakerModel``'s function (smkit/cdk/constructs/api_model.py)
are recorded where the resource they are about is made: the function's log group once per stack, as the
function is, and each model's name prefix once per model. The session app of tests/stacks (conftest.py),
which holds a config with channels (realtime-channels), passes cdk-nag with them."""

from __future__ import annotations

import json
from collections import Counter

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from smkit.cdk.constructs.api_model import ApiModel, CreateModelHandler

ROLE = "arn:aws:iam::123456789012:role/serving"


def test_two_models_share_one_function_and_its_log_group_is_acknowledged_once() -> None:
    stack = cdk.Stack(cdk.App(), "Models")
    role = iam.Role.from_role_arn(stack, "Role", ROLE)
    models = [
        ApiModel(stack, name, role=role, request={"PrimaryContainer": {"Image": "image"}}) for name in "AB"
    ]
    handler = stack.node.find_child("CreateModelHandler")
    assert isinstance(handler, CreateModelHandler)
    acknowledged = Counter(
        rule
        for entry in handler.policy.node.metadata
        if entry.type == "aws:cdk:acknowledged-rules"
        for rule in json.loads(json.dumps(entry.data))
    )
    logs = [rule for rule in acknowledged if rule.endswith(".Arn>:*]")]
    assert len(logs) == 1 and acknowledged[logs[0]] == 1, acknowledged
    for model in models:
        prefix = [rule for rule in acknowledged if f":model/{model.name_prefix}-*]" in rule]
        assert len(prefix) == 1 and acknowledged[prefix[0]] == 1, acknowledged
