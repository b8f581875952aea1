"""moto repairs for endpoints that host inference components or shadow variants (part of ``moto_fixes.FIXES``).

moto 5.2 has no inference components at all, and its EndpointConfig adapter requires a ModelName on every
variant and drops ExecutionRoleArn and ShadowProductionVariants. These repairs keep what the template says
in moto's own SageMaker backend:

- :func:`endpoint_config_from_template`: a variant without ModelName (an inference-component endpoint's
  instance pool) is accepted; ExecutionRoleArn and ShadowProductionVariants (whose models must exist, as
  for production variants) are stored and returned by DescribeEndpointConfig.
- :func:`inference_components`: ``AWS::SageMaker::InferenceComponent`` through CloudFormation, and the
  API's Describe/ListInferenceComponents on moto's server. A component is created only on an existing
  endpoint and variant with an existing model (an adapter: on an existing base component), is InService at once with its CopyCount as desired and
  current copies, and is deleted with its stack.
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeInferenceComponent.html
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from smkit.emulator.moto_access import component_problem, previous_data_problem
from smkit.emulator.moto_resource import EmulatedResource

STORE = "smkit_inference_components"  # attribute of moto's SageMaker backend holding the components


def endpoint_config_from_template() -> None:
    """Accept model-less variants; keep ExecutionRoleArn and ShadowProductionVariants."""
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    def validate_production_variants(
        self: sm.SageMakerModelBackend, production_variants: list[dict[str, Any]]
    ) -> None:
        for variant in production_variants:
            name = variant.get("ModelName")
            if name is not None and name not in self._models:
                arn = sm.arn_formatter("model", name, self.account_id, self.region_name)
                raise ValidationError(message=f"Could not find model '{arn}'.")

    sm.SageMakerModelBackend.validate_production_variants = validate_production_variants  # type: ignore[method-assign]

    def create_from_cloudformation_json(
        cls: type[sm.FakeEndpointConfig],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> sm.FakeEndpointConfig:
        backend = sm.sagemaker_backends[account_id][region_name]
        properties = cloudformation_json["Properties"]
        shadows = properties.get("ShadowProductionVariants")
        if shadows:
            backend.validate_production_variants(shadows)
        config = backend.create_endpoint_config(
            endpoint_config_name=resource_name,
            production_variants=properties["ProductionVariants"],
            data_capture_config=properties.get("DataCaptureConfig", {}),
            async_inference_config=properties.get("AsyncInferenceConfig", {}),
            kms_key_id=properties.get("KmsKeyId"),
            tags=properties.get("Tags", []),
        )
        # BaseObject.gen_response_object turns attributes into DescribeEndpointConfig keys.
        if "ExecutionRoleArn" in properties:
            setattr(config, "execution_role_arn", properties["ExecutionRoleArn"])  # noqa: B010
        if shadows:
            setattr(config, "shadow_production_variants", shadows)  # noqa: B010
        return config

    sm.FakeEndpointConfig.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)  # type: ignore[assignment,method-assign]


def _components(backend: Any) -> dict[str, dict[str, Any]]:
    store: dict[str, dict[str, Any]] | None = getattr(backend, STORE, None)
    if store is None:
        store = {}
        setattr(backend, STORE, store)
    return store


def _summary(component: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "InferenceComponentName",
        "InferenceComponentArn",
        "EndpointName",
        "EndpointArn",
        "VariantName",
        "InferenceComponentStatus",
        "CreationTime",
        "LastModifiedTime",
    )
    return {key: component[key] for key in keys}


def inference_components() -> None:
    """AWS::SageMaker::InferenceComponent in CloudFormation, Describe/ListInferenceComponents in the API."""
    from moto.core.responses import ActionResult
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError
    from moto.sagemaker.responses import SageMakerResponse

    def describe_inference_component(self: SageMakerResponse) -> ActionResult:
        name = self._get_param("InferenceComponentName")
        component = _components(self.sagemaker_backend).get(name)
        if component is None:
            arn = sm.arn_formatter("inference-component", name, self.current_account, self.region)
            raise ValidationError(message=f"Could not find inference component '{arn}'.")
        return ActionResult(component)

    def list_inference_components(self: SageMakerResponse) -> ActionResult:
        filters = {
            "EndpointName": self._get_param("EndpointNameEquals"),
            "VariantName": self._get_param("VariantNameEquals"),
            "InferenceComponentStatus": self._get_param("StatusEquals"),
        }
        contains = self._get_param("NameContains")
        found = [
            _summary(c)
            for c in _components(self.sagemaker_backend).values()
            if all(value is None or c[key] == value for key, value in filters.items())
            and (contains is None or contains in c["InferenceComponentName"])
        ]
        return ActionResult({"InferenceComponents": sorted(found, key=lambda c: c["InferenceComponentName"])})

    SageMakerResponse.describe_inference_component = describe_inference_component  # type: ignore[attr-defined]
    SageMakerResponse.list_inference_components = list_inference_components  # type: ignore[attr-defined]
    # The class registers itself: moto's CloudFormation finds models through __subclasses__().
    assert _component_model().cloudformation_type() == "AWS::SageMaker::InferenceComponent"


def _create(backend: Any, name: str, properties: dict[str, Any]) -> dict[str, Any]:
    """CreateInferenceComponent in moto's SageMaker backend, refused as SageMaker refuses it."""
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    endpoint_name = properties["EndpointName"]
    endpoint = backend.endpoints.get(endpoint_name)
    if endpoint is None:
        arn = sm.arn_formatter("endpoint", endpoint_name, backend.account_id, backend.region_name)
        raise ValidationError(message=f"Could not find endpoint '{arn}'.")
    variants = [v["VariantName"] for v in endpoint.production_variants]
    variant = properties.get("VariantName") or variants[0]
    if variant not in variants:
        raise ValidationError(message=f"Variant {variant} is not a variant of endpoint {endpoint_name}.")
    specification = properties.get("Specification", {})
    # Specifications: one entry per instance type of a pooled variant, in place of Specification.
    per_type = properties.get("Specifications") or []
    for entry in [specification, *per_type]:
        backend.validate_production_variants([{"ModelName": entry.get("ModelName")}])
    base = specification.get("BaseInferenceComponentName")
    if base is not None and base not in _components(backend):
        # An adapter extends an existing component (CreateInferenceComponent, BaseInferenceComponentName).
        arn = sm.arn_formatter("inference-component", base, backend.account_id, backend.region_name)
        raise ValidationError(message=f"Could not find inference component '{arn}'.")
    config = backend.endpoint_configs.get(endpoint.endpoint_config_name)
    role = getattr(config, "execution_role_arn", None)
    for entry in [specification, *per_type] if per_type else [specification]:
        problem = component_problem(backend.account_id, backend.region_name, role, name, entry)
        if problem:
            raise ValidationError(message=problem)
    copies = int(properties.get("RuntimeConfig", {}).get("CopyCount", 1))
    now = datetime.now(UTC)
    component = {
        "InferenceComponentName": name,
        "InferenceComponentArn": sm.arn_formatter(
            "inference-component", name, backend.account_id, backend.region_name
        ),
        "EndpointName": endpoint_name,
        "EndpointArn": endpoint.arn,
        "VariantName": variant,
        "Specification": specification,
        **({"Specifications": per_type} if per_type else {}),
        "RuntimeConfig": {"DesiredCopyCount": copies, "CurrentCopyCount": copies},
        "InferenceComponentStatus": "InService",
        "CreationTime": now,
        "LastModifiedTime": now,
    }
    _components(backend)[name] = component
    return component


