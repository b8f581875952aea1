"""The 2026 observability settings in the templates (docs/observability.md): MetricsConfig on every endpoint
config with each value explicit, ContainerMetricsConfig where a component's container serves its metrics on
a path of its own (and that container's runtime is told to serve them there), opt-in core dumps and SSM
access. The session's app is synthesized under cdk-nag (tests/stacks/conftest.py) and linted with cfn-lint
(tests/stacks/test_cfn_lint.py); these configs are part of it."""

from __future__ import annotations

import pytest
import yaml
from aws_cdk.assertions import Match
from stack_support import CONFIG_DIR, SUPPLIED_KEY, SynthesizedApp

from smkit.cdk.constructs.inference_component import MetricsEndpoint
from smkit.config.endpoint import EndpointSpec
from smkit.config.loader import ConfigError, parse_config


def _resources(app: SynthesizedApp, case: str, kind: str) -> list[dict]:
    template = app.template_json(case)
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def test_every_endpoint_config_has_metrics_config_with_each_value_explicit(
    synthesized: SynthesizedApp,
) -> None:
    seen = 0
    for case in synthesized.stacks:
        for props in _resources(synthesized, case, "AWS::SageMaker::EndpointConfig"):
            expected = (
                {
                    "EnableDetailedObservability": True,
                    "EnableEnhancedMetrics": True,
                    "MetricPublishFrequencyInSeconds": 10,
                }
                if case == "components-observed"
                else {
                    "EnableDetailedObservability": True,
                    "EnableEnhancedMetrics": False,
                    "MetricPublishFrequencyInSeconds": 60,
                }
            )
            assert props["MetricsConfig"] == expected, case
            seen += 1
    assert seen >= len(synthesized.stacks)


def test_the_config_default_is_aws_default_for_a_new_endpoint_configuration() -> None:
    metrics = EndpointSpec(type="realtime").metrics
    assert (metrics.detailed_observability, metrics.enhanced_metrics, metrics.publish_frequency_seconds) == (
        True,
        False,
        60,
    )


def test_a_component_with_its_own_metrics_path_gets_container_metrics_config(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template("components-observed")
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "Specification": Match.object_like(
                {
                    "Container": {
                        "ContainerMetricsConfig": {
                            "MetricsEndpoints": [
                                {
                                    "MetricsEndpointPath": "/server/metrics",
                                    "MetricPublishFrequencyInSeconds": 10,
                                }
                            ]
                        }
                    }
                }
            )
        },
    )
    specs = [
        p["Specification"]
        for p in _resources(synthesized, "components-observed", "AWS::SageMaker::InferenceComponent")
    ]
    assert sum("Container" in s for s in specs) == 1  # only the component with a path of its own
    # Local must mean AWS: the container that component runs serves its metrics on that path.
    models = _resources(synthesized, "components-observed", "AWS::SageMaker::Model")
    paths = [
        c.get("Environment", {}).get("SMKIT_METRICS_PATH")
        for m in models
        for c in ([m["PrimaryContainer"]] if "PrimaryContainer" in m else m.get("Containers", []))
    ]
    assert sorted(p for p in paths if p) == ["/server/metrics"]


def test_core_dumps_go_to_the_data_bucket_with_the_key_and_the_role_may_write_them(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template("realtime-byo")
    variant = _resources(synthesized, "realtime-byo", "AWS::SageMaker::EndpointConfig")[0][
        "ProductionVariants"
    ][0]
    assert variant["EnableSSMAccess"] is True
    dump = variant["CoreDumpConfig"]
    assert dump["KmsKeyId"] == SUPPLIED_KEY  # the deployment's key, as for capture and async output
    joined = dump["DestinationS3Uri"]["Fn::Join"][1]
    assert joined[0] == "s3://" and joined[-1] == "/crashes"
    policies = template.find_resources("AWS::IAM::Policy")
    policies.update(template.find_resources("AWS::IAM::ManagedPolicy"))
    text = str(policies)
    assert "/crashes/*" in text and "s3:PutObject" in text


def test_no_core_dumps_or_ssm_unless_asked(synthesized: SynthesizedApp) -> None:
    for props in _resources(synthesized, "realtime", "AWS::SageMaker::EndpointConfig"):
        for variant in props["ProductionVariants"]:
            assert "CoreDumpConfig" not in variant and "EnableSSMAccess" not in variant


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"publish_frequency_seconds": 15},
            "endpoint.metrics.publish_frequency_seconds",
        ),
    ],
)
def test_a_bad_metrics_setting_names_its_path(change: dict, message: str) -> None:
    data = yaml.safe_load((CONFIG_DIR / "realtime.yaml").read_text())
    data["endpoint"]["metrics"] = change
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test", base_dir=CONFIG_DIR)
    assert message in str(caught.value) and "15" in str(caught.value)


def test_a_bad_metrics_path_names_its_path() -> None:
    data = yaml.safe_load((CONFIG_DIR / "inference-components.yaml").read_text())
    data["endpoint"]["inference_components"]["components"][0]["metrics_path"] = "metrics?x=1"
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test", base_dir=CONFIG_DIR)
    assert "endpoint.inference_components.components[0].metrics_path" in str(caught.value)
    assert "metrics?x=1" in str(caught.value)


def test_an_adapter_takes_no_metrics_path() -> None:
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    components = data["endpoint"]["inference_components"]["components"]
    adapter = next(i for i, c in enumerate(components) if c.get("base_component"))
    components[adapter]["metrics_path"] = "/server/metrics"
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test", base_dir=CONFIG_DIR)
    assert (
        f"endpoint.inference_components.components[{adapter}].metrics_path: '/server/metrics': an adapter runs"
        in str(caught.value)
    )


def test_a_component_metrics_endpoint_refuses_a_frequency_sagemaker_does_not_publish_at() -> None:
    assert MetricsEndpoint("/metrics", 30).publish_frequency_seconds == 30
    with pytest.raises(
        ValueError, match=r"publish_frequency_seconds=45: SageMaker accepts 10, 30, 60, .*use one"
    ):
        MetricsEndpoint("/metrics", 45)
