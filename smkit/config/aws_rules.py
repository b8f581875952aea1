"""Rules of a deployment config that come from AWS documentation pages: one place, each with its page.

Each rule is a pure function ``(cfg) -> Iterable[Issue]`` like those in :mod:`smkit.config.rules`; the
loader applies both tables. Every message names the limit, the fix and the page. The stacks import the tables here
(:func:`rollback_alarm_count`) instead of keeping their own copies; AWS's numbers (instance hardware, limits)
come from :mod:`smkit.aws`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from smkit.aws.instances import (
    VARIANT_URL,
    accelerator,
    has_instance_storage,
    hosting_instance_types,
    is_burstable,
    volume_message,
)
from smkit.aws.limits import (
    CANARY_MAX_PERCENT,
    LINEAR_PERCENT,
    LOG_RETENTION_DAYS,
    MAX_ALARM_ACTIONS,
    MAX_EXECUTION_TIMEOUT,
    MAX_ROLLBACK_ALARMS,
)
from smkit.aws.patterns import IMAGE_REGION, KMS_ALIAS
from smkit.config.channel_rules import channels
from smkit.config.components import ShadowVariant
from smkit.config.endpoint import POOL_URL, POOLS_URL, Deployment, Variant
from smkit.config.model_data_rules import model_package_data, s3_model_data
from smkit.config.models import DeploymentConfig, variant_paths
from smkit.config.rules import Issue, Rule, set_fields

# Rollback alarms per instance variant: 5XX error rate and p99 latency of the new fleet.
ROLLBACK_ALARMS_PER_VARIANT = 2
TRAFFIC_ROUTING_URL = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/"
    "aws-properties-sagemaker-endpoint-trafficroutingconfig.html"
)
# MaximumExecutionTimeoutInSeconds must exceed the total of TerminationWaitInSeconds and the waits; it is
# 600-28800 (botocore's BlueGreenUpdatePolicy member and the CloudFormation schema of AWS::SageMaker::Endpoint).
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_BlueGreenUpdatePolicy.html
BLUE_GREEN_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_BlueGreenUpdatePolicy.html"
# Instance pools: "Instance pools support both real-time and asynchronous inference endpoints. You can use them
# with single-model endpoints and with inference components." (POOLS_URL)
POOL_ENDPOINT_TYPES = ("realtime", "async", "inference-components")
POOLS_SENTENCE = "Instance pools support both real-time and asynchronous inference endpoints"
# Burstable ml.t2/ml.t3 instances cannot be scalable targets (ml.trn* can).
# https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-prerequisites.html
AUTOSCALING_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-prerequisites.html"
# SageMaker pulls an image only from an ECR registry in the endpoint's own region.
# https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-containers-inference-private.html
# Aliases in IAM policy and key policy statements match nothing: use the key ARN.
# https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html


def rollback_alarm_count(cfg: DeploymentConfig) -> int:
    """How many alarms the stacks attach to the endpoint's AutoRollbackConfiguration."""
    if not (cfg.monitoring.alarms and cfg.endpoint.deployment.auto_rollback):
        return 0
    variants = 1 if cfg.endpoint.type == "serverless" else len(cfg.endpoint.variants)
    return ROLLBACK_ALARMS_PER_VARIANT * variants


def rollback_alarms(cfg: DeploymentConfig) -> Iterable[Issue]:
    n = rollback_alarm_count(cfg)
    if n > MAX_ROLLBACK_ALARMS:
        yield Issue(
            "endpoint.deployment.auto_rollback",
            True,
            f"{len(cfg.endpoint.variants)} variants need {n} rollback alarms "
            f"({ROLLBACK_ALARMS_PER_VARIANT} per variant), but AutoRollbackConfig takes at most "
            f"{MAX_ROLLBACK_ALARMS}; use at most {MAX_ROLLBACK_ALARMS // ROLLBACK_ALARMS_PER_VARIANT} variants or "
            "set auto_rollback: false (https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
            "API_AutoRollbackConfig.html)",
        )


def traffic_shift_sizes(cfg: DeploymentConfig) -> Iterable[Issue]:
    d = cfg.endpoint.deployment
    if d.canary_size_percent is not None and d.canary_size_percent > CANARY_MAX_PERCENT:
        yield Issue(
            "endpoint.deployment.canary_size_percent",
            d.canary_size_percent,
            f"the canary may be at most {CANARY_MAX_PERCENT}% of the new fleet; use e.g. 10 "
            f"({TRAFFIC_ROUTING_URL})",
        )
    low, high = LINEAR_PERCENT
    if d.linear_step_percent is not None and not low <= d.linear_step_percent <= high:
        yield Issue(
            "endpoint.deployment.linear_step_percent",
            d.linear_step_percent,
            f"each linear step must be {low}-{high}% of the new fleet; use e.g. 20 ({TRAFFIC_ROUTING_URL})",
        )


