"""moto's server (with smkit.emulator's repairs) plus the two repairs a CloudFormation stack *update* needs.

deploy -> deploy -> rollback updates the serving stack in place, which the emulated deploy of the stacks
(create, then destroy) never does. moto 5.2 breaks on two points of an update:

- UpdateStack with ``UsePreviousValue`` for a parameter moto did not store (the CDK's ``BootstrapVersion``,
  an SSM-typed parameter) raises KeyError; CloudFormation keeps the previous (or default) value.
- ``AWS::SageMaker::Model``: moto replaces a changed model under a new name, as CloudFormation does, but it
  decides what to update by comparing raw templates, so the EndpointConfig whose ``Fn::GetAtt ModelName``
  now resolves to the new name is left pointing at the deleted model. CloudFormation would update it and
  the Endpoint. The repair recreates the model under its old name instead: the endpoint then runs the new
  image, which is what the release tests observe (DescribeEndpoint -> DescribeEndpointConfig -> DescribeModel).
  https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html

Run as ``python -m tests.ci.moto_updates -H 127.0.0.1 -p PORT`` (same arguments as ``moto_server``).
``test_moto_still_needs_the_update_repairs`` fails once a moto release makes them unnecessary.
"""

from __future__ import annotations

import sys
from typing import Any


def previous_parameters() -> None:
    """UsePreviousValue of a parameter moto never stored falls back to the template default."""
    from moto.cloudformation.models import CloudFormationBackend

    original = CloudFormationBackend._resolve_update_parameters

    def resolve(self: CloudFormationBackend, instance: Any, incoming_params: list[dict[str, Any]]) -> Any:
        known = [
            p
            for p in incoming_params
            if not p.get("UsePreviousValue", False) or p["ParameterKey"] in instance.parameters
        ]
        return original(self, instance, known)

    CloudFormationBackend._resolve_update_parameters = resolve  # type: ignore[method-assign]


def model_replacement() -> None:
    """An update of AWS::SageMaker::Model recreates it (same name) from the new template."""
    from moto.sagemaker import models as sm

    def update(
        cls: type[sm.Model],
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> sm.Model:
        name = original_resource.model_name
        sm.sagemaker_backends[account_id][region_name].delete_model(name)
        return cls.create_from_cloudformation_json(name, cloudformation_json, account_id, region_name)

    sm.Model.update_from_cloudformation_json = classmethod(update)  # type: ignore[assignment,method-assign]


def main(argv: list[str]) -> None:
    from moto.server import main as moto_main

    from smkit.emulator.moto_fixes import apply_fixes

    apply_fixes()
    previous_parameters()
    model_replacement()
    moto_main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
