"""AWS's service limits that the kit checks or honours: one place, each with its source.

Plain numbers, so the serving runtime can import them without loading botocore. Where AWS's API model holds
the limit (a member's ``min``/``max``), :data:`FROM_MODELS` names that member and a test reads botocore's
model to check the number here is the model's; the others cite the AWS page that states them.
"""

from __future__ import annotations

from collections.abc import Mapping

MIB = 1024 * 1024

# --- InvokeEndpoint and friends (SageMaker Runtime) ---
# Request payload: 6 MB realtime, 4 MB serverless; async reads an S3 object of up to 1 GB.
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html
# https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html
# https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference.html
REALTIME_PAYLOAD_LIMIT = 6 * MIB  # 6,291,456
SERVERLESS_PAYLOAD_LIMIT = 4 * MIB
ASYNC_PAYLOAD_LIMIT = 1024 * MIB
# An async result returned in the response body instead of S3 (IncludeInferenceResponseIn): up to 128,000
# bytes. https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AsyncInferenceNotificationConfig.html
ASYNC_INLINE_BODY_LIMIT = 128_000
# GET /ping answers within 2 s; POST /invocations within 60 s.
# https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html
PING_TIMEOUT_S = 2.0
INVOCATION_TIMEOUT_S = 60.0
# ProductionVariant.ContainerStartupHealthCheckTimeoutInSeconds (FROM_MODELS).
STARTUP_HEALTH_CHECK_RANGE_S = (60, 3600)
# InvokeEndpointAsync RequestTTLSeconds and InvocationTimeoutSeconds (FROM_MODELS); defaults from the same page.
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpointAsync.html
REQUEST_TTL_RANGE_S = (60, 21_600)
INVOCATION_TIMEOUT_RANGE_S = (1, 3_600)
DEFAULT_REQUEST_TTL_S = 21_600
DEFAULT_ASYNC_INVOCATION_TIMEOUT_S = 900
# InvokeEndpoint CustomAttributes, SessionId and TargetModel lengths (FROM_MODELS).
CUSTOM_ATTRIBUTES_LIMIT = 1024
MAX_SESSION_ID = 256
TARGET_MODEL_MAX_LEN = 1024
# A bearer token of the OpenAI-compatible route lives at most 12 hours.
# https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html
MAX_TOKEN_SECONDS = 12 * 3600
# Signature Version 4: a request's time may differ from the service's clock by at most 5 minutes.
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-troubleshooting.html
MAX_SIGNATURE_SKEW_S = 5 * 60

# --- Names and models ---
# EndpointName and InferenceComponentName: at most 63 characters (FROM_MODELS).
MAX_NAME_LENGTH = 63
# CreateModel Containers: at most 15 (FROM_MODELS).
MAX_CONTAINERS = 15
# ContainerDefinition.AdditionalModelDataSources: at most 5 per container; a ChannelName is 1-64 characters
# (FROM_MODELS). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html
MAX_CHANNELS = 5
CHANNEL_NAME_LENGTH = (1, 64)

# --- HTTP front doors ---
# Application Load Balancers: request line 16 KiB, a single header 16 KiB, the entire request header 64 KiB
# (a request over any of them is answered 400). SageMaker Runtime documents no limits of its own.
# https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas
ALB_REQUEST_LINE = 16 * 1024
ALB_HEADER_FIELD = 16 * 1024
ALB_REQUEST_HEADERS = 64 * 1024

# --- Batch transform ---
# MaxPayloadInMB: default 6, at most 100, and MaxConcurrentTransforms x MaxPayloadInMB <= 100.
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTransformJob.html
BATCH_DEFAULT_MAX_PAYLOAD_MB = 6
BATCH_MAX_PAYLOAD_MB = 100
# MaxConcurrentTransforms left unset, without the container's execution-parameters: 1 (the member's
# documentation).
DEFAULT_MAX_CONCURRENT_TRANSFORMS = 1
# DataProcessing InputFilter / OutputFilter: at most 63 characters (FROM_MODELS).
FILTER_MAX_LENGTH = 63
# ModelClientConfig: InvocationsTimeoutInSeconds 1-3600, default 600; InvocationsMaxRetries 0-3, default 3
# (FROM_MODELS; the defaults from the members' documentation).
INVOCATIONS_TIMEOUT_RANGE_S = (1, 3600)
DEFAULT_INVOCATIONS_TIMEOUT_S = 600
MAX_INVOCATIONS_RETRIES = 3

