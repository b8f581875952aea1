"""The moto repairs are each still needed by moto as installed.

These tests call moto's own, unrepaired code in this process (the repairs are applied only inside the
server's process). When a moto release fixes an adapter, its test here fails: drop the fix. That each repair
works in the server is tested in tests/deploy/test_moto_fixes_served.py.
"""

from __future__ import annotations

import pytest
from moto.cloudformation import parsing
from moto.cloudformation.custom_model import CustomModel

from smkit.emulator import MOTO_SKIPS
from smkit.emulator.moto_fixes import FIXES

ACCOUNT, REGION = "123456789012", "us-east-1"


def test_every_fix_has_a_reason() -> None:
    assert [fix.resource_type for fix in FIXES] == [
        "AWS::SageMaker::Model",
        "AWS::ECR::Repository",
        "AWS::KMS::Key",
        "AWS::CloudWatch::Alarm",
        "AWS::IAM::ManagedPolicy",
        "AWS::CloudFormation::Stack",
        "AWS::SageMaker::Model",
        "AWS::SageMaker::EndpointConfig",
        "AWS::SageMaker::EndpointConfig",
        "AWS::SageMaker::EndpointConfig",
        "AWS::SageMaker::InferenceComponent",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::SageMaker::Endpoint",
        "AWS::SageMaker::Endpoint",
        "Custom::*",
        "Custom::CDKBucketDeployment",
        "Custom::SageMakerModel",
    ]
    assert all(len(fix.reason) > 80 for fix in FIXES)


def test_moto_still_requires_primary_container() -> None:
    from moto.sagemaker.models import Model

    template = {"Properties": {"ExecutionRoleArn": "arn:aws:iam::123456789012:role/r", "Containers": []}}
    with pytest.raises(KeyError, match="PrimaryContainer"):
        Model.create_from_cloudformation_json("m", template, ACCOUNT, REGION)


def test_moto_still_generates_uppercase_repository_names() -> None:
    name = parsing.generate_resource_name("AWS::ECR::Repository", "MyStack", "Repository")
    assert name != name.lower()


def test_moto_still_passes_cloudformation_tags_to_kms() -> None:
    from moto.kms.models import Key

    template = {"Properties": {"KeyPolicy": "{}", "Tags": [{"Key": "k", "Value": "v"}]}}
    with pytest.raises(KeyError, match="TagKey"):
        Key.create_from_cloudformation_json("k", template, ACCOUNT, REGION)


def test_moto_still_lacks_alarm_and_managed_policy_delete_adapters() -> None:
    from moto.iam.models import ManagedPolicy

    assert "AWS::CloudWatch::Alarm" not in parsing.get_model_map()
    assert getattr(ManagedPolicy.delete_from_cloudformation_json, "__isabstractmethod__", False)


def test_moto_still_fails_updates_that_keep_an_unstored_parameter() -> None:
    from types import SimpleNamespace

    from moto.cloudformation.models import cloudformation_backends

    backend = cloudformation_backends[ACCOUNT][REGION]
    keep = [{"ParameterKey": "BootstrapVersion", "UsePreviousValue": True}]
    with pytest.raises(KeyError, match="BootstrapVersion"):
        backend._resolve_update_parameters(SimpleNamespace(parameters={}), keep)  # type: ignore[arg-type]


def test_moto_still_requires_a_model_on_every_variant_and_drops_role_and_shadows() -> None:
    from moto.sagemaker.models import FakeEndpointConfig, sagemaker_backends

    role = "arn:aws:iam::123456789012:role/r"
    pool = {"VariantName": "main", "InstanceType": "ml.m5.xlarge", "InitialInstanceCount": 1}
    with pytest.raises(KeyError, match="ModelName"):
        FakeEndpointConfig.create_from_cloudformation_json(
            "pool", {"Properties": {"ExecutionRoleArn": role, "ProductionVariants": [pool]}}, ACCOUNT, REGION
        )
    sagemaker_backends[ACCOUNT][REGION].create_model(
        model_name="still-needed",
        execution_role_arn=role,
        primary_container={"Image": "i"},
        vpc_config={},
        containers=[],
        tags=[],
    )
    variant = {**pool, "ModelName": "still-needed"}
    properties = {
        "ExecutionRoleArn": role,
        "ProductionVariants": [variant],
        "ShadowProductionVariants": [{**variant, "VariantName": "shadow"}],
    }
    config = FakeEndpointConfig.create_from_cloudformation_json(
        "dropped", {"Properties": properties}, ACCOUNT, REGION
    )
    described = config.response_object
    assert "ExecutionRoleArn" not in described and "ShadowProductionVariants" not in described