def _component_model() -> type[EmulatedResource]:
    from moto.core.common_models import CloudFormationModel
    from moto.sagemaker import models as sm
    from moto.sagemaker.exceptions import ValidationError

    class CloudFormationInferenceComponent(EmulatedResource, CloudFormationModel):
        """AWS::SageMaker::InferenceComponent, kept in moto's SageMaker backend."""

        CFN_TYPE = "AWS::SageMaker::InferenceComponent"
        NAME_TYPE = "InferenceComponentName"
        ATTRIBUTES = ("InferenceComponentArn", "InferenceComponentName")

        def __init__(self, component: dict[str, Any]) -> None:
            self.component = component

        @property
        def physical_resource_id(self) -> str:
            return str(self.component["InferenceComponentArn"])

        def attribute(self, name: str) -> Any:
            return self.component[name]

        @classmethod
        def create(
            cls, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationInferenceComponent:
            return cls(_create(sm.sagemaker_backends[account_id][region_name], name, properties))

        @classmethod
        def update(
            cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationInferenceComponent:
            # Updated in place under its name, as SageMaker's UpdateInferenceComponent does.
            backend = sm.sagemaker_backends[account_id][region_name]
            name = original.component["InferenceComponentName"]
            created = original.component["CreationTime"]
            endpoint = backend.endpoints.get(original.component["EndpointName"])
            config = backend.endpoint_configs.get(endpoint.endpoint_config_name) if endpoint else None
            old = original.component["Specification"].get("Container", {}).get("ArtifactUrl")
            new = properties.get("Specification", {}).get("Container", {})
            problem = previous_data_problem(
                account_id,
                getattr(config, "execution_role_arn", None),
                [old] if old else [],
                [new.get("ArtifactUrl")],
            )
            if problem:
                raise ValidationError(message=problem)
            component = _create(backend, name, properties)
            component["CreationTime"] = created
            return cls(component)

        @classmethod
        def remove(cls, physical_id: str, account_id: str, region_name: str) -> None:
            backend = sm.sagemaker_backends[account_id][region_name]
            name = physical_id.rsplit("/", 1)[-1]  # the physical id is the ARN
            _components(backend).pop(name, None)

    return CloudFormationInferenceComponent
