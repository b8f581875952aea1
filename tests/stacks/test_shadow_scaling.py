"""Shadow variants follow the production variants' autoscaling and update rules.

A shadow variant is a variant of the same endpoint: UpdateEndpoint refuses to change its instance type or to
remove it while it is a registered scalable target, and RetainAllVariantProperties keeps its current instance
count (https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from stack_support import CONFIG_DIR, SynthesizedApp, shadow_scaled

from smkit.config import ConfigError, parse_config
from smkit.release.instance_type_change import changed_variants


def _rejected(data: dict[str, Any], path: str, *words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test", base_dir=CONFIG_DIR)
    lines = [str(i) for i in caught.value.issues if i.path == path]
    assert lines, f"no issue at {path}: {caught.value}"
    for word in words:
        assert word in lines[0], lines[0]


def test_autoscaled_shadow_variant_is_a_scalable_target_and_counts_are_retained(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template_json("realtime-shadow-scaled")
    resources = template["Resources"].values()
    [endpoint] = [r for r in resources if r["Type"] == "AWS::SageMaker::Endpoint"]
    name = endpoint["Properties"]["EndpointName"]
    targets = [
        r["Properties"] for r in resources if r["Type"] == "AWS::ApplicationAutoScaling::ScalableTarget"
    ]
    endpoint_id = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::SageMaker::Endpoint"][0]
    name_ref = {"Fn::GetAtt": [endpoint_id, "EndpointName"]}
    ids = sorted(map(str, (t["ResourceId"]["Fn::Join"][1] for t in targets)))
    assert ids == sorted(str(["endpoint/", name_ref, f"/variant/{v}"]) for v in ("production", "shadow"))
    assert all(t["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount" for t in targets)
    assert endpoint["Properties"]["RetainAllVariantProperties"] is True
    assert name == synthesized.stacks["realtime-shadow-scaled"].serving.endpoint.endpoint_name


def test_the_deploy_step_pauses_a_shadow_variant_as_a_production_one() -> None:
    """What UpdateEndpoint refuses for a scalable shadow variant (a new instance type, removal) is what the
    deploy step deregisters first (smkit.release.instance_type_change); a new count or model is not."""
    deployed = {"production": "ml.m5.large", "shadow": "ml.m5.large"}
    assert changed_variants(deployed, {"production": "ml.m5.large", "shadow": "ml.c5.large"}) == ["shadow"]
    assert changed_variants(deployed, {"production": "ml.m5.large", "candidate-v2": "ml.m5.large"}) == [
        "shadow"
    ]
    assert changed_variants(deployed, dict(deployed)) == []


def test_fixed_shadow_beside_an_autoscaled_production_variant_is_refused() -> None:
    data = shadow_scaled()
    del data["endpoint"]["shadow_variants"][0]["autoscaling"]
    _rejected(data, "endpoint.shadow_variants[0].autoscaling", "RetainAllVariantProperties", "'shadow'")


def test_autoscaled_shadow_beside_a_fixed_production_variant_is_refused() -> None:
    data = shadow_scaled()
    del data["endpoint"]["variants"][0]["autoscaling"]
    _rejected(data, "endpoint.variants[0].autoscaling", "RetainAllVariantProperties", "'production'")


def test_shadow_autoscaling_gets_the_production_checks() -> None:
    data = shadow_scaled("ml.t2.medium")
    _rejected(data, "endpoint.shadow_variants[0].instance_type", "burstable", "ml.m5.large")
    data = copy.deepcopy(shadow_scaled())
    data["endpoint"]["shadow_variants"][0]["initial_instance_count"] = 5
    _rejected(data, "endpoint.shadow_variants[0].initial_instance_count", "max_capacity (2)")
    data = copy.deepcopy(shadow_scaled())
    data["endpoint"]["shadow_variants"][0]["autoscaling"]["min_capacity"] = 0
    _rejected(data, "endpoint.shadow_variants[0].autoscaling.min_capacity", "only async")
