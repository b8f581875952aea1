"""The emulator refuses to turn an instance-based endpoint into a serverless one in place, as SageMaker does
("You cannot convert your instance-based, real-time endpoint to a serverless endpoint",
https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html, feature exclusions).

A naive template (one EndpointName whatever the endpoint's type) fails that update; a template whose
endpoint name changes with the type, as the stacks' does, replaces the endpoint instead.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError
from test_moto_fixes_served import TEMPLATE

from smkit.emulator import MotoServer


def _endpoint(kind: str, endpoint_name: str) -> dict[str, Any]:
    model_name = {"Fn::GetAtt": ["Model", "ModelName"]}
    variant: dict[str, Any] = {"VariantName": "main", "ModelName": model_name}
    if kind == "serverless":
        variant["ServerlessConfig"] = {"MemorySizeInMB": 2048, "MaxConcurrency": 5}
    else:
        variant.update(InstanceType="ml.m5.large", InitialInstanceCount=1)
    return {
        "Resources": {
            "Role": TEMPLATE["Resources"]["Role"],
            "Model": TEMPLATE["Resources"]["Model"],
            "Config": {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": {"ProductionVariants": [variant]},
            },
            "Endpoint": {
                "Type": "AWS::SageMaker::Endpoint",
                "Properties": {
                    "EndpointName": endpoint_name,
                    "EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]},
                    # moto updates only resources whose own template text changed.
                    "Tags": [{"Key": "kind", "Value": kind}],
                },
            },
        }
    }


def _update(server: MotoServer, template: dict[str, Any]) -> str:
    """UpdateStack (moto's runs synchronously: a refused update raises); the stack's status."""
    cloudformation = server.client("cloudformation")
    cloudformation.update_stack(StackName="Kind", TemplateBody=json.dumps(template))
    status: str = cloudformation.describe_stacks(StackName="Kind")["Stacks"][0]["StackStatus"]
    return status


def test_realtime_to_serverless_in_place_is_refused_and_a_new_name_replaces() -> None:
    with MotoServer.start() as server:
        server.client("cloudformation").create_stack(
            StackName="Kind", TemplateBody=json.dumps(_endpoint("realtime", "kind-ep"))
        )
        with pytest.raises(ClientError, match="cannot convert your instance-based, real-time endpoint"):
            _update(server, _endpoint("serverless", "kind-ep"))  # the naive template: same name

        assert _update(server, _endpoint("serverless", "kind-ep-serverless")) == "UPDATE_COMPLETE"
        sagemaker = server.client("sagemaker")
        [endpoint] = sagemaker.list_endpoints()["Endpoints"]
        assert endpoint["EndpointName"] == "kind-ep-serverless"
        config = sagemaker.describe_endpoint_config(
            EndpointConfigName=sagemaker.describe_endpoint(EndpointName="kind-ep-serverless")[
                "EndpointConfigName"
            ]
        )
        assert "ServerlessConfig" in config["ProductionVariants"][0]


def test_serverless_to_realtime_in_place_is_allowed() -> None:
    with MotoServer.start() as server:
        server.client("cloudformation").create_stack(
            StackName="Kind", TemplateBody=json.dumps(_endpoint("serverless", "kind-ep"))
        )
        assert _update(server, _endpoint("realtime", "kind-ep")) == "UPDATE_COMPLETE"