# --- Endpoint configs and endpoints ---
# ContainerDefinition.Environment: at most 100 entries, each key and value at most 1024 characters
# (FROM_MODELS).
MAX_ENV_ENTRIES = 100
MAX_ENV_BYTES = 1024
# ... and "The maximum length of all keys and values in the map, combined, is 32 KB.", per container and per
# CreateModel request (botocore's documentation of the member).
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
MAX_ENV_TOTAL_BYTES = 32 * 1024
# ProductionVariantServerlessConfig.MemorySizeInMB: 1024-6144 (FROM_MODELS) in 1 GB steps.
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantServerlessConfig.html
SERVERLESS_MEMORY_MB = (1024, 2048, 3072, 4096, 5120, 6144)
# TargetTrackingScalingPolicyConfiguration.TargetValue: "Values must be in the range of -2^360 to 2^360."
# (botocore's application-autoscaling documentation of the member; the kit's targets are positive).
# https://docs.aws.amazon.com/autoscaling/application/APIReference/API_TargetTrackingScalingPolicyConfiguration.html
MAX_TARGET_VALUE = 2**360
# MetricsConfig.MetricPublishFrequencyInSeconds (and ContainerMetricsConfig's MetricsEndpoint): the model has
# no enum on the integer; its documentation lists them, "Valid values: 10, 30, 60, 120, 180, 240, 300."
# (tests/aws/test_limits.py reads that sentence). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html
METRICS_PUBLISH_FREQUENCIES_S = (10, 30, 60, 120, 180, 240, 300)
# ProductionVariant.InstancePools: at most 5 pools (FROM_MODELS).
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html
MAX_INSTANCE_POOLS = 5
# AutoRollbackConfig.Alarms: 1 to 10 alarms (FROM_MODELS).
MAX_ROLLBACK_ALARMS = 10
# CanarySize <= 50% and LinearStepSize 10-50% of the new fleet's capacity.
# https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-sagemaker-endpoint-trafficroutingconfig.html
CANARY_MAX_PERCENT = 50
LINEAR_PERCENT = (10, 50)
# BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds: 600-28800, as RollingUpdatePolicy's (FROM_MODELS;
# the CloudFormation schema of AWS::SageMaker::Endpoint says the same).
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_BlueGreenUpdatePolicy.html
MAX_EXECUTION_TIMEOUT = 28800
# MaximumBatchSize (and RollbackMaximumBatchSize) of a rolling update: 5-50% of the variant's instances, or of
# the component's copies. https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_RollingUpdatePolicy.html
BATCH_PERCENT = (5, 50)

# --- Other services the stacks use ---
# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy retentionInDays).
# https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html
LOG_RETENTION_DAYS = (
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
)  # fmt: skip
# Lambda's /tmp (EphemeralStorage.Size), MB, as the model-copy function sizes it.
# https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html
LAMBDA_EPHEMERAL_MB = (512, 10240)
# A standard-tier SSM parameter holds at most 4 KB.
# https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
SSM_STANDARD_LIMIT = 4096

# CloudWatch PutMetricData (botocore's cloudwatch model, PutMetricDataInput.MetricData): "The array can include
# no more than 1000 metrics per call."
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html
MAX_METRIC_DATA_PER_CALL = 1000

