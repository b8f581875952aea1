"""The 2026 hosting surface in the templates: rolling deployments, data capture content types, the
inference AMI, capacity reservations, gated weights (EULA), and inference components with scheduling, data
cache and a LoRA adapter (config/llm.yaml)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import yaml
from aws_cdk.assertions import Match, Template
from stack_support import CONFIG_DIR, SynthesizedApp, cdk_context

from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import parse_config
from smkit.config.resolved import resolve

IC = "AWS::SageMaker::InferenceComponent"


def _components(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == IC}


def test_llm_has_an_adapter_component_on_its_base(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("llm")
    components = _components(template)
    [(adapter_id, adapter)] = [
        (k, r)
        for k, r in components.items()
        if "BaseInferenceComponentName" in r["Properties"]["Specification"]
    ]
    [(base_id, base)] = [(k, r) for k, r in components.items() if k != adapter_id]
    spec = adapter["Properties"]["Specification"]
    assert spec == {
        "BaseInferenceComponentName": base["Properties"]["InferenceComponentName"],
        "Container": {"ArtifactUrl": "s3://my-llm-weights/adapters/support.tar.gz"},
    }
    assert "RuntimeConfig" not in adapter["Properties"]  # it runs in the base's copies
    assert base_id in adapter.get("DependsOn", [])
    base_spec = base["Properties"]["Specification"]
    assert base_spec["SchedulingConfig"] == {
        "PlacementStrategy": "BINPACK",
        "AvailabilityZoneBalance": {"EnforcementMode": "PERMISSIVE", "MaxImbalance": 100},
    }
    assert base_spec["DataCacheConfig"] == {"EnableCaching": True}
    assert base_spec["ComputeResourceRequirements"]["NumberOfAcceleratorDevicesRequired"] == 1
    # qwen runs 0 or 1 copy: no rolling batch is 5-50% of that, so llm.yaml has no rolling policy.
    assert "DeploymentConfig" not in base["Properties"]


def test_llm_pins_the_inference_ami_and_reads_weights_and_adapter_from_s3(
    synthesized: SynthesizedApp,
) -> None:
    t = synthesized.template("llm")
    t.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g5.2xlarge",
                        "InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
                        "ManagedInstanceScaling": {
                            "Status": "ENABLED",
                            "MinInstanceCount": 0,
                            "MaxInstanceCount": 2,
                        },
                    }
                )
            ]
        },
    )
    t.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri": "s3://my-llm-weights/qwen2.5-0.5b-instruct/",
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        }
                    }
                }
            )
        },
    )
    t.has_resource_properties(
        "AWS::IAM::ManagedPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "ReadAdapterQwenSupport",
                                "Action": "s3:GetObject",
                                # llm.yaml names its region: the partition is literal.
                                "Resource": "arn:aws:s3:::my-llm-weights/adapters/support.tar.gz",
                            }
                        )
                    ]
                )
            }
        },
    )


def test_rolling_deployment_policy(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime-rolling")
    [endpoint] = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
    deployment = endpoint["Properties"]["DeploymentConfig"]
    assert "BlueGreenUpdatePolicy" not in deployment
    assert deployment["RollingUpdatePolicy"] == {
        "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 25},
        "RollbackMaximumBatchSize": {"Type": "INSTANCE_COUNT", "Value": 2},
        "WaitIntervalInSeconds": 300,
        "MaximumExecutionTimeoutInSeconds": 7200,
    }
    assert len(deployment["AutoRollbackConfiguration"]["Alarms"]) == 2


def test_data_capture_content_types(synthesized: SynthesizedApp) -> None:
    synthesized.template("realtime").has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "DataCaptureConfig": Match.object_like(
                {
                    "CaptureContentTypeHeader": {
                        "CsvContentTypes": ["text/csv"],
                        "JsonContentTypes": ["application/json"],
                    }
                }
            )
        },
    )
    synthesized.template("realtime-rolling").has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "DataCaptureConfig": Match.object_like(
                {
                    "CaptureContentTypeHeader": {
                        "JsonContentTypes": ["application/json", "application/jsonlines"]
                    }
                }
            )
        },
    )


def test_capacity_reservation_and_eula(tmp_path: Path) -> None:
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    reservation = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/g5-plan"
    data["endpoint"]["variants"][0]["capacity_reservation"] = {"ml_reservation_arn": reservation}
    data["model"]["containers"][0]["model_data"]["accept_eula"] = True
    app = cdk.App(context=cdk_context(), outdir=str(tmp_path))
    cfg = parse_config(copy.deepcopy(data), source="test", base_dir=CONFIG_DIR)
    t = Template.from_stack(add_serving_stacks(app, deployment=resolve(cfg, Path.cwd())).serving)
    t.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "CapacityReservationConfig": {
                            "CapacityReservationPreference": "capacity-reservations-only",
                            "MlReservationArn": reservation,
                        }
                    }
                )
            ]
        },
    )
    t.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {
                    "ModelDataSource": {
                        "S3DataSource": Match.object_like({"ModelAccessConfig": {"AcceptEula": True}})
                    }
                }
            )
        },
    )


def test_the_adapter_component_gets_the_same_alarms_as_its_base(synthesized: SynthesizedApp) -> None:
    """5XX rate, 4XX rate and p99 latency on the adapter's own InferenceComponentName metrics."""
    template = synthesized.template_json("llm")
    names = {
        ("adapter" if "BaseInferenceComponentName" in r["Properties"]["Specification"] else "base"): r[
            "Properties"
        ]["InferenceComponentName"]
        for r in _components(template).values()
    }
    alarms = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]

    def watched(name: dict[str, Any]) -> list[str]:
        mentions = json.dumps(name)
        return sorted(
            "5XX" if "5XX" in json.dumps(a) else "4XX" if "4XX" in json.dumps(a) else "p99"
            for a in alarms
            if mentions in json.dumps(a["Properties"]) and "NoCapacity" not in json.dumps(a)
        )

    assert watched(names["base"]) == ["4XX", "5XX", "p99"]
    assert watched(names["adapter"]) == watched(names["base"])
