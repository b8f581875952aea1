"""docs/aws-rules.md is what smkit/config/rule_doc.py renders for the session's templates of config/*.yaml."""

from __future__ import annotations

from stack_support import CONFIG_FILES, ROOT, SynthesizedApp

from smkit.aws import cfn_api
from smkit.config.rule_doc import (
    NONE_FOUND,
    emitted,
    model_limits,
    property_paths,
    render,
    rows_for,
    schema_limits,
)
from smkit.config.rule_table import ROWS


def test_committed_aws_rules_doc_is_current(synthesized: SynthesizedApp) -> None:
    templates = [synthesized.template_json(path.stem) for path in CONFIG_FILES]
    expected = render(emitted(templates))
    committed = (ROOT / "docs" / "aws-rules.md").read_text(encoding="utf-8")
    assert committed == expected, "docs/aws-rules.md is out of date: python -m smkit.cdk.rules_doc"


def test_every_row_names_its_page_check_and_test() -> None:
    assert len({r.id for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r.url.startswith("https://") and r.check and r.test and r.applies, r.id


def test_property_paths_and_row_matching() -> None:
    properties = {
        "ProductionVariants": [
            {"VariantName": "a", "VolumeSizeInGB": 10, "ModelName": {"Fn::GetAtt": ["M", "N"]}}
        ],
        "KmsKeyId": {"Ref": "Key"},
        "PrimaryContainer": {"Environment": {"A": "1", "B": "2"}},
    }
    assert property_paths(properties) == {
        "ProductionVariants[].VariantName",
        "ProductionVariants[].VolumeSizeInGB",
        "ProductionVariants[].ModelName",
        "KmsKeyId",
        "PrimaryContainer.Environment",
    }
    ec = "AWS::SageMaker::EndpointConfig"
    assert [r.id for r in rows_for(ec, "ProductionVariants[].VolumeSizeInGB")] == ["instance-store-volume"]
    assert rows_for(ec, "ProductionVariants[].VariantName") == []
    assert NONE_FOUND in render(
        {ec: {"ProductionVariants[].VariantName"}}, limits_of=lambda *_: "", model_of=lambda *_: ""
    )


def test_schema_limits_come_from_the_cloudformation_schema() -> None:
    """The limits column is the registry schema cfn-lint ships, resolved through $ref and list items."""
    ic, ep = "AWS::SageMaker::InferenceComponent", "AWS::SageMaker::Endpoint"
    assert schema_limits(ic, "Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalance") == "0-100"
    timeout = "DeploymentConfig.BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds"
    assert schema_limits(ep, timeout) == "600-28800"
    types = schema_limits("AWS::SageMaker::EndpointConfig", "ProductionVariants[].InstanceType")
    assert types.startswith("one of ml.") and "(+" in types  # the enum, the first 8 shown
    assert schema_limits(ic, "No.Such.Property") == ""
    doc = render({ic: {"Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalance"}})
    assert (
        "| 0-100 | `sagemaker InferenceComponentAvailabilityZoneBalance.MaxImbalance`: 0-100 | az-balance |"
        in doc
    )


def test_every_emitted_property_of_the_api_mapped_types_resolves_to_a_member(
    synthesized: SynthesizedApp,
) -> None:
    """Each property the templates emit for a resource type with an API request is a member of that request
    (walked through nested structures and lists), or is listed with the reason it has none; over the
    templates of every config of the session, shipped and derived."""
    by_type = emitted(synthesized.template_json(case) for case in synthesized.configs)
    unresolved, without = [], set()
    for resource_type, (service, _) in cfn_api.REQUESTS.items():
        for path in sorted(by_type.get(resource_type, ())):
            if cfn_api.no_counterpart(resource_type, path) is not None:
                without.add((resource_type, path.split("[]")[0].split(".")[0]))
                assert cfn_api.api_member(resource_type, path) is None
                continue
            found = cfn_api.api_member(resource_type, path)
            if found is None:
                unresolved.append((resource_type, path))
            else:
                assert found.constraint.service == service
                assert found.constraint.member == path.rsplit(".", 1)[-1].removesuffix("[]"), (
                    resource_type,
                    path,
                )
    assert unresolved == []
    assert without == set(cfn_api.NO_COUNTERPART), "an entry of NO_COUNTERPART names nothing the stacks emit"


def test_known_properties_map_to_their_api_members() -> None:
    ec, ic, ep = (
        "AWS::SageMaker::EndpointConfig",
        "AWS::SageMaker::InferenceComponent",
        "AWS::SageMaker::Endpoint",
    )
    count = cfn_api.api_member(ec, "ProductionVariants[].InitialInstanceCount")
    assert count is not None and count.name == "sagemaker ProductionVariant.InitialInstanceCount"
    assert count.constraint.min == 1 and count.kind == "integer"
    assert model_limits(ec, "ProductionVariants[].InitialInstanceCount").endswith(": min 1")
    assert model_limits(ec, "ProductionVariants[].ServerlessConfig.MemorySizeInMB") == (
        "`sagemaker ProductionVariantServerlessConfig.MemorySizeInMB`: 1024-6144"
    )
    timeout = "DeploymentConfig.BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds"
    assert (
        model_limits(ep, timeout)
        == "`sagemaker BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds`: 600-28800"
    )
    # Only on UpdateEndpoint / UpdateInferenceComponent: the update request is tried after the create request.
    retained = cfn_api.api_member(ep, "ExcludeRetainedVariantProperties[].VariantPropertyType")
    assert retained is not None and retained.name == "sagemaker VariantProperty.VariantPropertyType"
    assert retained.constraint.enum and model_limits(ep, "RetainAllVariantProperties").endswith("no limits")
    batch = cfn_api.api_member(ic, "DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Value")
    assert batch is not None and batch.name == "sagemaker InferenceComponentCapacitySize.Value"
    assert model_limits(ic, "Specification.ModelName").startswith(
        "`sagemaker InferenceComponentSpecification.ModelName`"
    )
    assert (
        model_limits("AWS::CloudWatch::Alarm", "AlarmActions")
        == "`cloudwatch PutMetricAlarmInput.AlarmActions`: items max 5"
    )
    assert model_limits("AWS::SageMaker::Model", "PrimaryContainer.Environment").endswith(": entries 0-100")
    capacity = cfn_api.api_member("AWS::ApplicationAutoScaling::ScalableTarget", "MinCapacity")
    assert (
        capacity is not None
        and capacity.name == "application-autoscaling RegisterScalableTargetRequest.MinCapacity"
    )
    assert model_limits("AWS::ApplicationAutoScaling::ScalingPolicy", "ScalingTargetId").startswith(
        "no API member: "
    )
    assert cfn_api.api_member(ec, "ProductionVariants[].NoSuchMember") is None
    assert model_limits("AWS::IAM::Role", "RoleName") == ""
    doc = render({ec: {"ProductionVariants[].InitialInstanceCount"}}, limits_of=lambda *_: "")
    assert "| `sagemaker ProductionVariant.InitialInstanceCount`: min 1 | capacity-available |" in doc
    assert (
        "1 mapped to an API member, 0 without one" in doc
        and "with limits from the API's service model: 1" in doc
    )


def test_where_schema_and_model_disagree_the_kit_checks_the_stricter() -> None:
    import re

    from smkit.aws import limits, patterns
    from smkit.config.rule_doc import disagreements

    # EndpointName: CloudFormation's schema 1-64 characters, CreateEndpoint's model 0-63: 1-63 holds.
    assert disagreements("AWS::SageMaker::Endpoint", "EndpointName") == [
        ("min", 1, 0, 1),
        ("max", 64, 63, 63),
    ]
    assert limits.MAX_NAME_LENGTH == 63
    name = re.compile(patterns.AWS_NAME)
    assert not name.match("") and name.match("a" * 63) and not name.match("a" * 64)
    # A component's rolling batch: only the model sets a minimum (1), which the config's batch_copies keeps.
    path = "DeploymentConfig.RollingUpdatePolicy.MaximumBatchSize.Value"
    assert disagreements("AWS::SageMaker::InferenceComponent", path) == [("min", None, 1, 1)]
    assert limits.MIN_CAPACITY_SIZE == 1
    # The same bounds on both sides: nothing to report.
    assert disagreements("AWS::SageMaker::EndpointConfig", "ProductionVariants[].VolumeSizeInGB") == []
    doc = render({"AWS::SageMaker::Endpoint": {"EndpointName"}})
    assert "| AWS::SageMaker::Endpoint | `EndpointName` | max | 64 | 63 | 63 |" in doc
    assert "- bounds where the schema and the model disagree: 2 (the stricter listed above)" in doc
