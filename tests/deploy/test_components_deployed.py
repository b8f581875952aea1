"""config/inference-components.yaml and config/realtime-shadow.yaml as the real CDK CLI deployed them into
moto (the session's ``deployed`` fixture), read back through boto3's SageMaker API.

moto has no inference components of its own: smkit.emulator.moto_components (a moto_fixes repair) keeps
them in moto's SageMaker backend. This module sorts before test_deploy.py, whose last test destroys
everything.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pytest
from deploy_support import DeployedConfig

from smkit.emulator import EMULATED_IMAGE_TAG, MotoServer
from smkit.release.history import describe_release


def _name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def _physical(d: DeployedConfig, resource_type: str) -> list[str]:
    return [_name(arn) for arn in d.serving.physical_ids(resource_type)]


def test_components_are_in_service_on_the_endpoint(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed["inference-components"]
    sagemaker = emulator.client("sagemaker")
    [endpoint_name] = _physical(d, "AWS::SageMaker::Endpoint")
    endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    assert endpoint["EndpointStatus"] == "InService"
    listed = sagemaker.list_inference_components(EndpointNameEquals=endpoint_name)["InferenceComponents"]
    outputs = dict(pair.split("=") for pair in d.serving.outputs["InferenceComponentNames"].split(","))
    assert sorted(outputs) == ["iris", "tabular"]
    assert {c["InferenceComponentName"]: c["InferenceComponentStatus"] for c in listed} == {
        physical: "InService" for physical in outputs.values()
    }
    assert {c["VariantName"] for c in listed} == {"main"}


def test_each_component_runs_its_own_model_with_its_reservation(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed["inference-components"]
    sagemaker = emulator.client("sagemaker")
    spec = d.config.endpoint.inference_components
    assert spec is not None
    names = dict(pair.split("=") for pair in d.serving.outputs["InferenceComponentNames"].split(","))
    containers = {c.name: c for c in d.config.model.containers}
    assert d.ecr is not None
    image = f"{d.ecr.outputs['RepositoryUri']}:{EMULATED_IMAGE_TAG}"
    models = set(_physical(d, "AWS::SageMaker::Model"))
    used = set()
    for component in spec.components:
        got: dict[str, Any] = sagemaker.describe_inference_component(
            InferenceComponentName=names[component.name]
        )
        assert got["RuntimeConfig"] == {
            "DesiredCopyCount": component.copies,
            "CurrentCopyCount": component.copies,
        }
        requirements = got["Specification"]["ComputeResourceRequirements"]
        assert requirements["MinMemoryRequiredInMb"] == component.compute.min_memory_mb
        assert requirements.get("NumberOfCpuCoresRequired") == component.compute.cpu_cores
        model_name = got["Specification"]["ModelName"]
        assert model_name in models
        used.add(model_name)
        model = sagemaker.describe_model(ModelName=model_name)
        container = containers[component.container]
        assert model["PrimaryContainer"]["Image"] == image
        assert container.environment.items() <= model["PrimaryContainer"].get("Environment", {}).items()
    assert used == models  # one model per component


def test_endpoint_config_is_a_model_less_pool_with_the_execution_role(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed["inference-components"]
    [config_name] = _physical(d, "AWS::SageMaker::EndpointConfig")
    config = emulator.client("sagemaker").describe_endpoint_config(EndpointConfigName=config_name)
    assert config["ExecutionRoleArn"] == d.serving.outputs["ExecutionRoleArn"]
    [variant] = config["ProductionVariants"]
    assert "ModelName" not in variant
    assert variant["ManagedInstanceScaling"] == {
        "Status": "ENABLED",
        "MinInstanceCount": 0,
        "MaxInstanceCount": 2,
    }
    # Copy scaling: Application Auto Scaling targets on the components (smkit.emulator.moto_scaling).
    targets = emulator.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="sagemaker"
    )
    dimensions = {
        t["ScalableDimension"]
        for t in targets["ScalableTargets"]
        if "inference-component/" in t["ResourceId"]
    }
    assert dimensions == {"sagemaker:inference-component:DesiredCopyCount"}


def test_shadow_variant_has_its_own_model_and_sampled_weight(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed["realtime-shadow"]
    sagemaker = emulator.client("sagemaker")
    [config_name] = _physical(d, "AWS::SageMaker::EndpointConfig")
    config = sagemaker.describe_endpoint_config(EndpointConfigName=config_name)
    [production] = config["ProductionVariants"]
    [shadow] = config["ShadowProductionVariants"]
    assert (shadow["VariantName"], shadow["InitialVariantWeight"]) == ("shadow", 0.5)
    assert production["ModelName"] != shadow["ModelName"]
    assert {production["ModelName"], shadow["ModelName"]} == set(_physical(d, "AWS::SageMaker::Model"))
    candidate = sagemaker.describe_model(ModelName=shadow["ModelName"])
    url = urlparse(candidate["PrimaryContainer"]["ModelDataUrl"])
    head = emulator.client("s3").head_object(Bucket=url.netloc, Key=url.path.lstrip("/"))
    assert head["ContentLength"] > 0
    assert d.serving.outputs["ShadowVariantNames"] == "shadow"


@pytest.mark.parametrize(
    ("stem", "models"), [("inference-components", 2), ("realtime-shadow", 2), ("llm", 1)]
)
def test_release_record_holds_every_model_of_the_endpoint(
    stem: str,
    models: int,
    deployed: dict[str, DeployedConfig],
    emulator: MotoServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key, value in emulator.environment().items():
        monkeypatch.setenv(key, value)
    d = deployed[stem]
    [endpoint_name] = _physical(d, "AWS::SageMaker::Endpoint")
    release = describe_release(endpoint_name, image_tag=None, note="", region=emulator.region)
    assert len(release.containers) == models
    if d.ecr is None:  # a dlc image (llm.yaml): the URI as the config gives it
        assert d.config.image.source == "dlc"
        image = d.config.image.uri
    else:
        image = f"{d.ecr.outputs['RepositoryUri']}:{EMULATED_IMAGE_TAG}"
    assert {c.image for c in release.containers} == {image}


def test_llm_adapter_runs_on_its_base_component(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    """config/llm.yaml: the LoRA adapter names the base component's physical name and has no model or copies
    of its own; the emulator creates an adapter only on an existing base (smkit.emulator.moto_components)."""
    d = deployed["llm"]
    sagemaker = emulator.client("sagemaker")
    names = dict(pair.split("=") for pair in d.serving.outputs["InferenceComponentNames"].split(","))
    assert sorted(names) == ["qwen", "qwen-support"]
    adapter = sagemaker.describe_inference_component(InferenceComponentName=names["qwen-support"])
    assert adapter["Specification"] == {
        "BaseInferenceComponentName": names["qwen"],
        "Container": {"ArtifactUrl": "s3://my-llm-weights/adapters/support.tar.gz"},
    }
    base = sagemaker.describe_inference_component(InferenceComponentName=names["qwen"])
    assert base["Specification"]["SchedulingConfig"]["PlacementStrategy"] == "BINPACK"
    assert base["InferenceComponentStatus"] == adapter["InferenceComponentStatus"] == "InService"
