"""smkit's CDK construct library: the stacks and constructs of a SageMaker deployment, for your own CDK app.

Needs the ``cdk`` extra (``pip install "smkit[cdk]"``: aws-cdk-lib, constructs, cdk-nag). Three levels,
each built from the one below (docs/cdk-constructs.md):

- :func:`add_deployment` -- one config file into a ``cdk.App``, reading its context (``config``,
  ``image_tag``, ``pipeline=true``) and registering the cdk-nag packs: what ``python -m smkit.cdk.app``
  (``smkit synth``, ``smkit deploy``) and this repository's ``stacks/app.py`` run.
- :func:`add_serving_stacks` -- the :class:`EcrStack` and :class:`ServingStack` of a resolved deployment
  (:func:`smkit.config.load_deployment`, docs/resolved-deployment.md) in any scope (:class:`ServingStage` for a pipeline's stage,
  :func:`add_pipeline` / :class:`PipelineStack` for the delivery pipeline, running the
  :class:`PipelineCommands` you give it).
- One construct per SageMaker concept, with typed keyword-only props and no config file:
  :class:`InferenceModel`, :class:`EndpointConfiguration`, :class:`InferenceEndpoint`,
  :class:`ExecutionRole`, :class:`EndpointAutoscaling`, :class:`EndpointMonitoring`, ... (one each for
  instance variants and inference components). They never read CDK context, files or environment variables.

Add :func:`add_compliance_checks` to an app of your own to hold your stacks to the same cdk-nag packs, and
create it with :data:`FEATURE_FLAGS` as its context to synthesize the templates smkit tests.
"""

from __future__ import annotations

_EXTRA = {"aws_cdk", "constructs", "cdk_nag"}

try:
    from smkit.cdk.compliance import add_compliance_checks
    from smkit.cdk.compose import DEFAULT_CONFIG, FEATURE_FLAGS, add_deployment
    from smkit.cdk.constructs.autoscaling import EndpointAutoscaling, ScalingSettings, ScalingTarget
    from smkit.cdk.constructs.encryption import EncryptionKey
    from smkit.cdk.constructs.endpoint import (
        BatchSize,
        CapacityUnit,
        DeploymentGuardrails,
        DeploymentStrategy,
        InferenceEndpoint,
    )
    from smkit.cdk.constructs.endpoint_config import (
        AsyncSettings,
        CaptureMode,
        DataCaptureSettings,
        EndpointConfiguration,
        IEndpointConfig,
        InstanceType,
        InstanceVariant,
        ManagedInstanceScaling,
        RoutingStrategy,
        ScaleInStrategy,
        ServerlessVariant,
    )
    from smkit.cdk.constructs.endpoint_interface import (
        EndpointMetricOptions,
        EndpointVariant,
        IEndpoint,
        ImportedEndpoint,
    )
    from smkit.cdk.constructs.execution_role import ExecutionRole
    from smkit.cdk.constructs.image import ServingImage
    from smkit.cdk.constructs.inference_component import (
        ComponentCompute,
        ComponentPlacement,
        CopyBatchUnit,
        InferenceComponent,
        PlacementStrategy,
        RollingUpdateSettings,
    )
    from smkit.cdk.constructs.logs import DeploymentLogs
    from smkit.cdk.constructs.model import ContainerSpec, IModel, InferenceModel
    from smkit.cdk.constructs.model_data import BoundModelData, ModelData
    from smkit.cdk.constructs.monitoring import (
        AlarmThresholds,
        AlarmTopic,
        EndpointMonitoring,
        Measure,
        Subscriber,
    )
    from smkit.cdk.constructs.storage import EndpointBucket
    from smkit.cdk.ecr_stack import EcrStack
    from smkit.cdk.pipeline_stack import PipelineCommands, PipelineStack, add_pipeline
    from smkit.cdk.serving_stack import ServingStack
    from smkit.cdk.serving_stage import ServingStacks, ServingStage, add_serving_stacks, stack_ids
except ModuleNotFoundError as exc:  # the cdk extra is missing; say which install fixes it
    if (exc.name or "").split(".")[0] not in _EXTRA:
        raise
    raise ModuleNotFoundError(
        f"smkit.cdk needs the AWS CDK libraries, and {exc.name!r} is not installed: "
        'pip install "smkit[cdk]" (or "smkit[all]")',
        name=exc.name,
    ) from exc

__all__ = [
    "DEFAULT_CONFIG",
    "FEATURE_FLAGS",
    "AlarmThresholds",
    "AlarmTopic",
    "AsyncSettings",
    "BatchSize",
    "BoundModelData",
    "CapacityUnit",
    "CaptureMode",
    "ComponentCompute",
    "ComponentPlacement",
    "ContainerSpec",
    "CopyBatchUnit",
    "DataCaptureSettings",
    "DeploymentGuardrails",
    "DeploymentLogs",
    "DeploymentStrategy",
    "EcrStack",
    "EncryptionKey",
    "EndpointAutoscaling",
    "EndpointBucket",
    "EndpointConfiguration",
    "EndpointMetricOptions",
    "EndpointMonitoring",
    "EndpointVariant",
    "ExecutionRole",
    "IEndpoint",
    "IEndpointConfig",
    "IModel",
    "ImportedEndpoint",
    "InferenceComponent",
    "InferenceEndpoint",
    "InferenceModel",
    "InstanceType",
    "InstanceVariant",
    "ManagedInstanceScaling",
    "Measure",
    "ModelData",
    "PipelineCommands",
    "PipelineStack",
    "PlacementStrategy",
    "RollingUpdateSettings",
    "RoutingStrategy",
    "ScaleInStrategy",
    "ScalingSettings",
    "ScalingTarget",
    "ServerlessVariant",
    "ServingImage",
    "ServingStack",
    "ServingStacks",
    "ServingStage",
    "Subscriber",
    "add_compliance_checks",
    "add_deployment",
    "add_pipeline",
    "add_serving_stacks",
    "stack_ids",
]