def test_moto_still_has_no_inference_components() -> None:
    from moto.sagemaker.responses import SageMakerResponse

    assert parsing.resource_class_from_type("AWS::SageMaker::InferenceComponent") is None
    assert not hasattr(SageMakerResponse, "list_inference_components")
    assert not hasattr(SageMakerResponse, "describe_inference_component")


def test_moto_still_lacks_application_autoscaling_adapters() -> None:
    assert parsing.resource_class_from_type("AWS::ApplicationAutoScaling::ScalableTarget") is None
    assert parsing.resource_class_from_type("AWS::ApplicationAutoScaling::ScalingPolicy") is None


def test_moto_still_updates_an_endpoint_under_its_old_name() -> None:
    from moto.sagemaker.models import FakeEndpoint

    # moto recreates the endpoint under original_resource.endpoint_name and never reads EndpointName,
    # nor asks Application Auto Scaling about the variants.
    code = FakeEndpoint.update_from_cloudformation_json.__func__.__code__  # type: ignore[attr-defined]
    assert "EndpointName" not in code.co_consts
    assert "endpoint_name" in code.co_names
    assert not any("autoscaling" in str(c) for c in code.co_names)


def test_moto_still_runs_custom_resources_through_lambda() -> None:
    assert parsing.resource_class_from_type("Custom::CDKBucketDeployment") is CustomModel
    assert parsing.resource_class_from_type("Custom::SageMakerModel") is CustomModel


@pytest.mark.parametrize("resource_type", sorted(t for t in MOTO_SKIPS if not t.startswith("Custom::")))
def test_skipped_types_are_unsupported_by_moto(resource_type: str) -> None:
    assert parsing.resource_class_from_type(resource_type) is None


def test_moto_still_rejects_the_provisioned_concurrency_dimension() -> None:
    from moto.applicationautoscaling.exceptions import AWSValidationException
    from moto.applicationautoscaling.models import applicationautoscaling_backends

    from smkit.emulator.moto_scaling import MISSING_DIMENSIONS

    backend = applicationautoscaling_backends[ACCOUNT][REGION]
    for dimension in MISSING_DIMENSIONS:
        with pytest.raises(AWSValidationException):
            backend.register_scalable_target("sagemaker", "endpoint/e/variant/v", dimension, 1, 2, "", {})


def test_moto_still_refuses_current_gpu_instance_types() -> None:
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.models import FakeEndpointConfig

    with pytest.raises(ValidationError, match="ml.g5.2xlarge"):
        FakeEndpointConfig.validate_instance_type(None, "ml.g5.2xlarge")  # type: ignore[arg-type]


def test_moto_still_accepts_a_volume_size_on_instance_storage() -> None:
    from moto.sagemaker.models import FakeEndpointConfig

    variant = {"VariantName": "gpu", "InstanceType": "ml.m5d.large", "VolumeSizeInGB": 100}
    FakeEndpointConfig.validate_production_variants(FakeEndpointConfig.__new__(FakeEndpointConfig), [variant])


def test_moto_still_has_no_managed_policy_update() -> None:
    from moto.core.common_models import CloudFormationModel
    from moto.iam.models import ManagedPolicy

    update = ManagedPolicy.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]
    assert update is CloudFormationModel.update_from_cloudformation_json.__func__  # type: ignore[attr-defined]


def test_moto_still_leaves_an_endpoint_on_its_replaced_config() -> None:
    from types import SimpleNamespace

    config = {
        "Type": "AWS::SageMaker::EndpointConfig",
        "Properties": {"ProductionVariants": [{"InstanceType": "a"}]},
    }
    endpoint = {
        "Type": "AWS::SageMaker::Endpoint",
        "Properties": {"EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]}},
    }
    old = {"Config": config, "Endpoint": endpoint}
    new = {
        "Config": {**config, "Properties": {"ProductionVariants": [{"InstanceType": "b"}]}},
        "Endpoint": endpoint,
    }
    state = SimpleNamespace(_resource_json_map=old, input_parameters={})
    diff = parsing.ResourceMap.build_resource_diff(state, {"Resources": new})  # type: ignore[arg-type]
    assert diff["Modify"] == ["Config"]
