"""The formats of AWS's names, ARNs, URIs and headers the kit checks: one place, each with its source.

Plain strings (and compiled expressions where a caller needs their groups), so the config, the constructs, the
local endpoint and batch import them without loading botocore. Where AWS's API model holds the pattern, it is
the model's, anchored (``^...$``): :data:`FROM_MODELS` names the member and tests/aws/test_patterns.py checks
the text against botocore's model; the others cite the AWS page that states the format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# --- SageMaker names ---
# VariantName, ContainerHostname, EndpointName, TransformJobName: alphanumerics and single or repeated
# hyphens, at most 63 characters (FROM_MODELS).
AWS_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
# InferenceComponentName: the model's pattern ``[a-zA-Z0-9]([\-a-zA-Z0-9]*[a-zA-Z0-9])?`` and its length limit
# (63) in one expression (tests/aws/test_patterns.py compares the two on sample names).
COMPONENT_NAME = r"^[a-zA-Z0-9]([\-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$"
# InvokeEndpoint SessionId (SessionIdOrNewSessionConstantHeader), InvokeEndpointWithResponseStream SessionId
# (SessionIdHeader) and the container's NewSessionResponseHeader answer (FROM_MODELS).
SESSION_ID = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"
NEW_OR_SESSION_ID = r"^(NEW_SESSION)$|^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"
NEW_SESSION_VALUE = (
    r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*;\sExpires=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
)
# AdditionalModelDataSource.ChannelName: letters, digits, '.', '-' and '_' (FROM_MODELS; its 1-64 length is
# limits.CHANNEL_NAME_LENGTH). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html
CHANNEL_NAME = r"^[A-Za-z0-9\.\-_]+$"
# ContainerMetricsConfig MetricsEndpoint.MetricsEndpointPath (FROM_MODELS): "The path must start with / and can
# contain alphanumeric characters, forward slashes, underscores, hyphens, and periods." (no "..").
METRICS_PATH = r"^/(?!.*\.\.)[a-zA-Z0-9/_.\-]+$"
# CaptureContentTypeHeader CsvContentTypes / JsonContentTypes entries: a media type such as text/csv
# (FROM_MODELS, the entries' shapes CsvContentType / JsonContentType).
MEDIA_TYPE = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*\/[a-zA-Z0-9](-*[a-zA-Z0-9.])*$"
# CapacityReservationConfig.MlReservationArn: the model's pattern with a non-empty, space-free id after the
# slash (the model's ends ``/.*``): arn:PARTITION:sagemaker:REGION:ACCOUNT:TYPE/ID.
ML_RESERVATION_ARN = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z0-9\-]{1,14}/\S+$"
RESERVATION_REGION = re.compile(r"^arn:aws[a-z-]*:sagemaker:(?P<region>[a-z0-9-]*):")
# A version of a model registry group, as an ARN or GROUP/VERSION (the group name and version parts of the
# model's VersionedArnOrName pattern).
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
PACKAGE_VERSION = re.compile(
    r"^(?:arn:(?P<partition>aws[a-z-]*):sagemaker:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):model-package/)?"
    r"(?P<group>[a-zA-Z0-9](?:[a-zA-Z0-9-]){0,62})(?<!-)/(?P<version>[0-9]{1,9})$"
)

# --- Accounts and regions ---
# An AWS account ID: exactly 12 digits (FROM_MODELS: AWS Organizations' Account.Id).
ACCOUNT_ID = r"^\d{12}$"
# A region name (us-east-1, ap-southeast-2, eusc-de-east-1): tests/aws/test_patterns.py matches it against every
# region of every partition in botocore's endpoints.json.
# https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-regions.html
REGION = r"^[a-z]{2,4}(-[a-z]+)+-\d+$"

# --- Images ---
# An ECR image: ACCOUNT.dkr.ecr.REGION.amazonaws.com[.cn]/NAME:TAG or NAME@sha256:DIGEST; SageMaker pulls only
# from a registry in the endpoint's own region.
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/docker-pull-ecr-image.html
# https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-containers-inference-private.html
ECR_IMAGE_URI = (
    r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"
)
IMAGE_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?/"
    r"(?P<name>[a-z0-9._/-]+)(?::[\w.-]+|@sha256:[0-9a-f]{64})$"
)
IMAGE_REGION = re.compile(r"^\d{12}\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com")
# An image tag: "A tag name must be valid ASCII and may contain lowercase and uppercase letters, digits,
# underscores, periods and hyphens. A tag name may not start with a period or a hyphen and may contain a maximum
# of 128 characters." https://docs.docker.com/reference/cli/docker/image/tag/
IMAGE_TAG = r"^[\w][\w.-]{0,127}$"

# --- S3 ---
# s3://BUCKET/KEY with an S3 bucket name (3-63 of a-z 0-9 . -) and a non-empty key.
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>\S+)$")
# A key prefix of the kit's data bucket in S3's safe characters (0-9 a-z A-Z ! - _ . * ' ( )) and "/".
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html
S3_KEY_PREFIX = r"^[\w!\-.*'()/]+$"

# --- ARNs of other services ---
# https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html
# KMS: a key or an alias ARN; KMS_KEY only a key (aliases in IAM policy statements match nothing).
# https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html
KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[\w/-]+$"
KMS_KEY = re.compile(r"^arn:aws[a-z-]*:kms:(?P<region>[a-z0-9-]+):\d{12}:key/[\w-]+$")
KMS_ALIAS = re.compile(r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:alias/")
# An SNS topic: arn:PARTITION:sns:REGION:ACCOUNT:NAME (names: letters, digits, hyphens, underscores).
# https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html
SNS_TOPIC_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+$"
# A CodeConnections (formerly CodeStar Connections) connection.
# https://docs.aws.amazon.com/dtconsole/latest/userguide/welcome-connections.html
CONNECTION_ARN = (
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z0-9-]+:\d{12}:connection/[\w-]+$"
)
# A CodeCommit repository name (FROM_MODELS, with its length, at most 100).
CODECOMMIT_REPOSITORY = r"^[\w.-]{1,100}$"

# Patterns AWS's API models hold: constant -> (service, shape, member), the member's pattern anchored; a member
# of None reads the shape's own pattern (the entries of a list).
FROM_MODELS: Mapping[str, tuple[tuple[str, str, str | None], ...]] = {
    "AWS_NAME": (
        ("sagemaker", "ProductionVariant", "VariantName"),
        ("sagemaker", "ContainerDefinition", "ContainerHostname"),
        ("sagemaker", "CreateEndpointInput", "EndpointName"),
        ("sagemaker", "CreateTransformJobRequest", "TransformJobName"),
    ),
    "NEW_OR_SESSION_ID": (("sagemaker-runtime", "InvokeEndpointInput", "SessionId"),),
    "SESSION_ID": (("sagemaker-runtime", "InvokeEndpointWithResponseStreamInput", "SessionId"),),
    "NEW_SESSION_VALUE": (("sagemaker-runtime", "InvokeEndpointOutput", "NewSessionId"),),
    "METRICS_PATH": (("sagemaker", "MetricsEndpoint", "MetricsEndpointPath"),),
    "CHANNEL_NAME": (("sagemaker", "AdditionalModelDataSource", "ChannelName"),),
    "MEDIA_TYPE": (("sagemaker", "CsvContentType", None), ("sagemaker", "JsonContentType", None)),
    "ACCOUNT_ID": (("organizations", "Account", "Id"),),
}
