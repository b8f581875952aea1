"""Rules of the 2026 hosting surface: rolling deployments, pinned inference AMIs, capacity reservations,
gated model data (EULA) and inference-component adapters, each with its AWS page.

Each rule is a pure function ``(cfg) -> Iterable[Issue]`` as in :mod:`smkit.config.rules`; the loader
applies :data:`HOSTING_RULES` with the other tables.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from smkit.aws.instances import NEURON, NVIDIA_GPU, accelerator, split
from smkit.aws.limits import BATCH_PERCENT
from smkit.aws.patterns import RESERVATION_REGION
from smkit.config.aws_rules import outlasts_waits
from smkit.config.components import ADAPTERS, ROLLING, SCHEDULING
from smkit.config.endpoint import CAPACITY_URL, ROLLING_URL, VARIANT_URL
from smkit.config.model_data_rules import S3_URI
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue, Rule, set_fields

ROLLING_POLICY_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RollingUpdatePolicy.html"
# InferenceComponentContainerSpecification.ArtifactUrl, AWS's sentence (botocore's documentation of the member):
ADAPTER_ARCHIVE = "This path must point to a single gzip compressed tar archive (.tar.gz suffix)."
ADAPTER_ARCHIVE_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentContainerSpecification.html"
# InferenceComponentAvailabilityZoneBalance.MaxImbalance, AWS's sentence:
AZ_DEFAULT = "Default value: 0."
# InferenceComponentRollingUpdatePolicy.MaximumBatchSize, AWS's sentence:
COMPONENT_BATCH = "The value must be between 5% to 50% of the copy count of the inference component."
# Deployment guardrails do not apply to Inf1 instances (they fall back to all at once), and rolling
# deployments exclude serverless and multi-variant endpoints.
# https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html
EXCLUSIONS_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-exclusions.html"
# GPU AMIs need an NVIDIA instance (ml.g*, ml.p*); the Neuron AMI an Inferentia / Trainium one.
# CapacityReservationConfig.MlReservationArn: arn:PARTITION:sagemaker:REGION:ACCOUNT:TYPE/ID.
EULA_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ModelAccessConfig.html"
ROLLING_FIELDS = ("batch_instances", "batch_percent", "rollback_batch_instances", "rollback_batch_percent")


def rolling_deployment(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``strategy: rolling``: one instance variant, one batch size in AWS's range, no blue/green waits."""
    d = cfg.endpoint.deployment
    path = "endpoint.deployment"
    if d.strategy != "rolling":
        yield from set_fields(
            d, path, ROLLING_FIELDS, lambda _: f"applies only to strategy: rolling, not {d.strategy}"
        )
        return
    ep = cfg.endpoint
    if ep.type in ("serverless", "inference-components"):
        fix = (
            "use all-at-once"
            if ep.type == "serverless"
            else "use endpoint.inference_components.rolling_update for the components"
        )
        yield Issue(
            f"{path}.strategy",
            "rolling",
            f"rolling updates are not for {ep.type} endpoints; {fix} ({EXCLUSIONS_URL})",
        )
        return
    variants = len(ep.variants) + len(ep.shadow_variants)
    if variants != 1:
        yield Issue(
            f"{path}.strategy",
            "rolling",
            f"rolling updates take an endpoint with exactly one variant, this one has {variants}; use a blue/green "
            f"strategy (all-at-once, canary, linear) ({EXCLUSIONS_URL})",
        )
    for i, v in enumerate(ep.variants):
        if (split(v.instance_type) or ("",))[0] == "inf1":
            yield Issue(
                f"endpoint.variants[{i}].instance_type",
                v.instance_type,
                f"deployment guardrails do not apply to Inf1 instances; use ml.inf2 or strategy: all-at-once "
                f"({EXCLUSIONS_URL})",
            )
    if d.termination_wait_seconds:
        yield Issue(
            f"{path}.termination_wait_seconds",
            d.termination_wait_seconds,
            "a rolling update has no termination wait (each batch's old instances go once the batch has baked); "
            f"remove it and size wait_interval_seconds instead ({ROLLING_POLICY_URL})",
        )
    instances = min((v.initial_instance_count for v in ep.variants), default=1)
    yield from _batch(path, "batch", d.batch_instances, d.batch_percent, instances, required=True)
    yield from _batch(path, "rollback_batch", d.rollback_batch_instances, d.rollback_batch_percent, instances)
    yield from _rolling_timeout(cfg, instances)


def _batch(
    path: str, name: str, count: int | None, percent: int | None, instances: int, *, required: bool = False
) -> Iterable[Issue]:
    low, high = BATCH_PERCENT
    if count is not None and percent is not None:
        yield Issue(
            f"{path}.{name}_percent", percent, f"set one of {name}_instances or {name}_percent, not both"
        )
        return
    if count is None and percent is None:
        if required:
            yield Issue(
                f"{path}.batch_percent",
                None,
                f"strategy rolling needs a batch size: batch_percent ({low}-{high}) or batch_instances, e.g. "
                f"batch_percent: 25 ({ROLLING_POLICY_URL})",
            )
        return
    if percent is not None and not low <= percent <= high:
        yield Issue(
            f"{path}.{name}_percent",
            percent,
            f"must be {low}-{high}% of the variant's instances; use e.g. 25 ({ROLLING_POLICY_URL})",
        )
    if count is not None and name == "batch" and count * 100 > high * instances:
        yield Issue(
            f"{path}.{name}_instances",
            count,
            f"a batch may be at most {high}% of the variant's {instances} instance(s), i.e. "
            f"{instances * high // 100}; lower it, give the variant more instances, or use batch_percent "
            f"({ROLLING_POLICY_URL})",
        )


