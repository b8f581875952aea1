"""moto's server with the repairs its CloudFormation adapters need for this kit's templates.

Run as ``python -m smkit.emulator.moto_fixes -H 127.0.0.1 -p PORT`` (what :class:`MotoServer` starts): it
applies every entry of :data:`FIXES`, then hands over to ``moto.server.main``, so the emulator is moto's
own server and its own SageMaker backend. A fix only carries template properties into moto's backend
where moto's CloudFormation adapter drops or mis-requires them; it never invents a result.

Each fix is tested to be still needed (tests/deploy/test_moto_fixes.py): when a moto release repairs the
adapter itself, that test fails and the fix goes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Fix:
    """One repair: the CloudFormation type it touches, why, and the function that applies it."""

    resource_type: str
    reason: str
    apply: Callable[[], None]


def _sagemaker_model_from_template() -> None:
    from moto.sagemaker import models as sm

    def create_from_cloudformation_json(
        cls: type[sm.Model],
        resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> sm.Model:
        properties = cloudformation_json["Properties"]
        model = sm.sagemaker_backends[account_id][region_name].create_model(
            model_name=resource_name,
            execution_role_arn=properties["ExecutionRoleArn"],
            primary_container=properties.get("PrimaryContainer"),
            vpc_config=properties.get("VpcConfig", {}),
            containers=properties.get("Containers", []),
            tags=properties.get("Tags", []),
        )
        model.enable_network_isolation = bool(properties.get("EnableNetworkIsolation", False))
        if "InferenceExecutionConfig" in properties:
            # BaseObject.gen_response_object turns attributes into DescribeModel keys.
            setattr(model, "inference_execution_config", properties["InferenceExecutionConfig"])  # noqa: B010
        return model

    patched = classmethod(create_from_cloudformation_json)
    sm.Model.create_from_cloudformation_json = patched  # type: ignore[assignment,method-assign]


def _custom_resources_not_run() -> None:
    from moto.cloudformation import parsing

    original = parsing.resource_class_from_type

    def resource_class_from_type(resource_type: str) -> Any:
        if resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource":
            # Same path as any type moto cannot emulate: logged, not created, reported by reconcile().
            return None
        return original(resource_type)

    parsing.resource_class_from_type = resource_class_from_type


FIXES: tuple[Fix, ...] = (
    Fix(
        resource_type="AWS::SageMaker::Model",
        reason=(
            "moto 5.2 requires PrimaryContainer, but a multi-container model (Serial or Direct) has only "
            "Containers; and it drops EnableNetworkIsolation and InferenceExecutionConfig, which its own "
            "DescribeModel can return. https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/"
            "aws-resource-sagemaker-model.html"
        ),
        apply=_sagemaker_model_from_template,
    ),
    Fix(
        resource_type="Custom::*",
        reason=(
            "moto runs the Lambda behind a custom resource only inside Docker; without a Docker engine the "
            "function never answers and the stack stays CREATE_IN_PROGRESS forever. Custom resources are "
            "therefore treated like any type moto cannot create: not created, and listed with their reason "
            "in smkit.emulator.inventory.MOTO_SKIPS, so a deploy reports them instead of hanging."
        ),
        apply=_custom_resources_not_run,
    ),
)


def apply_fixes() -> None:
    """Apply every fix in :data:`FIXES` to the moto modules loaded in this process."""
    for fix in FIXES:
        fix.apply()


def main(argv: list[str] | None = None) -> None:
    """Apply the fixes, then run ``moto.server.main`` with the same arguments as ``moto_server``."""
    apply_fixes()
    from moto.server import main as moto_main

    moto_main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    main()
