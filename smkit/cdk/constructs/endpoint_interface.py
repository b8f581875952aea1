"""What an endpoint offers other constructs, whether this app creates it or only names it: its name and ARN,
``grant_invoke``, CloudWatch metric helpers (``metric_invocations``, ``metric_model_latency``, ...) and its
variants (``endpoint.variant("blue")``: that variant's metrics and ``auto_scale_instance_count``).

:class:`EndpointMetrics` holds the metric helpers both :class:`smkit.cdk.InferenceEndpoint` and
:class:`ImportedEndpoint` (``InferenceEndpoint.from_endpoint_name``) share. SageMaker publishes invocation
metrics per variant, in the ``AWS/SageMaker`` namespace with the dimensions ``EndpointName`` and
``VariantName``, every minute:
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html#cloudwatch-metrics-endpoint-invocation
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, Unpack, runtime_checkable

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct, Node

from smkit.aws.patterns import AWS_NAME
from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.arns import sagemaker_arn
from smkit.cdk.constructs.autoscaling import EndpointAutoscaling, ScalingSettings, ScalingTarget
from smkit.cdk.constructs.cloudwatch_metrics import MetricOptions, sagemaker_metric
from smkit.cdk.constructs.endpoint_config import InstanceType
from smkit.cdk.constructs.logical_ids import pascal

INVOKE_ACTIONS = ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointAsync"]
# The OpenAI-compatible route's bearer tokens; the action has no resource type, so its statement names "*"
# (https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html).
BEARER_TOKEN_ACTION = "sagemaker:CallWithBearerToken"
# The condition AWS's own managed policy puts on that "*": resources of the caller's own account only
# (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonSageMakerJobRuntimeAccess.html).
BEARER_TOKEN_CONDITION = {"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}}
ENDPOINT_NAME = re.compile(AWS_NAME)  # CreateEndpoint's EndpointName pattern


class EndpointMetricOptions(MetricOptions, total=False):
    """Keyword arguments of the metric helpers: ``variant_name`` and those of ``aws_cloudwatch.MetricOptions``."""

    variant_name: str


def endpoint_arn_of(scope: Construct, endpoint_name: str) -> str:
    """The ARN of endpoint ``endpoint_name`` in ``scope``'s stack (SageMaker ARNs carry the name lower-cased)."""
    return sagemaker_arn(scope, "endpoint", endpoint_name)