def waits(cfg: DeploymentConfig) -> int:
    """Seconds a blue/green deployment of ``cfg`` waits: one baking period per traffic step plus the
    termination wait (linear: one step per ``linear_step_percent``)."""
    d = cfg.endpoint.deployment
    steps = 1
    if d.strategy == "canary":
        steps = 2
    elif d.strategy == "linear" and d.linear_step_percent:
        steps = math.ceil(100 / d.linear_step_percent)
    return steps * d.wait_interval_seconds + d.termination_wait_seconds


def execution_timeout(cfg: DeploymentConfig) -> Iterable[Issue]:
    d = cfg.endpoint.deployment
    if d.max_execution_timeout_seconds is None or d.strategy == "rolling":
        return  # rolling: smkit.config.hosting_rules
    total = waits(cfg)
    fix = (
        f"raise it above {total} (at most {MAX_EXECUTION_TIMEOUT})"
        if total < MAX_EXECUTION_TIMEOUT
        else "shorten wait_interval_seconds or termination_wait_seconds"
    )
    waited = f"{total} s: wait_interval_seconds per traffic step plus termination_wait_seconds"
    yield from outlasts_waits(d, total, f"the deployment's waits ({waited}); {fix} ({BLUE_GREEN_URL})")


def outlasts_waits(d: Deployment, total: int, waits_and_fix: str) -> Iterable[Issue]:
    """``max_execution_timeout_seconds`` (when set) longer than the ``total`` seconds a deployment waits
    (blue/green here, rolling in :mod:`smkit.config.hosting_rules`): ``waits_and_fix`` says which, and the fix."""
    if d.max_execution_timeout_seconds is not None and d.max_execution_timeout_seconds <= total:
        yield Issue(
            "endpoint.deployment.max_execution_timeout_seconds",
            d.max_execution_timeout_seconds,
            f"must be longer than {waits_and_fix}",
        )


def kms_key(cfg: DeploymentConfig) -> Iterable[Issue]:
    arn = cfg.security.kms.key_arn
    if arn is not None and KMS_ALIAS.match(arn):
        yield Issue(
            "security.kms.key_arn",
            arn,
            "an alias ARN grants nothing in IAM or key policy statements; give the key ARN "
            "(arn:aws:kms:REGION:ACCOUNT:key/KEY-ID, `aws kms describe-key --key-id alias/NAME`) "
            "(https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html)",
        )


def burstable_autoscaling(cfg: DeploymentConfig) -> Iterable[Issue]:
    for path, v in variant_paths(cfg):
        burstable = [t for t in pool_types(v) if is_burstable(t)]
        if v.autoscaling is not None and burstable:
            yield Issue(
                f"{path}.instance_type" if burstable[0] == v.instance_type else f"{path}.instance_pools",
                burstable[0],
                "burstable ml.t* instances cannot autoscale; pick e.g. ml.m5.large or remove autoscaling "
                f"({AUTOSCALING_URL})",
            )


