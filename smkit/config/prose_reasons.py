"""Why each constraint sentence of a mapped API member's documentation that no row quotes is not a row.

:func:`smkit.config.rule_doc.prose` mines the sentences of botocore's documentation of every member the stacks'
properties become (:func:`smkit.aws.service_models.constraint_sentences`); a sentence a row of
:data:`smkit.config.rule_table.ROWS` quotes is checked by that row. Every other one has a reason here, keyed by
``(member, the sentence's first words)``, and docs/aws-rules.md shows it. tests/config/test_prose_reasons.py
fails when a mined sentence has neither, so a sentence a new botocore adds is read before the kit ships.

The reasons fall in a few kinds (the text starts with the kind):

- ``not a constraint``: the sentence describes the value or the service's behaviour;
- ``the model's own limit, checked``: the model's range or enum states it and the kit checks that;
- ``never emitted``: the form it constrains (a resource, metric math, anomaly detection...) the kit never
  writes;
- ``by construction``: what the kit writes cannot break it, with why;
- ``applies: row ID``: a row enforces it (quoting the same words from another member, or a neighbour sentence);
- ``the caller's``: a permission or quota of whoever deploys, not the template's;
- ``only AWS knows``: the account's or region's state, which no offline check can see.
"""

from __future__ import annotations

NOT_A_CONSTRAINT = "not a constraint: describes the value"
BEHAVIOUR = "not a constraint: describes what the service does"
CALLER = "the caller's: the iam:PassRole permission of whoever deploys, not the template's"
QUOTAS = "the caller's: the account's service quotas, which only AWS knows (row capacity-available)"
NOT_ECS = (
    "never emitted: it speaks of other services' scalable targets; the kit registers SageMaker variants and "
    "inference components only"
)
EXTENDED = (
    "by construction: the kit's only extended statistic is p99 (the latency alarms), one of the listed forms"
)
TRIMMED = "never emitted: the kit's only extended statistic is p99, never a trimmed or winsorized one"
ONE_STATISTIC = (
    "by construction: each metric has one statistic string, which CDK writes as Statistic or (a percentile) "
    "ExtendedStatistic, never both"
)
ANOMALY = "never emitted: the kit's alarms are static thresholds, never anomaly detection models"
ALARM_FORMS = (
    "tests/stacks/test_day2.py::test_every_alarm_is_one_metric_or_metric_math_as_put_metric_alarm_takes"
)
MATH = (
    "by construction: the kit's error-rate alarms are metric math (CDK's MathExpression): a Metrics array alone, "
    "no MetricName, Namespace, Dimensions, Period, Unit or statistic beside it, each query an Expression or a "
    f"MetricStat, never both, each id starting with a lowercase letter ({ALARM_FORMS})"
)
GET_METRIC_DATA = "never emitted: it constrains GetMetricData calls, not an alarm the template defines"
ONE_MINUTE = (
    "by construction: the kit's alarms have a fixed period of 60 seconds (smkit.aws.limits.ALARM_PERIOD_S)"
)
DIMENSIONS = (
    "by construction: the kit's dimensions are the endpoint's, variants' and components' names, whose patterns "
    "(the model's, smkit.aws.patterns) allow only ASCII letters, digits and hyphens"
)
STATIC = (
    "by construction: every alarm of the kit is a static threshold with a Threshold, and a Period on the alarm "
    f"(one metric) or in each MetricStat of its Metrics array (metric math) ({ALARM_FORMS})"
)