@runtime_checkable
class IEndpoint(Protocol):
    """An endpoint other constructs can grant access to and watch (created here or imported by name or ARN)."""

    @property
    def endpoint_name(self) -> str: ...

    @property
    def endpoint_arn(self) -> str: ...

    @property
    def variant_names(self) -> tuple[str, ...]: ...

    @property
    def name_reference(self) -> str: ...

    node: Node

    def variant(self, variant_name: str) -> EndpointVariant: ...

    def grant_invoke(self, grantee: iam.IGrantable, *, with_bearer_token: bool = False) -> iam.Grant: ...

    def metric(self, metric_name: str, *, variant_name: str | None = None) -> cloudwatch.Metric: ...

    def metric_invocations(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric: ...

    def metric_model_latency(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric: ...

    def metric_invocation_5xx_errors(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric: ...


class EndpointMetrics:
    """CloudWatch metric helpers of one endpoint; each variant's, with ``EndpointName`` and ``VariantName``.

    ``variant_name`` may be left out when the endpoint's variants are known and there is exactly one. The
    other keyword arguments are those of ``aws_cloudwatch.MetricOptions``; ``period`` defaults to one minute.
    """

    endpoint_name: str
    variant_names: tuple[str, ...]
    shadow_variant_names: tuple[str, ...] = ()
    node: Node  # from Construct

    @property
    def name_reference(self) -> str:
        """The endpoint's name for resources that name it (a variant's scalable target, an inference
        component): on an endpoint this app creates, a reference to the resource, so that they are created
        after it."""
        return self.endpoint_name

    def variant(self, variant_name: str) -> EndpointVariant:
        """The production (or shadow) variant ``variant_name``: its metrics and ``auto_scale_instance_count``.
        When the endpoint's variants are known (its endpoint config's), a name not among them is an error."""
        known = (*self.variant_names, *self.shadow_variant_names)
        if known and variant_name not in known:
            raise ValueError(
                f"{self.node.path}: variant({variant_name!r}): the endpoint's variants are {list(known)}; "
                "name one of them"
            )
        return EndpointVariant(self, variant_name)

    def metric(
        self,
        metric_name: str,
        *,
        variant_name: str | None = None,
        endpoint_config_name: str | None = None,
        **options: Unpack[MetricOptions],
    ) -> cloudwatch.Metric:
        """The ``AWS/SageMaker`` metric ``metric_name`` of this endpoint (``EndpointName``): of one variant with
        ``variant_name`` (``VariantName``), and of the fleet of one endpoint config during a blue/green
        deployment with ``endpoint_config_name`` (``EndpointConfigName``). The ``metric_*`` helpers name the
        variant for you."""
        dimensions = {"EndpointName": self.endpoint_name}
        if variant_name is not None:
            dimensions["VariantName"] = variant_name
        if endpoint_config_name is not None:
            dimensions["EndpointConfigName"] = endpoint_config_name
        return sagemaker_metric(metric_name, dimensions, **options)

    def _variant_metric(self, metric_name: str, options: EndpointMetricOptions) -> cloudwatch.Metric:
        options["variant_name"] = self._variant(options.get("variant_name"))
        return self.metric(metric_name, **options)

    def metric_invocations(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocations``: requests sent to the variant (Sum by default)."""
        options.setdefault("statistic", "Sum")
        return self._variant_metric("Invocations", options)

    def metric_invocations_per_instance(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``InvocationsPerInstance``: requests per instance of the variant (Sum by default)."""
        options.setdefault("statistic", "Sum")
        return self._variant_metric("InvocationsPerInstance", options)

    def metric_invocation_4xx_errors(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocation4XXErrors``: requests the model answered with a 4xx (Sum by default)."""
        options.setdefault("statistic", "Sum")
        return self._variant_metric("Invocation4XXErrors", options)

    def metric_invocation_5xx_errors(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocation5XXErrors``: requests the model answered with a 5xx (Sum by default)."""
        options.setdefault("statistic", "Sum")
        return self._variant_metric("Invocation5XXErrors", options)

    def metric_model_latency(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``ModelLatency``: microseconds the model's container took to answer (Average by default)."""
        options.setdefault("statistic", "Average")
        return self._variant_metric("ModelLatency", options)

    def metric_overhead_latency(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``OverheadLatency``: microseconds SageMaker added to the model's latency (Average by default)."""
        options.setdefault("statistic", "Average")
        return self._variant_metric("OverheadLatency", options)

    def _variant(self, variant_name: str | None) -> str:
        if variant_name is not None:
            return variant_name
        if len(self.variant_names) == 1:
            return self.variant_names[0]
        known = (
            f"its variants are {list(self.variant_names)}"
            if self.variant_names
            else "its variants are not known"
        )
        raise ValueError(
            f"{self.node.path}: variant_name=None: {known}; name the variant the metric is of, "
            "e.g. metric_model_latency(variant_name='AllTraffic')"
        )


class EndpointVariant:
    """One production variant of an endpoint (``endpoint.variant(name)``): its metrics, each with
    ``EndpointName`` and ``VariantName``, and Application Auto Scaling of its instance count."""

    def __init__(self, endpoint: EndpointMetrics, variant_name: str) -> None:
        self.endpoint = endpoint
        self.variant_name = variant_name

    def _of(self, options: EndpointMetricOptions) -> EndpointMetricOptions:
        options["variant_name"] = self.variant_name
        return options

    def metric(self, metric_name: str, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """The ``AWS/SageMaker`` metric ``metric_name`` of this variant (Sum unless ``statistic`` is given)."""
        return self.endpoint.metric(metric_name, **self._of(options))

    def metric_invocations(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocations`` of this variant (Sum by default)."""
        return self.endpoint.metric_invocations(**self._of(options))

    def metric_invocations_per_instance(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``InvocationsPerInstance`` of this variant (Sum by default)."""
        return self.endpoint.metric_invocations_per_instance(**self._of(options))

    def metric_invocation_4xx_errors(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocation4XXErrors`` of this variant (Sum by default)."""
        return self.endpoint.metric_invocation_4xx_errors(**self._of(options))

    def metric_invocation_5xx_errors(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``Invocation5XXErrors`` of this variant (Sum by default)."""
        return self.endpoint.metric_invocation_5xx_errors(**self._of(options))

    def metric_model_latency(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``ModelLatency`` of this variant, in microseconds (Average by default)."""
        return self.endpoint.metric_model_latency(**self._of(options))

    def metric_overhead_latency(self, **options: Unpack[EndpointMetricOptions]) -> cloudwatch.Metric:
        """``OverheadLatency`` of this variant, in microseconds (Average by default)."""
        return self.endpoint.metric_overhead_latency(**self._of(options))

    def auto_scale_instance_count(
        self,
        *,
        max_capacity: int,
        min_capacity: int = 1,
        target_invocations_per_instance: float,
        scale_in_cooldown: cdk.Duration | None = None,
        scale_out_cooldown: cdk.Duration | None = None,
        instance_type: InstanceType | None = None,
        id_: str | None = None,
    ) -> EndpointAutoscaling:
        """Scale the variant's instance count between ``min_capacity`` and ``max_capacity``, tracking
        ``target_invocations_per_instance`` (``SageMakerVariantInvocationsPerInstance``, per minute):
        :class:`smkit.cdk.constructs.autoscaling.EndpointAutoscaling` beside the endpoint (its id: ``id_``,
        default ``<endpoint id><Variant>Autoscaling``). ``instance_type``: the variant's, checked (burstable
        ``ml.t*`` instances cannot autoscale). Keep the instance count across endpoint updates
        (``InferenceEndpoint(retain_variant_properties=True)``, the default)."""
        return self.scale(
            ScalingSettings(
                ScalingTarget.INVOCATIONS_PER_INSTANCE,
                min_capacity,
                max_capacity,
                target_invocations_per_instance,
                scale_in_cooldown=scale_in_cooldown,
                scale_out_cooldown=scale_out_cooldown,
            ),
            instance_type=instance_type,
            id_=id_,
        )

    def scale(
        self, settings: ScalingSettings, *, instance_type: InstanceType | None = None, id_: str | None = None
    ) -> EndpointAutoscaling:
        """Application Auto Scaling of this variant with any variant ``settings`` (invocations per instance,
        an async backlog, serverless provisioned concurrency): see :meth:`auto_scale_instance_count`."""
        endpoint = self.endpoint
        scope = endpoint.node.scope
        assert isinstance(scope, Construct), "an endpoint construct has a parent"
        return EndpointAutoscaling(
            scope,
            id_ or f"{endpoint.node.id}{pascal(self.variant_name)}Autoscaling",
            endpoint_name=endpoint.name_reference,
            variant_name=self.variant_name,
            settings=settings,
            instance_type=instance_type,
        )


class ImportedEndpoint(EndpointMetrics, cdk.Resource):
    """An endpoint this app does not create, named by ``endpoint_name`` (``InferenceEndpoint.from_endpoint_name``)
    or ``endpoint_arn`` (``from_endpoint_arn``): the same ``grant_invoke``, metric helpers and variants as
    :class:`smkit.cdk.InferenceEndpoint`."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint_name: str | None = None,
        endpoint_arn: str | None = None,
        variant_names: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id_, environment_from_arn=endpoint_arn)
        if (endpoint_name is None) == (endpoint_arn is None):
            raise ValueError(f"{self.node.path}: give endpoint_name or endpoint_arn (one of them)")
        if endpoint_arn is not None:
            endpoint_name = cdk.Arn.split(endpoint_arn, cdk.ArnFormat.SLASH_RESOURCE_NAME).resource_name
            if endpoint_name is None:
                raise ValueError(
                    f"{self.node.path}: endpoint_arn={endpoint_arn!r}: give an endpoint's ARN, "
                    "e.g. 'arn:aws:sagemaker:us-east-1:111122223333:endpoint/churn-prod'"
                )
        assert endpoint_name is not None
        if not cdk.Token.is_unresolved(endpoint_name) and not ENDPOINT_NAME.match(endpoint_name):
            raise ValueError(
                f"{self.node.path}: endpoint_name={endpoint_name!r}: give the deployed EndpointName "
                "(1-63 letters, digits and hyphens), e.g. 'churn-prod'"
            )
        self.endpoint_name = endpoint_name
        self._endpoint_arn = endpoint_arn
        self.variant_names = tuple(variant_names)

    @property
    def endpoint_arn(self) -> str:
        """ARN of the endpoint: the one given, or in this stack's account and region."""
        return self._endpoint_arn or endpoint_arn_of(self, self.endpoint_name)

    def grant_invoke(self, grantee: iam.IGrantable, *, with_bearer_token: bool = False) -> iam.Grant:
        """Allow ``grantee`` to call InvokeEndpoint / InvokeEndpointAsync on this endpoint only
        (``with_bearer_token``: as :meth:`InferenceEndpoint.grant_invoke`)."""
        return grant_invoke(grantee, self.endpoint_arn, with_bearer_token=with_bearer_token)


def grant_invoke(grantee: iam.IGrantable, endpoint_arn: str, *, with_bearer_token: bool = False) -> iam.Grant:
    """InvokeEndpoint / InvokeEndpointAsync on one endpoint; ``with_bearer_token`` adds
    ``sagemaker:CallWithBearerToken``, which the OpenAI-compatible route needs besides InvokeEndpoint.

    That action takes no resource, so its statement names ``*``, limited as AWS's own managed policy limits it
    (``aws:ResourceAccount`` equal to the caller's account); the InvokeEndpoint statement still names
    this endpoint only, which bounds what a leaked token can reach (docs/openai-compatible.md). It is a
    customer-managed policy of its own attached to the grantee's role (or user, or group), so the cdk-nag
    acknowledgement of its ``*`` covers that one statement and nothing else the grantee is given.
    """
    grant = iam.Grant.add_to_principal(grantee=grantee, actions=INVOKE_ACTIONS, resource_arns=[endpoint_arn])
    if with_bearer_token:
        _grant_bearer_token(grantee)
    return grant


def _grant_bearer_token(grantee: iam.IGrantable) -> None:
    principal = grantee.grant_principal
    attach = getattr(principal, "add_managed_policy", None)
    if not isinstance(principal, Construct) or attach is None:
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=[BEARER_TOKEN_ACTION],
            resource_arns=["*"],
            conditions=BEARER_TOKEN_CONDITION,
        )
        return
    if principal.node.try_find_child("SageMakerBearerToken") is None:  # one per grantee, for every endpoint
        statement = iam.PolicyStatement(
            actions=[BEARER_TOKEN_ACTION], resources=["*"], conditions=BEARER_TOKEN_CONDITION
        )
        policy = iam.ManagedPolicy(principal, "SageMakerBearerToken", statements=[statement])
        attach(policy)
        acknowledge(
            policy,
            {
                "AwsSolutions-IAM5[Resource::*]": "sagemaker:CallWithBearerToken has no resource type: "
                "IAM accepts it only on '*'; the endpoints a token reaches are bounded by the "
                "InvokeEndpoint statements, which name each endpoint"
            },
        )
