"""What a platform engineer checks before a first production deploy, one test group per finding:
alarms that reach someone, guardrails that can roll back, configs AWS accepts, updates that succeed."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template
from stack_support import CONFIG_DIR, CONFIG_FILES, SynthesizedApp, cdk_context

from smkit.aws.instances import has_instance_storage
from smkit.aws.limits import ALARM_PERIOD_S
from smkit.cdk.constructs.monitoring import AlarmTopic, Subscriber
from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import ConfigError, parse_config
from smkit.config.resolved import resolve

ALARM = "AWS::CloudWatch::Alarm"
GPU_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-gpu-py312-cu124-ubuntu22.04-sagemaker"


def _raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / name).read_text())
    return data


def _resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _statements(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    out = []
    for r in _resources(template, type_).values():
        out += r["Properties"]["PolicyDocument"]["Statement"]
    return out


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _rejected(data: dict[str, Any], path: str, *words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, source="test")
    lines = [str(i) for i in caught.value.issues if i.path == path]
    assert lines, f"no issue at {path}: {caught.value}"
    for word in words:
        assert word in lines[0], lines[0]


# 1. Alarm notifications can be delivered, and someone is subscribed.


def test_alarm_topic_policy_lets_cloudwatch_publish(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    statements = _statements(template, "AWS::SNS::TopicPolicy")
    publish = [
        s
        for s in statements
        if s["Effect"] == "Allow" and s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert publish, statements
    assert _actions(publish[0]) == ["sns:Publish"]
    assert "aws:SourceAccount" in publish[0]["Condition"]["StringEquals"]


def test_alarm_subscriptions_from_the_config(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime")
    t.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ml-oncall@example.com"}
    )


def test_alarm_subscription_of_another_topic_is_an_alarm_action(tmp_path: Path) -> None:
    data = _raw("realtime.yaml")
    topic = "arn:aws:sns:eu-west-1:123456789012:central-ops"
    data["monitoring"]["subscriptions"] = [
        {"type": "https", "url": "https://events.example.com/sns"},
        {"type": "sns", "topic_arn": topic},
    ]
    t = _synth(data, tmp_path)
    t.has_resource_properties("AWS::SNS::Subscription", {"Protocol": "https"})
    t.has_resource_properties(ALARM, {"AlarmActions": Match.array_with([topic])})


def test_every_alarm_is_one_metric_or_metric_math_as_put_metric_alarm_takes(
    synthesized: SynthesizedApp,
) -> None:
    # PutMetricAlarm's MetricName, Period and MetricDataQuery documentation (smkit/config/prose_reasons.py).
    beside_math = {
        "MetricName",
        "Namespace",
        "Dimensions",
        "Period",
        "Unit",
        "Statistic",
        "ExtendedStatistic",
    }
    math = 0
    for path in CONFIG_FILES:
        for alarm in _resources(synthesized.template_json(path.stem), ALARM).values():
            props = alarm["Properties"]
            assert "Threshold" in props, (path.stem, props)
            if "Metrics" not in props:
                assert props["Period"] == ALARM_PERIOD_S and "MetricName" in props, (path.stem, props)
                assert ("Statistic" in props) != ("ExtendedStatistic" in props), (path.stem, props)
                continue
            math += 1
            assert not beside_math & set(props), (path.stem, props)
            queries = props["Metrics"]
            assert all(("Expression" in q) != ("MetricStat" in q) for q in queries), queries
            assert all(re.fullmatch(r"[a-z][A-Za-z0-9_]*", q["Id"]) for q in queries), queries
            assert {q["MetricStat"]["Period"] for q in queries if "MetricStat" in q} == {ALARM_PERIOD_S}
            assert [q.get("ReturnData", True) for q in queries].count(True) == 1, queries
    assert math, "the error-rate alarms are metric math"


def test_an_alarm_takes_at_most_five_actions() -> None:
    # PutMetricAlarm AlarmActions: at most 5 (botocore's model); the topic itself is one.
    stack = cdk.Stack(cdk.App())
    key = kms.Key(stack, "Key")
    forwarded = [Subscriber("sns", f"arn:aws:sns:us-east-1:123456789012:ops-{i}") for i in range(5)]
    AlarmTopic(stack, "Four", encryption_key=key, subscribers=forwarded[:4])
    with pytest.raises(ValueError, match=r"6 alarm actions .* at most 5 AlarmActions; forward to at most 4"):
        AlarmTopic(stack, "Five", encryption_key=key, subscribers=forwarded)


# 2. Auto-rollback: the role can read the alarms; the alarms are rates of the new fleet, without 4XX.


def test_execution_role_may_describe_the_rollback_alarms_and_put_metrics(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    statements = _statements(template, "AWS::IAM::ManagedPolicy")
    [describe] = [s for s in statements if "cloudwatch:DescribeAlarms" in _actions(s)]
    endpoint = next(iter(_resources(template, "AWS::SageMaker::Endpoint").values()))
    rollback = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    assert len(describe["Resource"]) == len(rollback) == 4
    assert any("cloudwatch:PutMetricData" in _actions(s) for s in statements)


def test_rollback_alarms_watch_the_new_fleet_5xx_rate_and_latency_only(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    alarms = _resources(template, ALARM)
    endpoint = next(iter(_resources(template, "AWS::SageMaker::Endpoint").values()))
    names = endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    for entry in names:
        logical = entry["AlarmName"]["Ref"]
        text = json.dumps(alarms[logical]["Properties"])
        assert "EndpointConfigName" in text, logical
        assert "Invocation4XX" not in text and "ApproximateAge" not in text, logical
        metrics = alarms[logical]["Properties"].get("Metrics")
        if metrics:  # the error alarm is a percentage of requests, not a count
            assert any("100 *" in m.get("Expression", "") for m in metrics)


def test_async_dashboard_graphs_invocations_processed(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("async")
    [dashboard] = _resources(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    assert "InvocationsProcessed" in body
    assert '\\"Invocations\\"' not in body


# 4. The config refuses what AWS refuses, naming field, value, limit and fix.


def test_too_many_rollback_alarms_are_refused() -> None:
    data = _raw("realtime.yaml")
    data["endpoint"]["variants"] = [{"name": f"v{i}", "instance_type": "ml.m5.large"} for i in range(6)]
    _rejected(
        data, "endpoint.deployment.auto_rollback", "12 rollback alarms", "at most 10", "auto_rollback: false"
    )


@pytest.mark.parametrize(
    "field,value,words",
    [
        ("canary_size_percent", 60, ("at most 50%", "e.g. 10")),
        ("linear_step_percent", 5, ("10-50%", "e.g. 20")),
        ("linear_step_percent", 60, ("10-50%",)),
    ],
)
def test_traffic_shift_sizes_outside_the_documented_range(
    field: str, value: int, words: tuple[str, ...]
) -> None:
    data = _raw("realtime.yaml")
    d = data["endpoint"]["deployment"]
    d.pop("canary_size_percent")
    d["strategy"] = "canary" if field.startswith("canary") else "linear"
    d[field] = value
    _rejected(data, f"endpoint.deployment.{field}", *words, "trafficroutingconfig")


def test_execution_timeout_shorter_than_the_waits() -> None:
    data = _raw("realtime.yaml")
    d = data["endpoint"]["deployment"]
    d["wait_interval_seconds"] = 1800
    d["max_execution_timeout_seconds"] = 3600  # canary: 2 x 1800 + 120 of termination wait
    _rejected(data, "endpoint.deployment.max_execution_timeout_seconds", "3720 s", "raise it above 3720")


def test_kms_alias_arn_is_refused() -> None:
    data = _raw("realtime.yaml")
    data["security"] = {"kms": {"key_arn": "arn:aws:kms:eu-west-1:123456789012:alias/ml"}}
    _rejected(data, "security.kms.key_arn", "alias", "key ARN")


@pytest.mark.parametrize("instance_type", ["ml.trn2.48xlarge", "ml.p6-b200.48xlarge", "ml.g6e.xlarge"])
def test_instance_storage_families(instance_type: str) -> None:
    assert has_instance_storage(instance_type)


def test_hyphenated_and_trainium_instance_types_are_accepted_and_autoscale() -> None:
    data = _raw("realtime.yaml")
    data["image"] = {"source": "dlc", "uri": GPU_IMAGE}  # accelerator instances need an accelerator image
    data["endpoint"]["variants"][0]["instance_type"] = "ml.p6-b200.48xlarge"
    data["endpoint"]["variants"][1]["instance_type"] = "ml.trn1.2xlarge"
    parse_config(data, source="test")


def test_burstable_instances_still_cannot_autoscale() -> None:
    data = _raw("realtime.yaml")
    data["endpoint"]["variants"][1]["instance_type"] = "ml.t2.medium"
    _rejected(data, "endpoint.variants[1].instance_type", "burstable", "ml.m5.large")


# 5. Day-2 updates: an instance-type change keeps the endpoint's name (the deploy step deregisters and
# re-registers its scalable target, tests/deploy/test_day2_update.py); a switch between serverless and
# instance-based endpoints is a new name; counts follow the config.


def test_endpoint_name_is_stable_across_instance_types_and_carries_the_serverless_kind(
    synthesized: SynthesizedApp,
) -> None:
    realtime = synthesized.stacks["realtime"].serving.endpoint.endpoint_name
    serverless = synthesized.stacks["serverless"].serving.endpoint.endpoint_name
    assert serverless.endswith("-serverless") and len(serverless) <= 63
    assert not realtime.endswith("-serverless")
    base = parse_config(_raw("realtime.yaml"), source="base")
    changed = _raw("realtime.yaml")
    changed["endpoint"]["variants"][1]["instance_type"] = "ml.c5.xlarge"
    assert resolve(base, CONFIG_DIR).endpoint_kind is None
    assert resolve(parse_config(changed, source="changed"), CONFIG_DIR).endpoint_kind is None
    assert resolve(synthesized.configs["serverless"], Path.cwd()).endpoint_kind == "serverless"


def test_the_same_deployment_as_realtime_and_serverless_has_two_endpoint_names(tmp_path: Path) -> None:
    """The name is the construct path plus the kind: one deployment switched between the two types gets a
    new endpoint (CloudFormation replaces it), never an in-place update SageMaker refuses."""
    from smkit.cdk.constructs.endpoint import DeploymentGuardrails, InferenceEndpoint
    from smkit.cdk.constructs.endpoint_config import EndpointConfiguration

    names = []
    for kind in (None, "serverless", None):
        stack = cdk.Stack(cdk.App(outdir=str(tmp_path / str(kind))), "TabularDevServing")
        config = EndpointConfiguration.from_endpoint_config_name(stack, "Config", "config")
        endpoint = InferenceEndpoint(
            stack, "Endpoint", endpoint_config=config, deployment=DeploymentGuardrails(), kind=kind
        )
        names.append(endpoint.endpoint_name)
    assert names[0] == names[2] != names[1]
    assert names[1] == f"{names[0]}-serverless"


def test_fixed_instance_counts_are_not_retained(synthesized: SynthesizedApp) -> None:
    # multi-container's variant does not autoscale: a new initial_instance_count must apply on update.
    t = synthesized.template("multi-container")
    t.has_resource_properties("AWS::SageMaker::Endpoint", {"RetainAllVariantProperties": False})
    synthesized.template("realtime").has_resource_properties(
        "AWS::SageMaker::Endpoint", {"RetainAllVariantProperties": True}
    )


def test_mixing_autoscaled_and_fixed_variants_is_refused() -> None:
    data = _raw("realtime.yaml")
    del data["endpoint"]["variants"][1]["autoscaling"]
    _rejected(data, "endpoint.variants[1].autoscaling", "RetainAllVariantProperties", "min_capacity: 1")


# 6. ECR: no rule expires a tagged image (production's, or a recorded release's).


def test_ecr_lifecycle_expires_only_untagged_images(synthesized: SynthesizedApp) -> None:
    [repository] = _resources(synthesized.template_json("realtime", "ecr"), "AWS::ECR::Repository").values()
    rules = json.loads(repository["Properties"]["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert [r["selection"]["tagStatus"] for r in rules] == ["untagged"]


# 7. Storage: enough /tmp for the copy handler; the data bucket expires what the config says.


def test_model_set_copy_handler_gets_ephemeral_storage(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("multi-model")
    t.has_resource_properties("AWS::Lambda::Function", {"EphemeralStorage": {"Size": Match.any_value()}})


def test_data_bucket_lifecycle(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("async")
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like({"NoncurrentVersionExpiration": {"NoncurrentDays": 30}}),
                        Match.object_like({"Prefix": "async/input/", "ExpirationInDays": 7}),
                    ]
                )
            }
        },
    )


def test_lifecycle_of_a_prefix_the_deployment_does_not_write_is_refused() -> None:
    data = _raw("realtime.yaml")
    data["storage"] = {"expire_days": {"models": 30}}
    _rejected(data, "storage.expire_days.models", "data-capture", "rollbacks")


# 8. Acknowledgements name the statement they cover.


def test_star_acknowledgement_is_only_on_single_statement_policies(synthesized: SynthesizedApp) -> None:
    role = synthesized.stacks["realtime-byo"].serving.execution_role
    covered = []
    for construct in role.node.find_all():
        acks = [m.data for m in construct.node.metadata if "acknowledg" in m.type.lower()]
        if any("IAM5[Resource::*]" in json.dumps(a) for a in acks):
            covered.append(construct.node.id)
            policy = construct.node.default_child
            resolved = cdk.Stack.of(role).resolve(policy.policy_document)  # type: ignore[union-attr]
            assert len(resolved["Statement"]) == 1, construct.node.path
            assert construct is not role and construct is not role.policy
    assert sorted(covered) == ["Metrics", "RegistryLogin", "VpcDescribe"]


# 9. Logs: the endpoint's group exists first, with retention and the key; notifications carry no payload.


def test_endpoint_log_group_has_retention_and_key(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    stack = synthesized.stacks["realtime"].serving
    groups = _resources(template, "AWS::Logs::LogGroup")
    [(logical, group)] = [
        (k, g)
        for k, g in groups.items()
        if g["Properties"].get("LogGroupName") == f"/aws/sagemaker/Endpoints/{stack.endpoint.endpoint_name}"
    ]
    assert group["Properties"]["RetentionInDays"] == 90
    assert group["Properties"]["KmsKeyId"]
    [endpoint] = _resources(template, "AWS::SageMaker::Endpoint").values()
    assert logical in endpoint["DependsOn"]


def test_copy_handler_logs_expire(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("multi-model")
    [function] = [
        f
        for f in _resources(template, "AWS::Lambda::Function").values()
        if "LoggingConfig" in f["Properties"]
    ]
    logical = function["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert template["Resources"][logical]["Properties"]["RetentionInDays"] == 90


def test_log_retention_must_be_a_cloudwatch_period() -> None:
    data = _raw("realtime.yaml")
    data["monitoring"]["log_retention_days"] = 100
    _rejected(data, "monitoring.log_retention_days", "e.g. 90", "PutRetentionPolicy")


# 10. Image sources: no repository stack for DLC images; no image from another region.


def test_dlc_only_config_has_no_repository_stack(synthesized: SynthesizedApp) -> None:
    assert synthesized.stacks["async-prefix"].ecr is None


def test_dlc_image_region_is_asserted_when_the_config_names_no_region(synthesized: SynthesizedApp) -> None:
    rules = synthesized.template_json("async-prefix")["Rules"]
    [rule] = [r for name, r in rules.items() if name.endswith("Region")]
    [assertion] = rule["Assertions"]
    assert assertion["Assert"] == {"Fn::Equals": [{"Ref": "AWS::Region"}, "eu-west-1"]}


def test_dlc_image_from_another_region_is_refused() -> None:
    data = _raw("realtime.yaml")
    data["region"] = "us-east-1"
    data["image"] = {"source": "dlc", "uri": "683313688378.dkr.ecr.eu-west-1.amazonaws.com/sklearn:1.2-1"}
    _rejected(data, "image.uri", "eu-west-1", "us-east-1")


# 11. The realtime example names its variants for what they are, and both autoscale.


def test_realtime_variants_are_named_for_their_instances_and_both_autoscale(
    synthesized: SynthesizedApp,
) -> None:
    variants = synthesized.configs["realtime"].endpoint.variants
    assert [v.name for v in variants] == ["general-purpose", "compute-optimized"]
    assert all(v.autoscaling is not None for v in variants)


def _synth(data: dict[str, Any], outdir: Path) -> Template:
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    cfg = parse_config(copy.deepcopy(data), source="test", base_dir=CONFIG_DIR)
    stacks = add_serving_stacks(app, deployment=resolve(cfg, Path.cwd()))
    return Template.from_stack(stacks.serving)


# 6. Model copies: superseded ones expire, what a live model uses never does.


def test_superseded_model_copies_expire_by_tag_only(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    buckets = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::S3::Bucket"
        and "BucketEncryption" in r["Properties"]
        and "aws:kms" in json.dumps(r["Properties"]["BucketEncryption"])
    ]
    [rule] = [
        rule
        for b in buckets
        for rule in b["LifecycleConfiguration"]["Rules"]
        if rule["Id"] == "SupersededModelCopies"
    ]
    # Only objects the deploy step tagged (no live model, no recorded release uses them) expire; a live
    # model's copy is never tagged (smkit.release.model_copies, tests/deploy/test_model_copies.py).
    assert rule == {
        "Id": "SupersededModelCopies",
        "Status": "Enabled",
        "ExpirationInDays": 30,
        "Prefix": "models/",
        "TagFilters": [{"Key": "smkit:superseded", "Value": "true"}],
    }