# --- The config's fields: the API member each becomes (FROM_MODELS unless a page is cited) ---
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html
VOLUME_SIZE_RANGE_GB = (1, 512)
MODEL_DOWNLOAD_TIMEOUT_RANGE_S = (60, 3600)
PROVISION_TIMEOUT_RANGE_S = (300, 3600)
# InitialInstanceCount (production and shadow variants) and ManagedInstanceScaling.MaxInstanceCount: at least
# 1; MinInstanceCount at least 0. The models set no maximum (the account's quotas do).
MIN_INSTANCE_COUNT = 1
MIN_MANAGED_INSTANCES = 0
POOL_PRIORITY_RANGE = (1, 5)
# ProductionVariantServerlessConfig MaxConcurrency and ProvisionedConcurrency.
SERVERLESS_CONCURRENCY_RANGE = (1, 200)
# AsyncInferenceClientConfig.MaxConcurrentInvocationsPerInstance.
ASYNC_CONCURRENCY_RANGE = (1, 1000)
# WaitIntervalInSeconds of traffic routing and of rolling updates, TerminationWaitInSeconds of blue/green.
WAIT_INTERVAL_RANGE_S = (0, 3600)
EXECUTION_TIMEOUT_RANGE_S = (600, MAX_EXECUTION_TIMEOUT)
# CapacitySize.Value (canary, linear, rolling batches) and InferenceComponentCapacitySize.Value: at least 1.
MIN_CAPACITY_SIZE = 1
# DataCaptureConfig.InitialSamplingPercentage.
SAMPLING_PERCENT_RANGE = (0, 100)
# CaptureContentTypeHeader CsvContentTypes / JsonContentTypes: at most 10 entries of at most 256 characters
# (tests/aws/test_limits.py reads the entries' shapes).
MAX_CAPTURE_CONTENT_TYPES = 10
CONTENT_TYPE_MAX_LENGTH = 256
# CreateEndpointConfig ProductionVariants: at most 10. ShadowProductionVariants: "If you use this field, you can
# only specify one variant for ProductionVariants and one variant for ShadowProductionVariants." (the member's
# documentation; tests/aws/test_limits.py reads it).
MAX_PRODUCTION_VARIANTS = 10
MAX_SHADOW_VARIANTS = 1
# InferenceComponentComputeResourceRequirements: memory at least 128 MB, CPU cores at least 0.25, accelerators
# at least 1. https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentComputeResourceRequirements.html
MIN_COPY_MEMORY_MB = 128
MIN_COPY_CPU_CORES = 0.25
MIN_COPY_ACCELERATORS = 1
# CreateInferenceComponent Specifications: at most 5 (one per instance pool).
MAX_SPECIFICATIONS = 5
# InferenceComponentAvailabilityZoneBalance.MaxImbalance.
AZ_IMBALANCE_RANGE = (0, 100)
# VpcConfig: at most 16 subnets and 5 security groups.
MAX_SUBNETS = 16
MAX_SECURITY_GROUPS = 5
# CloudWatch PutMetricAlarm EvaluationPeriods: at least 1; and (the Period member's documentation) "For alarms
# with a period of less than one hour (3,600 seconds), the total evaluation period can't be longer than one
# day (86,400 seconds)."
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html
MIN_EVALUATION_PERIODS = 1
MAX_SUB_HOUR_EVALUATION_S = 86_400
# The Period of the kit's alarms and of the metrics they watch: one minute, the interval SageMaker publishes
# invocation metrics at (https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html), and one
# of the periods PutMetricAlarm takes: "Valid values are 10, 20, 30, and any multiple of 60."
ALARM_PERIOD_S = 60
# PutMetricAlarm AlarmActions and OKActions: at most 5 each (the CloudFormation schema of AWS::CloudWatch::Alarm
# sets no maximum; the API's holds).
MAX_ALARM_ACTIONS = 5
# ProductionVariant InitialVariantWeight: 0 or more; "The traffic to a production variant is determined by the
# ratio of the VariantWeight to the sum of all VariantWeight values across all ProductionVariants."
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html
MIN_VARIANT_WEIGHT = 0
# ContainerMetricsConfig MetricsEndpoint.MetricsEndpointPath: at most 256 characters.
METRICS_PATH_MAX_LENGTH = 256
# CodeCommit repositoryName: at most 100 characters.
# https://docs.aws.amazon.com/codecommit/latest/APIReference/API_GetRepository.html
CODECOMMIT_NAME_MAX_LENGTH = 100