def instance_types(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Every variant's ``instance_type`` is one SageMaker hosts on (a misspelled type fails only at deploy)."""
    known = hosting_instance_types()
    for path, v in variant_paths(cfg):
        if v.instance_type in known or getattr(v, "instance_pools", None):
            continue  # pools: instance_pools names the type
        close = difflib.get_close_matches(v.instance_type, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        yield Issue(
            f"{path}.instance_type",
            v.instance_type,
            f"not an instance type SageMaker hosts endpoints on; {hint}the SageMaker API's "
            f"ProductionVariantInstanceType (botocore's service model) lists {len(known)}, e.g. ml.m5.large "
            f"({VARIANT_URL})",
        )


def _pools(cfg: DeploymentConfig) -> list[tuple[str, Variant]]:
    return [(f"endpoint.variants[{i}]", v) for i, v in enumerate(cfg.endpoint.variants)]


def instance_pools(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``instance_pools``: real-time, async and inference-component endpoints only; priorities and types unique;
    every type one SageMaker hosts on; ``instance_provision_timeout_seconds`` only with pools."""
    known = hosting_instance_types()
    for path, v in _pools(cfg):
        if not v.instance_pools:
            if v.instance_provision_timeout_seconds is not None:
                yield Issue(
                    f"{path}.instance_provision_timeout_seconds",
                    v.instance_provision_timeout_seconds,
                    "VariantInstanceProvisionTimeoutInSeconds bounds the fallback over instance pools; give "
                    f"instance_pools or remove it ({POOLS_URL})",
                )
            continue
        if cfg.endpoint.type not in POOL_ENDPOINT_TYPES:
            yield Issue(
                f"{path}.instance_pools",
                [p.instance_type for p in v.instance_pools],
                f'"{POOLS_SENTENCE}": a {cfg.endpoint.type} endpoint takes one instance_type per variant; '
                f"replace instance_pools with instance_type ({POOLS_URL})",
            )
        for field in ("priority", "instance_type"):
            values = [getattr(p, field) for p in v.instance_pools]
            repeated = sorted({x for x in values if values.count(x) > 1})
            if repeated:
                yield Issue(
                    f"{path}.instance_pools",
                    values,
                    f"{field} {', '.join(map(str, repeated))} appears more than once; give each pool its own "
                    f"instance type and priority (1-5, 1 first) ({POOL_URL})",
                )
        kinds = {accelerator(p.instance_type) for p in v.instance_pools}
        if len(kinds) > 1:
            yield Issue(
                f"{path}.instance_pools",
                [p.instance_type for p in v.instance_pools],
                f"mixes {' and '.join(sorted(kinds))} instance types: the variant runs one image (and one "
                "InferenceAmiVersion), built for one of them; keep every pool NVIDIA GPU (ml.g*, ml.p*), every "
                f"pool Neuron (ml.inf*, ml.trn*) or every pool CPU ({POOLS_URL})",
            )
        for j, p in enumerate(v.instance_pools):
            if p.instance_type not in known:
                close = difflib.get_close_matches(p.instance_type, sorted(known), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                yield Issue(
                    f"{path}.instance_pools[{j}].instance_type",
                    p.instance_type,
                    f"not an instance type SageMaker hosts endpoints on; {hint}see InstancePool.InstanceType "
                    f"({POOL_URL})",
                )


def variant_pool_problem(variant: Mapping[str, Any]) -> str | None:
    """What CreateEndpointConfig refuses in one ProductionVariant's InstancePools (the request's own keys), for the
    emulator: the rows :func:`instance_pools` applies to configs. None: nothing to refuse."""
    name = variant.get("VariantName")
    pools = variant.get("InstancePools") or []
    timeout = variant.get("VariantInstanceProvisionTimeoutInSeconds")
    if not pools:
        if timeout is not None:
            return (
                f"variant {name}: VariantInstanceProvisionTimeoutInSeconds needs InstancePools. {POOLS_URL}"
            )
        return None
    if "InstanceType" in variant:
        return f"variant {name}: give InstanceType or InstancePools, not both. {POOLS_URL}"
    priorities = [p.get("Priority") for p in pools]
    types = [p.get("InstanceType") for p in pools]
    known = hosting_instance_types()
    if len(pools) > 5:
        return f"variant {name}: {len(pools)} InstancePools, at most 5. {POOL_URL}"
    if len(set(priorities)) != len(priorities) or any(p not in range(1, 6) for p in priorities):
        return (
            f"variant {name}: InstancePools priorities {priorities} must be distinct values 1-5. {POOL_URL}"
        )
    if len(set(types)) != len(types):
        return f"variant {name}: InstancePools instance types {types} must be distinct. {POOL_URL}"
    unknown = [t for t in types if t not in known]
    if unknown:
        return f"variant {name}: InstancePools instance type {unknown[0]} is not a hosting instance type. {POOL_URL}"
    if timeout is not None and not 300 <= int(timeout) <= 3600:
        return f"variant {name}: VariantInstanceProvisionTimeoutInSeconds {timeout} is outside 300-3600. {POOLS_URL}"
    return None


def component_variant_timeouts(cfg: DeploymentConfig) -> Iterable[Issue]:
    """An inference-component endpoint's variant runs no model of its own: SageMaker takes the download and
    start-up timeouts per component (``StartupParameters``), so variant-level values are refused rather than
    dropped or copied into every component (where they would compete with the components' own values)."""
    if cfg.endpoint.type != "inference-components":
        return
    for i, v in enumerate(cfg.endpoint.variants):
        yield from set_fields(
            v,
            f"endpoint.variants[{i}]",
            ("model_data_download_timeout_seconds", "container_startup_health_check_timeout_seconds"),
            lambda field: (
                "the variant of an inference-component endpoint runs no model, so SageMaker would ignore "
                f"it; set {field} on each component under endpoint.inference_components.components "
                "(StartupParameters, https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
                "API_InferenceComponentStartupParameters.html)"
            ),
        )


def instance_store_volume(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``volume_size_gb`` only on instance types with an EBS ML storage volume: production variants, shadow
    variants and the instance pool of an inference-component endpoint alike."""
    for path, v in variant_paths(cfg):
        size = getattr(v, "volume_size_gb", None)
        stored = [t for t in pool_types(v) if has_instance_storage(t)]
        if size is not None and stored:
            yield Issue(f"{path}.volume_size_gb", size, volume_message(stored[0]))


def pool_types(v: Variant | ShadowVariant) -> tuple[str, ...]:
    """Every instance type ``v`` may run on (its instance pools', or its one type)."""
    return v.pool_types if isinstance(v, Variant) else (v.instance_type,)


def retained_counts(cfg: DeploymentConfig) -> Iterable[Issue]:
    """RetainAllVariantProperties keeps every variant's current instance count on update; with some variants
    autoscaled and others not, a changed ``initial_instance_count`` of a fixed variant would be ignored.
    Shadow variants are variants of the same endpoint: the rule covers them alike."""
    variants = variant_paths(cfg)
    scaled = [v.name for _, v in variants if v.autoscaling is not None]
    if not scaled or len(scaled) == len(variants):
        return
    for path, v in variants:
        if v.autoscaling is None:
            yield Issue(
                f"{path}.autoscaling",
                None,
                f"variant {v.name!r} has no autoscaling while {', '.join(scaled)} has: updates keep the "
                "current instance count of every variant (RetainAllVariantProperties), so a new "
                f"initial_instance_count of {v.name!r} would be ignored; give it autoscaling, e.g. "
                f"{{min_capacity: {v.initial_instance_count}, max_capacity: {v.initial_instance_count}, "
                "target_invocations_per_instance: 1000} to pin it "
                "(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html)",
            )


def log_retention(cfg: DeploymentConfig) -> Iterable[Issue]:
    days = cfg.monitoring.log_retention_days
    if days not in LOG_RETENTION_DAYS:
        near = min(LOG_RETENTION_DAYS, key=lambda allowed: abs(allowed - days))
        yield Issue(
            "monitoring.log_retention_days",
            days,
            f"CloudWatch Logs keeps logs for one of {', '.join(map(str, LOG_RETENTION_DAYS))} days; "
            f"use e.g. {near} (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/"
            "API_PutRetentionPolicy.html)",
        )


def alarm_actions(cfg: DeploymentConfig) -> Iterable[Issue]:
    # Each alarm publishes to the kit's topic and to every forwarded topic (AlarmTopic.actions).
    forwarded = [s.topic_arn for s in cfg.monitoring.subscriptions if s.type == "sns"]
    if cfg.monitoring.alarms and 1 + len(forwarded) > MAX_ALARM_ACTIONS:
        yield Issue(
            "monitoring.subscriptions",
            forwarded,
            f"every alarm publishes to the endpoint's alarm topic and to each sns subscription, "
            f"{1 + len(forwarded)} actions, but an alarm takes at most {MAX_ALARM_ACTIONS} AlarmActions: forward "
            f"to at most {MAX_ALARM_ACTIONS - 1} topics, or subscribe the others to the alarm topic "
            "(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html)",
        )


def variant_weights(cfg: DeploymentConfig) -> Iterable[Issue]:
    # A variant's share is its weight over the sum of all (API_ProductionVariant); components carry no weight.
    variants = cfg.endpoint.variants
    if (
        cfg.endpoint.type != "inference-components"
        and variants
        and not any(v.initial_weight for v in variants)
    ):
        yield Issue(
            "endpoint.variants",
            [v.initial_weight for v in variants],
            "a variant's share of the traffic is its initial_weight over the sum of all, and these sum to 0: "
            "give at least one variant a weight above 0 (a variant of weight 0 takes only calls that name it "
            "in TargetVariant) (https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
            "API_ProductionVariant.html)",
        )


def image_regions(cfg: DeploymentConfig) -> Iterable[Issue]:
    if cfg.region is None:
        return  # checked at deploy time by a template rule (smkit.cdk.constructs.image)
    for path, image in cfg.image_sections():
        if image.source != "dlc":
            continue
        match = IMAGE_REGION.match(image.uri)
        if match and match["region"] != cfg.region:
            yield Issue(
                f"{path}.uri",
                image.uri,
                f"the image is in {match['region']} but the deployment is in {cfg.region}; SageMaker pulls "
                f"only from its own region: use the {cfg.region} URI of the same image "
                "(https://docs.aws.amazon.com/sagemaker/latest/dg-ecr-paths/sagemaker-algo-docker-registry-paths.html)",
            )


AWS_RULES: tuple[Rule, ...] = (
    rollback_alarms,
    traffic_shift_sizes,
    execution_timeout,
    kms_key,
    burstable_autoscaling,
    instance_types,
    instance_pools,
    component_variant_timeouts,
    instance_store_volume,
    retained_counts,
    log_retention,
    alarm_actions,
    variant_weights,
    image_regions,
    s3_model_data,
    model_package_data,
    channels,
)
