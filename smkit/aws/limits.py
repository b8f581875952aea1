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

# Limits AWS's API models hold: constant -> (service, shape, member, "min" or "max"), or two such reads for a
# (min, max) pair. tests/aws/test_limits.py checks each against botocore's model.
FROM_MODELS: Mapping[str, tuple[tuple[str, str, str, str], ...]] = {
    "STARTUP_HEALTH_CHECK_RANGE_S": (
        ("sagemaker", "ProductionVariant", "ContainerStartupHealthCheckTimeoutInSeconds", "min"),
        ("sagemaker", "ProductionVariant", "ContainerStartupHealthCheckTimeoutInSeconds", "max"),
    ),
    "REQUEST_TTL_RANGE_S": (
        ("sagemaker-runtime", "InvokeEndpointAsyncInput", "RequestTTLSeconds", "min"),
        ("sagemaker-runtime", "InvokeEndpointAsyncInput", "RequestTTLSeconds", "max"),
    ),
    "INVOCATION_TIMEOUT_RANGE_S": (
        ("sagemaker-runtime", "InvokeEndpointAsyncInput", "InvocationTimeoutSeconds", "min"),
        ("sagemaker-runtime", "InvokeEndpointAsyncInput", "InvocationTimeoutSeconds", "max"),
    ),
    "CUSTOM_ATTRIBUTES_LIMIT": (("sagemaker-runtime", "InvokeEndpointInput", "CustomAttributes", "max"),),
    "MAX_SESSION_ID": (("sagemaker-runtime", "InvokeEndpointInput", "SessionId", "max"),),
    "TARGET_MODEL_MAX_LEN": (("sagemaker-runtime", "InvokeEndpointInput", "TargetModel", "max"),),
    "FILTER_MAX_LENGTH": (("sagemaker", "DataProcessing", "InputFilter", "max"),),
    "INVOCATIONS_TIMEOUT_RANGE_S": (
        ("sagemaker", "ModelClientConfig", "InvocationsTimeoutInSeconds", "min"),
        ("sagemaker", "ModelClientConfig", "InvocationsTimeoutInSeconds", "max"),
    ),
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
    "MAX_INSTANCE_POOLS": (("sagemaker", "ProductionVariant", "InstancePools", "max"),),
}
