"""smkit's ``Custom::SageMakerModel`` (a model with additional model data sources, created through CreateModel)
performed inside moto (part of ``moto_fixes.FIXES``).

In AWS a Lambda function answers the custom resource (smkit.cdk.constructs.create_model_handler); moto runs
Lambda only in Docker, so here the same CreateModel request goes to moto's SageMaker backend, under the name the
function gives it (``<ModelNamePrefix>-<12 hex digits of the request's sha256>``): ``DescribeModel`` then returns
the containers with their ``AdditionalModelDataSources``, and ``Fn::GetAtt`` ``ModelName`` / ``ModelArn`` are the
model's. An update makes the new request under the model's old name (on AWS: a new name, and CloudFormation
deletes the old model), since moto would leave the endpoint config naming the deleted one; a delete removes the
model.
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateModel.html
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from smkit.emulator.moto_adapters import create_model
from smkit.emulator.moto_resource import EmulatedResource, route_custom_type

RESOURCE_TYPE = "Custom::SageMakerModel"
PREFIX = "ModelNamePrefix"
NOT_REQUEST = ("ServiceToken", PREFIX)


def model_name(properties: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The model's name and CreateModel's request, from the resource's properties (the function's rule)."""
    request = {k: v for k, v in properties.items() if k not in NOT_REQUEST}
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
    return f"{properties[PREFIX]}-{digest[:12]}", request


def api_model_adapter() -> None:
    """Route ``Custom::SageMakerModel`` to CreateModel in moto's backend (after ``Custom::*`` is disabled)."""
    from moto.core.common_models import CloudFormationModel
    from moto.sagemaker import models as sm

    def backend(account_id: str, region_name: str) -> Any:
        return sm.sagemaker_backends[account_id][region_name]

    class CloudFormationApiModel(EmulatedResource, CloudFormationModel):
        """``Custom::SageMakerModel`` through moto's SageMaker backend."""

        CFN_TYPE = RESOURCE_TYPE
        ATTRIBUTES = ("ModelName", "ModelArn")

        def __init__(self, model: Any) -> None:
            self.model = model

        @property
        def physical_resource_id(self) -> str:
            return str(self.model.model_name)

        def attribute(self, name: str) -> Any:
            return self.model.model_name if name == "ModelName" else self.model.arn

        @classmethod
        def create(
            cls, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationApiModel:
            model_id, request = model_name(properties)
            return cls.made(model_id, request, account_id, region_name)

        @classmethod
        def made(
            cls, model_id: str, request: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationApiModel:
            sagemaker = backend(account_id, region_name)
            if model_id in sagemaker._models:
                return cls(sagemaker._models[model_id])
            return cls(create_model(sagemaker, model_id, request))

        @classmethod
        def update(
            cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationApiModel:
            # moto re-resolves Fn::GetAtt only in resources whose own template text changed, so the endpoint
            # config would keep naming a deleted model: the new request is made under the old name, as
            # moto_adapters.model_update_keeps_its_name does for AWS::SageMaker::Model.
            original.delete(account_id, region_name)
            _, request = model_name(properties)
            return cls.made(original.model.model_name, request, account_id, region_name)

        def delete(self, account_id: str, region_name: str) -> None:
            sagemaker = backend(account_id, region_name)
            if self.model.model_name in sagemaker._models:
                sagemaker.delete_model(self.model.model_name)

    route_custom_type(CloudFormationApiModel)