# Limits AWS's API models hold: constant -> (service, shape, member, "min" or "max"), or two such reads for a
# (min, max) pair (:func:`min_max`). tests/aws/test_limits.py checks each against botocore's model.
Read = tuple[str, str, str, str]


def min_max(shape: str, member: str, *, service: str = "sagemaker") -> tuple[Read, Read]:
    """The reads of ``shape.member``'s minimum and maximum in ``service``'s model."""
    return (service, shape, member, "min"), (service, shape, member, "max")


FROM_MODELS: Mapping[str, tuple[Read, ...]] = {
    "STARTUP_HEALTH_CHECK_RANGE_S": min_max(
        "ProductionVariant", "ContainerStartupHealthCheckTimeoutInSeconds"
    ),
    "REQUEST_TTL_RANGE_S": min_max(
        "InvokeEndpointAsyncInput", "RequestTTLSeconds", service="sagemaker-runtime"
    ),
    "INVOCATION_TIMEOUT_RANGE_S": min_max(
        "InvokeEndpointAsyncInput", "InvocationTimeoutSeconds", service="sagemaker-runtime"
    ),
    "CUSTOM_ATTRIBUTES_LIMIT": (("sagemaker-runtime", "InvokeEndpointInput", "CustomAttributes", "max"),),
    "MAX_SESSION_ID": (("sagemaker-runtime", "InvokeEndpointInput", "SessionId", "max"),),
    "TARGET_MODEL_MAX_LEN": (("sagemaker-runtime", "InvokeEndpointInput", "TargetModel", "max"),),
    "FILTER_MAX_LENGTH": (("sagemaker", "DataProcessing", "InputFilter", "max"),),
    "INVOCATIONS_TIMEOUT_RANGE_S": min_max("ModelClientConfig", "InvocationsTimeoutInSeconds"),
    "MAX_INVOCATIONS_RETRIES": (("sagemaker", "ModelClientConfig", "InvocationsMaxRetries", "max"),),
    "MAX_ENV_ENTRIES": (("sagemaker", "ContainerDefinition", "Environment", "max"),),
    "MAX_ROLLBACK_ALARMS": (("sagemaker", "AutoRollbackConfig", "Alarms", "max"),),
    "MAX_EXECUTION_TIMEOUT": (
        ("sagemaker", "BlueGreenUpdatePolicy", "MaximumExecutionTimeoutInSeconds", "max"),
        ("sagemaker", "RollingUpdatePolicy", "MaximumExecutionTimeoutInSeconds", "max"),
    ),
    "MAX_NAME_LENGTH": (
        ("sagemaker", "CreateEndpointInput", "EndpointName", "max"),
        ("sagemaker", "CreateInferenceComponentInput", "InferenceComponentName", "max"),
    ),
    "MAX_CONTAINERS": (("sagemaker", "CreateModelInput", "Containers", "max"),),
    "MAX_CHANNELS": (("sagemaker", "ContainerDefinition", "AdditionalModelDataSources", "max"),),
    "CHANNEL_NAME_LENGTH": min_max("AdditionalModelDataSource", "ChannelName"),
    "MAX_INSTANCE_POOLS": (("sagemaker", "ProductionVariant", "InstancePools", "max"),),
    "VOLUME_SIZE_RANGE_GB": min_max("ProductionVariant", "VolumeSizeInGB"),
    "MODEL_DOWNLOAD_TIMEOUT_RANGE_S": (
        *min_max("ProductionVariant", "ModelDataDownloadTimeoutInSeconds"),
        *min_max("InferenceComponentStartupParameters", "ModelDataDownloadTimeoutInSeconds"),
    ),
    "PROVISION_TIMEOUT_RANGE_S": min_max("ProductionVariant", "VariantInstanceProvisionTimeoutInSeconds"),
    "MIN_INSTANCE_COUNT": (
        ("sagemaker", "ProductionVariant", "InitialInstanceCount", "min"),
        ("sagemaker", "ProductionVariantManagedInstanceScaling", "MaxInstanceCount", "min"),
    ),
    "MIN_MANAGED_INSTANCES": (
        ("sagemaker", "ProductionVariantManagedInstanceScaling", "MinInstanceCount", "min"),
    ),
    "POOL_PRIORITY_RANGE": min_max("InstancePool", "Priority"),
    "SERVERLESS_CONCURRENCY_RANGE": (
        *min_max("ProductionVariantServerlessConfig", "MaxConcurrency"),
        *min_max("ProductionVariantServerlessConfig", "ProvisionedConcurrency"),
    ),
    "ASYNC_CONCURRENCY_RANGE": min_max("AsyncInferenceClientConfig", "MaxConcurrentInvocationsPerInstance"),
    "WAIT_INTERVAL_RANGE_S": (
        *min_max("TrafficRoutingConfig", "WaitIntervalInSeconds"),
        *min_max("BlueGreenUpdatePolicy", "TerminationWaitInSeconds"),
        *min_max("RollingUpdatePolicy", "WaitIntervalInSeconds"),
        *min_max("InferenceComponentRollingUpdatePolicy", "WaitIntervalInSeconds"),
    ),
    "EXECUTION_TIMEOUT_RANGE_S": (
        *min_max("BlueGreenUpdatePolicy", "MaximumExecutionTimeoutInSeconds"),
        *min_max("InferenceComponentRollingUpdatePolicy", "MaximumExecutionTimeoutInSeconds"),
    ),
    "MIN_CAPACITY_SIZE": (
        ("sagemaker", "CapacitySize", "Value", "min"),
        ("sagemaker", "InferenceComponentCapacitySize", "Value", "min"),
    ),
    "SAMPLING_PERCENT_RANGE": min_max("DataCaptureConfig", "InitialSamplingPercentage"),
    "MAX_CAPTURE_CONTENT_TYPES": (
        ("sagemaker", "CaptureContentTypeHeader", "CsvContentTypes", "max"),
        ("sagemaker", "CaptureContentTypeHeader", "JsonContentTypes", "max"),
    ),
    "MAX_PRODUCTION_VARIANTS": (("sagemaker", "CreateEndpointConfigInput", "ProductionVariants", "max"),),
    "MIN_COPY_MEMORY_MB": (
        ("sagemaker", "InferenceComponentComputeResourceRequirements", "MinMemoryRequiredInMb", "min"),
        ("sagemaker", "InferenceComponentComputeResourceRequirements", "MaxMemoryRequiredInMb", "min"),
    ),
    "MIN_COPY_CPU_CORES": (
        ("sagemaker", "InferenceComponentComputeResourceRequirements", "NumberOfCpuCoresRequired", "min"),
    ),
    "MIN_COPY_ACCELERATORS": (
        (
            "sagemaker",
            "InferenceComponentComputeResourceRequirements",
            "NumberOfAcceleratorDevicesRequired",
            "min",
        ),
    ),
    "MAX_SPECIFICATIONS": (("sagemaker", "CreateInferenceComponentInput", "Specifications", "max"),),
    "AZ_IMBALANCE_RANGE": min_max("InferenceComponentAvailabilityZoneBalance", "MaxImbalance"),
    "MAX_SUBNETS": (("sagemaker", "VpcConfig", "Subnets", "max"),),
    "MAX_SECURITY_GROUPS": (("sagemaker", "VpcConfig", "SecurityGroupIds", "max"),),
    "MIN_EVALUATION_PERIODS": (("cloudwatch", "PutMetricAlarmInput", "EvaluationPeriods", "min"),),
    "MAX_ALARM_ACTIONS": (
        ("cloudwatch", "PutMetricAlarmInput", "AlarmActions", "max"),
        ("cloudwatch", "PutMetricAlarmInput", "OKActions", "max"),
    ),
    "MIN_VARIANT_WEIGHT": (
        ("sagemaker", "ProductionVariant", "InitialVariantWeight", "min"),
        ("sagemaker", "DesiredWeightAndCapacity", "DesiredWeight", "min"),
    ),
    "METRICS_PATH_MAX_LENGTH": (("sagemaker", "MetricsEndpoint", "MetricsEndpointPath", "max"),),
    "CODECOMMIT_NAME_MAX_LENGTH": (("codecommit", "GetRepositoryInput", "repositoryName", "max"),),
}
