"""moto repairs of CloudFormation itself (the stack engine, not one resource type's adapter).

Part of :data:`smkit.emulator.moto_fixes.FIXES` (each with its reason there and a still-needed test in
tests/deploy/test_moto_fixes.py): custom resources are not run, generated ECR repository names are
lowercase, and an update keeps a parameter moto never stored.
"""

from __future__ import annotations

from typing import Any


def custom_resources_not_run() -> None:
    """Treat ``Custom::*`` resources like any type moto cannot create: not created, reported by reconcile()."""
    from moto.cloudformation import parsing

    original = parsing.resource_class_from_type

    def resource_class_from_type(resource_type: str) -> Any:
        if resource_type.startswith("Custom::") or resource_type == "AWS::CloudFormation::CustomResource":
            return None
        return original(resource_type)

    parsing.resource_class_from_type = resource_class_from_type


def lowercase_generated_repository_names() -> None:
    """Lower-case the name CloudFormation generates for an unnamed ``AWS::ECR::Repository``."""
    from moto.cloudformation import parsing

    original = parsing.generate_resource_name

    def generate_resource_name(resource_type: str, stack_name: str, logical_id: str) -> str:
        name = original(resource_type, stack_name, logical_id)
        return name.lower() if resource_type == "AWS::ECR::Repository" else name

    parsing.generate_resource_name = generate_resource_name


def update_keeps_unknown_previous_parameters() -> None:
    """UpdateStack with ``UsePreviousValue`` for a parameter moto never stored keeps its template default.

    That parameter is the CDK's SSM-typed ``BootstrapVersion``.
    """
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


def _references(node: Any) -> set[str]:
    """Logical ids a template fragment names with Ref or Fn::GetAtt."""
    if isinstance(node, dict):
        if set(node) == {"Ref"} and isinstance(node["Ref"], str):
            return {node["Ref"]}
        if set(node) == {"Fn::GetAtt"}:
            target = node["Fn::GetAtt"]
            return {target[0] if isinstance(target, list) else str(target).split(".")[0]}
        return set().union(*(_references(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_references(v) for v in node)) if node else set()
    return set()


def endpoint_follows_its_config() -> None:
    """An AWS::SageMaker::Endpoint whose EndpointConfig is replaced in an update is updated after it."""
    from moto.cloudformation import parsing

    original = parsing.ResourceMap.build_resource_diff

    def build_resource_diff(
        self: Any, other_template: dict[str, Any], parameters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        diff: dict[str, Any] = original(self, other_template, parameters)
        modified = diff["Modify"]
        for name, resource in other_template["Resources"].items():
            if resource.get("Type") != "AWS::SageMaker::Endpoint" or name in modified or name in diff["Add"]:
                continue
            config = resource.get("Properties", {}).get("EndpointConfigName")
            if _references(config) & set(modified):
                modified.append(name)  # after its config: the update loop runs in list order
        return diff

    parsing.ResourceMap.build_resource_diff = build_resource_diff  # type: ignore[method-assign]