def _rolling_timeout(cfg: DeploymentConfig, instances: int) -> Iterable[Issue]:
    d = cfg.endpoint.deployment
    if d.max_execution_timeout_seconds is None:
        return
    if d.batch_percent is not None:
        steps = math.ceil(100 / d.batch_percent)
    elif d.batch_instances is not None:
        steps = math.ceil(instances / d.batch_instances)
    else:
        return
    total = steps * d.wait_interval_seconds
    waited = f"{steps} batches x wait_interval_seconds = {total} s"
    yield from outlasts_waits(
        d,
        total,
        f"the rolling update's waits ({waited}); raise it or shorten wait_interval_seconds ({ROLLING_URL})",
    )


def component_rolling_batch(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Inference-component rolling updates: the batch, in copies or percent, is 5-50% of the copy count of
    every component it rolls, and at least one copy.

    AWS (InferenceComponentRollingUpdatePolicy.MaximumBatchSize): "The value must be between 5% to 50% of the
    copy count of the inference component." The copy count a component has when it is updated is any it may
    run with: ``copies`` at creation and, when autoscaled, ``min_copies`` to ``max_copies``; the batch must fit
    the smallest. A component that may be at 0 copies, or at 1 (no whole copy is 50% of one), cannot be rolled;
    SageMaker's default update then replaces its copies.
    """
    spec = cfg.endpoint.inference_components
    if spec is None or spec.rolling_update is None:
        return
    low, high = BATCH_PERCENT
    rolling = spec.rolling_update
    path = "endpoint.inference_components.rolling_update"
    percent, copies = rolling.batch_percent, rolling.batch_copies
    if (percent is None) == (copies is None):
        return  # smkit.config.component_rules
    if percent is not None and not low <= percent <= high:
        yield Issue(
            f"{path}.batch_percent",
            percent,
            f"must be {low}-{high}% of the component's copies; use e.g. 25 ({ROLLING})",
        )
        return
    for i, c in enumerate(spec.components):
        if c.base_component is not None:
            continue  # an adapter runs in its base's copies and has no rolling update of its own
        fewest = min(c.copies, c.autoscaling.min_copies) if c.autoscaling else c.copies
        field = "batch_percent" if percent is not None else "batch_copies"
        value = percent if percent is not None else copies
        # The batch at ``fewest`` copies, in copies: a percent of it, or the count given.
        batch = fewest * percent / 100 if percent is not None else float(copies or 0)
        if fewest * high < 100 or batch < 1 or batch * 100 > high * fewest or batch * 100 < low * fewest:
            where = f"endpoint.inference_components.components[{i}]"
            yield Issue(
                f"{path}.{field}",
                value,
                f"component {c.name!r} may run with {fewest} cop{'y' if fewest == 1 else 'ies'} ({where}), and "
                f"AWS: {COMPONENT_BATCH!r} A batch of at least one copy needs every rolled component at "
                f"{math.ceil(100 / high)} copies or more: raise its copies (and min_copies), set "
                f"{field} within {low}-{high}% of its copies, or remove rolling_update (SageMaker's default "
                f"update replaces the copies) ({ROLLING})",
            )


def variant_hosting(cfg: DeploymentConfig) -> Iterable[Issue]:
    """The inference AMI fits the instance; a capacity reservation is in the deployment's region."""
    for i, v in enumerate(cfg.endpoint.variants):
        path = f"endpoint.variants[{i}]"
        ami = v.inference_ami_version
        if ami is not None:
            neuron = "neuron" in ami
            if accelerator(v.instance_type) != (NEURON if neuron else NVIDIA_GPU):
                kind = (
                    "an Inferentia/Trainium (ml.inf2.*, ml.trn1.*)"
                    if neuron
                    else "a GPU (ml.g5.*, ml.g6.*, ml.p5.*)"
                )
                yield Issue(
                    f"{path}.inference_ami_version",
                    ami,
                    f"this AMI is for {kind} instance, not {v.instance_type}; pick a matching instance_type or "
                    f"remove inference_ami_version ({VARIANT_URL})",
                )
        reservation = v.capacity_reservation
        if reservation is not None:
            match = RESERVATION_REGION.match(reservation.ml_reservation_arn)
            if match and cfg.region and match["region"] and match["region"] != cfg.region:
                yield Issue(
                    f"{path}.capacity_reservation.ml_reservation_arn",
                    reservation.ml_reservation_arn,
                    f"the reservation is in {match['region']} but the deployment is in {cfg.region}; use a "
                    f"reservation of {cfg.region} ({CAPACITY_URL})",
                )


def model_access(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``accept_eula`` only where SageMaker takes a ModelAccessConfig: an uncompressed S3 prefix."""
    for i, c in enumerate(cfg.model.containers):
        data = c.model_data
        if not data.accept_eula:
            continue
        path = f"model.containers[{i}].model_data.accept_eula"
        if data.source != "s3" or not (data.uri or "").endswith("/") or cfg.endpoint.type == "multi-model":
            yield Issue(
                path,
                True,
                "ModelAccessConfig applies to uncompressed model data in S3 (source: s3 with uri s3://BUCKET/"
                f"PREFIX/, not on a multi-model endpoint); remove accept_eula or point uri at the prefix ({EULA_URL})",
            )


# What an adapter takes from its base component instead of setting itself.
ADAPTER_SHARED_FIELDS = (
    "container",
    "compute",
    "autoscaling",
    "scheduling",
    "data_cache",
    "copies",
    "model_data_download_timeout_seconds",
    "container_startup_health_check_timeout_seconds",
)


def adapters(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Adapter components name a base component of this config and their LoRA weights; nothing else."""
    spec = cfg.endpoint.inference_components
    if spec is None:
        return
    bases = {c.name for c in spec.components if c.base_component is None}
    for i, c in enumerate(spec.components):
        path = f"endpoint.inference_components.components[{i}]"
        if c.base_component is None:
            for field in ("container", "compute"):
                if getattr(c, field) is None:
                    yield Issue(
                        f"{path}.{field}",
                        None,
                        f"a component needs {field} (or base_component and artifact_url or artifact_path to make it an "
                        "adapter)",
                    )
            yield from set_fields(
                c,
                path,
                ("artifact_url", "artifact_path"),
                lambda field: (
                    f"only adapter components take {field}; set base_component too, or remove it ({ADAPTERS})"
                ),
            )
            continue
        if c.base_component not in bases:
            yield Issue(
                f"{path}.base_component",
                c.base_component,
                f"must name a base (non-adapter) component of this config: one of {', '.join(sorted(bases)) or 'none'} "
                f"({ADAPTERS})",
            )
        if c.artifact_path is not None:
            if c.artifact_url is not None:
                yield Issue(
                    f"{path}.artifact_path",
                    c.artifact_path,
                    f"give the adapter's weights once: artifact_url (in S3) or artifact_path (a local folder, "
                    f"uploaded by deploy), not both ({ADAPTERS})",
                )
        elif c.artifact_url is None or not S3_URI.match(c.artifact_url):
            yield Issue(
                f"{path}.artifact_url",
                c.artifact_url,
                f"an adapter needs its LoRA weights: in S3 as one archive (artifact_url: s3://BUCKET/KEY.tar.gz) "
                f"or a local folder (artifact_path: FOLDER, relative to the config file) ({ADAPTERS})",
            )
        elif not c.artifact_url.endswith(".tar.gz"):
            yield Issue(
                f"{path}.artifact_url",
                c.artifact_url,
                f"AWS: {ADAPTER_ARCHIVE!r} Give the adapter's local folder as artifact_path instead (smkit "
                f"package archives it, deploy uploads it), or archive it yourself (tar -czf adapter.tar.gz -C "
                f"FOLDER .), upload it and give s3://BUCKET/KEY.tar.gz ({ADAPTER_ARCHIVE_URL})",
            )
        for field in ADAPTER_SHARED_FIELDS:
            if field in c.model_fields_set:
                yield Issue(
                    f"{path}.{field}",
                    getattr(c, field) if field != "compute" else "set",
                    f"an adapter runs in its base component's container on its compute and copies; remove {field} "
                    f"(set it on {c.base_component!r}) ({ADAPTERS})",
                )


def placement(cfg: DeploymentConfig) -> Iterable[Issue]:
    """A component's ``scheduling`` states both its placement and its Availability Zone balance.

    CloudFormation's SchedulingConfig requires AvailabilityZoneBalance with PlacementStrategy, and AWS's default
    MaxImbalance is 0 (copies kept equal across zones), which a ``placement: binpack`` alone would silently
    ask for. ``max_az_imbalance`` is therefore required with ``placement``.
    """
    spec = cfg.endpoint.inference_components
    if spec is None:
        return
    for i, c in enumerate(spec.components):
        if c.scheduling is not None and c.scheduling.max_az_imbalance is None:
            yield Issue(
                f"endpoint.inference_components.components[{i}].scheduling.max_az_imbalance",
                None,
                f"placement: {c.scheduling.placement} also sets the copies' Availability Zone balance "
                "(CloudFormation requires AvailabilityZoneBalance with PlacementStrategy) and AWS's default "
                f"MaxImbalance is 0 (AWS: {AZ_DEFAULT!r}); choose it: max_az_imbalance: 0 keeps zones equal, 1 "
                f"allows one copy of difference, 100 lets the placement pack freely ({SCHEDULING})",
            )


HOSTING_RULES: tuple[Rule, ...] = (
    rolling_deployment,
    component_rolling_batch,
    variant_hosting,
    model_access,
    adapters,
    placement,
)