# (member as rule_doc names it, the sentence's first words) -> why it is not a row.
REASONS: dict[tuple[str, str], str] = {
    # Application Auto Scaling
    (
        "application-autoscaling PredefinedMetricSpecification.PredefinedMetricType",
        "The following are notes",
    ): (
        "never emitted: the kit's predefined metrics are SageMaker's (SageMakerVariantInvocationsPerInstance "
        "and the inference-component ones), never ALBRequestCountPerTarget"
    ),
    ("application-autoscaling PredefinedMetricSpecification.PredefinedMetricType", "You must enable high"): (
        NOT_ECS
    ),
    ("application-autoscaling PutScalingPolicyRequest.PolicyName", "You cannot change the name"): (
        "by construction: CloudFormation replaces a policy whose name changes (delete and create), as the "
        "sentence advises"
    ),
    ("application-autoscaling PutScalingPolicyRequest.PolicyType", "PredictiveScaling"): (
        "never emitted: the kit writes TargetTrackingScaling and StepScaling policies only"
    ),
    ("application-autoscaling PutScalingPolicyRequest.PolicyType", "StepScaling"): NOT_ECS,
    ("application-autoscaling PutScalingPolicyRequest.PolicyType", "The following policy types"): NOT_ECS,
    ("application-autoscaling PutScalingPolicyRequest.PolicyType", "This parameter is required"): (
        "by construction: every scaling policy the kit writes sets PolicyType"
    ),
    ("application-autoscaling RegisterScalableTargetRequest.MaxCapacity", "Although you can specify"): QUOTAS,
    ("application-autoscaling RegisterScalableTargetRequest.MaxCapacity", "Each service has its own"): QUOTAS,
    (
        "application-autoscaling RegisterScalableTargetRequest.MaxCapacity",
        "The maximum value",
    ): NOT_A_CONSTRAINT,
    ("application-autoscaling RegisterScalableTargetRequest.MaxCapacity", "When a scaling policy"): BEHAVIOUR,
    ("application-autoscaling RegisterScalableTargetRequest.MinCapacity", "For all other resources"): (
        "applies: row scaling-min-capacity (the kit's scalable targets are SageMaker variants and inference "
        "components, the resources of the preceding sentence)"
    ),
    ("application-autoscaling RegisterScalableTargetRequest.MinCapacity", "In which case"): BEHAVIOUR,
    (
        "application-autoscaling RegisterScalableTargetRequest.MinCapacity",
        "The minimum value",
    ): NOT_A_CONSTRAINT,
    ("application-autoscaling RegisterScalableTargetRequest.MinCapacity", "This property is required"): (
        "applies: row scaling-capacity-required (the same sentence, quoted from MaxCapacity)"
    ),
    ("application-autoscaling RegisterScalableTargetRequest.MinCapacity", "When a scaling policy"): BEHAVIOUR,
    ("application-autoscaling RegisterScalableTargetRequest.ResourceId", "Custom resources"): (
        "never emitted: the kit's ResourceIds are SageMaker variants and inference components"
    ),
    ("application-autoscaling RegisterScalableTargetRequest.ResourceId", "This parameter must specify"): (
        "never emitted: it is the form of custom resources' ResourceId"
    ),
    ("application-autoscaling RegisterScalableTargetRequest.RoleARN", "This parameter is required"): (
        "by construction: the kit names SageMaker's Application Auto Scaling service-linked role "
        "(smkit.cdk.constructs.autoscaling)"
    ),
    ("application-autoscaling StepAdjustment.MetricIntervalLowerBound", "If the metric value"): BEHAVIOUR,
    ("application-autoscaling StepAdjustment.MetricIntervalLowerBound", "Otherwise"): BEHAVIOUR,
    ("application-autoscaling StepAdjustment.MetricIntervalLowerBound", "The lower bound"): NOT_A_CONSTRAINT,
    ("application-autoscaling StepAdjustment.ScalingAdjustment", "For exact capacity"): (
        "never emitted: the kit's step policies use ChangeInCapacity, never ExactCapacity "
        "(smkit.cdk.constructs.autoscaling)"
    ),
    ("application-autoscaling StepScalingPolicyConfiguration.AdjustmentType", "AdjustmentType is required"): (
        "by construction: the kit's step policies set AdjustmentType ChangeInCapacity"
    ),
    ("application-autoscaling StepScalingPolicyConfiguration.AdjustmentType", "The valid values"): (
        "the model's own limit, checked: the AdjustmentType enum (cfn-lint); the kit writes ChangeInCapacity"
    ),
    ("application-autoscaling StepScalingPolicyConfiguration.MetricAggregationType", "Valid values"): (
        "the model's own limit, checked: the CloudFormation schema's values (cfn-lint); the kit writes one of them"
    ),
    ("application-autoscaling TargetTrackingScalingPolicyConfiguration.TargetValue", "The value must be"): (
        "by construction: the targets are positive invocations per instance or copy, backlog per instance or "
        "a utilization of at most 1, each matching its predefined metric (smkit.config.scaling, "
        "smkit.config.components, smkit.config.endpoint)"
    ),
    # CloudWatch
    ("cloudwatch Dimension.Name", "ASCII control characters"): (
        "by construction: the kit's dimension names are SageMaker's fixed ones (EndpointName, VariantName, "
        "InferenceComponentName)"
    ),
    ("cloudwatch Dimension.Name", "Dimension names must"): (
        "by construction: the kit's dimension names are SageMaker's fixed ones (EndpointName, VariantName, "
        "InferenceComponentName)"
    ),
    ("cloudwatch Dimension.Value", "ASCII control characters"): DIMENSIONS,
    ("cloudwatch Dimension.Value", "Dimension values must"): DIMENSIONS,
    (
        "cloudwatch Metric.MetricName",
        "This is a required field",
    ): "by construction: every metric names MetricName",
    ("cloudwatch MetricDataQuery.Expression", "Within each MetricDataQuery"): MATH,
    ("cloudwatch MetricDataQuery.Id", "The first character"): MATH,
    ("cloudwatch MetricDataQuery.Id", "This name must be unique"): GET_METRIC_DATA,
    ("cloudwatch MetricStat.Period", "For metrics with regular"): ONE_MINUTE,
    ("cloudwatch MetricStat.Period", "If the StartTime"): GET_METRIC_DATA,
    ("cloudwatch MetricStat.Period", "Start time between"): GET_METRIC_DATA,
    ("cloudwatch PutMetricAlarmInput.ComparisonOperator", "The values LessThanLower"): ANOMALY,
    ("cloudwatch PutMetricAlarmInput.DatapointsToAlarm", "The number of data points"): NOT_A_CONSTRAINT,
    ("cloudwatch PutMetricAlarmInput.DatapointsToAlarm", "This is used only"): (
        "by construction: the kit sets DatapointsToAlarm only with EvaluationPeriods (an M out of N alarm)"
    ),
    ("cloudwatch PutMetricAlarmInput.ExtendedStatistic", "If you specify ExtendedStatistic"): EXTENDED,
    ("cloudwatch PutMetricAlarmInput.ExtendedStatistic", "TM("): TRIMMED,
    ("cloudwatch PutMetricAlarmInput.ExtendedStatistic", "TS("): TRIMMED,
    ("cloudwatch PutMetricAlarmInput.ExtendedStatistic", "WM("): TRIMMED,
    ("cloudwatch PutMetricAlarmInput.ExtendedStatistic", "When you call PutMetricAlarm"): ONE_STATISTIC,
    ("cloudwatch PutMetricAlarmInput.MetricName", "For each PutMetricAlarm"): (
        f"by construction: every alarm of the kit names MetricName (one metric) or a Metrics array (metric math) "
        f"({ALARM_FORMS})"
    ),
    ("cloudwatch PutMetricAlarmInput.MetricName", "If you are creating an alarm based on a math"): MATH,
    ("cloudwatch PutMetricAlarmInput.Period", "An alarm's total current evaluation period"): (
        "applies: row alarm-evaluation-day, which is stricter for the kit's one-minute periods (at most 1440 "
        "periods of 60 s, one day, against seven days)"
    ),
    ("cloudwatch PutMetricAlarmInput.Period", "Be sure to specify 10, 20, or 30"): ONE_MINUTE,
    ("cloudwatch PutMetricAlarmInput.Period", "Period is required"): STATIC,
    ("cloudwatch PutMetricAlarmInput.Statistic", "When you call PutMetricAlarm"): ONE_STATISTIC,
    ("cloudwatch PutMetricAlarmInput.Threshold", "This parameter is required"): STATIC,
    ("cloudwatch PutMetricAlarmInput.TreatMissingData", "Valid Values"): (
        "the model's own limit, checked: the CloudFormation schema's values (cfn-lint); the kit writes "
        "notBreaching, and no AWS/DynamoDB metric"
    ),
    # SageMaker
    ("sagemaker AsyncInferenceClientConfig.MaxConcurrentInvocationsPerInstance", "The maximum number"): (
        NOT_A_CONSTRAINT
    ),
    ("sagemaker BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds", "Maximum execution timeout"): (
        "applies: row execution-timeout (the model's range, 600-28800)"
    ),
    ("sagemaker ContainerDefinition.ContainerHostname", "This parameter is ignored"): BEHAVIOUR,
    ("sagemaker ContainerDefinition.Environment", "If you pass multiple containers"): (
        "applies: row environment-size (smkit.config.rules.environments sums every container's map)"
    ),
    ("sagemaker ContainerDefinition.Environment", "The maximum length of each key"): (
        "applies: row environment-size (smkit.config.rules.environments: 1024 bytes per key and value)"
    ),
    ("sagemaker ContainerDefinition.Image", "If you are using your own custom algorithm"): (
        "applies: the serving contract the kit's runtime implements (docs/contract.md), proven by the local "
        "endpoint's tests, not one sentence's row"
    ),
    ("sagemaker ContainerDefinition.ModelDataUrl", "The S3 path is required"): (
        "by construction: the kit uses no built-in algorithm"
    ),
    ("sagemaker ContainerDefinition.ModelDataUrl", "The model artifacts must be in an S3 bucket"): (
        "only AWS knows: the bucket's region (as row image-region for the image); the kit's own uploads go to the "
        "deployment's region"
    ),
    ("sagemaker ContainerDefinition.ModelDataUrl", "This path must point to a single gzip"): (
        "by construction: the kit sends ModelDataUrl for a .tar.gz archive only (source archive, or an s3 uri "
        "ending .tar.gz); a prefix goes as ModelDataSource, and a multi-model endpoint's prefix with Mode "
        "MultiModel (smkit.config.containers)"
    ),
    ("sagemaker CreateEndpointConfigInput.ExecutionRoleArn", "To be able to pass this role"): CALLER,
    ("sagemaker CreateEndpointConfigInput.KmsKeyId", "The KmsKeyId can be any"): (
        "applies: row kms-key-arn (the kit takes a key ARN, one of these formats)"
    ),
    ("sagemaker CreateEndpointInput.EndpointName", "The name is case-insensitive"): (
        "by construction: the kit invokes the endpoint by the name it deployed, as written"
    ),
    ("sagemaker CreateEndpointInput.EndpointName", "The name of the endpoint.The name must be unique"): (
        "only AWS knows: the names in the account's region; CloudFormation refuses a taken name"
    ),
    ("sagemaker CreateModelInput.ExecutionRoleArn", "To be able to pass this role"): CALLER,
    ("sagemaker InferenceComponentAvailabilityZoneBalance.EnforcementMode", "PERMISSIVE"): (
        "applies: row az-balance (the mode is stated and chosen explicitly)"
    ),
    ("sagemaker InferenceComponentAvailabilityZoneBalance.MaxImbalance", "The maximum allowed difference"): (
        NOT_A_CONSTRAINT
    ),
    ("sagemaker InferenceComponentAvailabilityZoneBalance.MaxImbalance", "This parameter applies only"): (
        BEHAVIOUR
    ),
    ("sagemaker InferenceComponentComputeResourceRequirements.MaxMemoryRequiredInMb", "The maximum MB"): (
        NOT_A_CONSTRAINT
    ),
    ("sagemaker InferenceComponentComputeResourceRequirements.MinMemoryRequiredInMb", "The minimum MB"): (
        NOT_A_CONSTRAINT
    ),
    ("sagemaker InferenceComponentSpecification.BaseInferenceComponentName", "Before you can create"): (
        "by construction: an adapter names a base component of the same config, which the stack creates first "
        "(smkit.config.hosting_rules.adapters)"
    ),
    ("sagemaker InferenceComponentSpecification.BaseInferenceComponentName", "Specify this parameter only"): (
        "by construction: the kit sets BaseInferenceComponentName on adapter components only"
    ),
    ("sagemaker InferenceComponentSpecification.InstanceType", "Required when using the Specifications"): (
        "applies: row ic-specifications"
    ),
    ("sagemaker InferenceExecutionConfig.Mode", "DIRECT - Only the individual container"): BEHAVIOUR,
    ("sagemaker MetricsConfig.MetricPublishFrequencyInSeconds", "When EnableEnhancedMetrics"): BEHAVIOUR,
    ("sagemaker ProductionVariant.VariantInstanceProvisionTimeoutInSeconds", "This timeout applies only"): (
        BEHAVIOUR
    ),
    ("sagemaker ProductionVariant.VariantInstanceProvisionTimeoutInSeconds", "Valid values: 300 to 3600"): (
        "applies: row instance-provision-timeout (the range is smkit.aws.limits.PROVISION_TIMEOUT_RANGE_S)"
    ),
    ("sagemaker ProductionVariantManagedInstanceScaling.MinInstanceCount", "The minimum number"): (
        NOT_A_CONSTRAINT
    ),
    (
        "sagemaker ProductionVariantManagedInstanceScalingScaleInPolicy.Strategy",
        "For example, if an inference",
    ): (BEHAVIOUR),
    ("sagemaker ProductionVariantRoutingConfig.RoutingStrategy", "KV_AWARE works only"): (
        "never emitted: the config's routing is least-outstanding-requests or random (smkit.config.endpoint)"
    ),
    (
        "sagemaker ProductionVariantRoutingConfig.RoutingStrategy",
        "The endpoint applies prefix-aware",
    ): BEHAVIOUR,
    ("sagemaker ProductionVariantRoutingConfig.RoutingStrategy", "When the endpoint can't find"): BEHAVIOUR,
    ("sagemaker ProductionVariantServerlessConfig.MaxConcurrency", "The maximum number"): NOT_A_CONSTRAINT,
    ("sagemaker ProductionVariantServerlessConfig.ProvisionedConcurrency", "This field is not supported"): (
        "never emitted: the kit runs no Inference Recommender jobs"
    ),
    ("sagemaker S3ModelDataSource.CompressionType", "For example, if your uncompressed"): BEHAVIOUR,
    ("sagemaker Tag.Key", "Tag keys must be unique"): (
        "by construction: the config's tags are a map (smkit.config.models), so its keys are unique"
    ),
    ("sagemaker TrafficRoutingConfig.WaitIntervalInSeconds", "The waiting time"): NOT_A_CONSTRAINT,
}


def reason(member: str, sentence: str) -> str | None:
    """Why ``sentence`` of ``member``'s documentation is not a row (None: no reason given)."""
    return next(
        (why for (m, prefix), why in REASONS.items() if m == member and sentence.startswith(prefix)), None
    )
