"""The real path: the same options as a CreateTransformJob request, checked against botocore's API model.

https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTransformJob.html. Options left unset
are left out of the request, so SageMaker (or the container's ``/execution-parameters``) decides them, as
it would for a request made by hand. :func:`submit` sends it with boto3; ``AWS_ENDPOINT_URL`` (or
``endpoint_url``) points it at moto's server in tests.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

from smkit.aws.instances import INSTANCE_TYPE_RE
from smkit.aws.patterns import AWS_NAME
from smkit.batch.options import (
    AssembleWith,
    CompressionType,
    JoinSource,
    SplitType,
    TransformOptions,
    TransformOptionsError,
)

JOB_NAME = re.compile(AWS_NAME)  # TransformJobName
DEFAULT_INSTANCE_TYPE = "ml.m5.large"


@dataclass(frozen=True)
class JobTarget:
    """Everything a real job needs besides the options: model, locations, resources."""

    model_name: str
    input_uri: str
    output_uri: str
    job_name: str | None = None
    instance_type: str = DEFAULT_INSTANCE_TYPE
    instance_count: int = 1
    input_data_type: str = "S3Prefix"
    kms_key_id: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)


def default_job_name(model_name: str) -> str:
    """``<model>-batch-<unix time>``, trimmed to the 63 characters SageMaker allows."""
    suffix = f"-batch-{int(time.time())}"
    stem = re.sub(r"[^a-zA-Z0-9-]", "-", model_name).strip("-") or "smkit"
    return stem[: 63 - len(suffix)] + suffix


def build_request(options: TransformOptions, target: JobTarget) -> dict[str, Any]:
    """The CreateTransformJob parameters for ``options`` and ``target``; raise on anything AWS would refuse."""
    problems = _target_problems(target)
    if problems:
        raise TransformOptionsError(problems)
    transform_input: dict[str, Any] = {
        "DataSource": {"S3DataSource": {"S3DataType": target.input_data_type, "S3Uri": target.input_uri}},
    }
    if options.content_type:
        transform_input["ContentType"] = options.content_type
    if options.compression_type is not CompressionType.NONE:
        transform_input["CompressionType"] = str(options.compression_type)
    if options.split_type is not SplitType.NONE:
        transform_input["SplitType"] = str(options.split_type)
    transform_output: dict[str, Any] = {"S3OutputPath": target.output_uri}
    if options.accept:
        transform_output["Accept"] = options.accept
    if options.assemble_with is not AssembleWith.NONE:
        transform_output["AssembleWith"] = str(options.assemble_with)
    if target.kms_key_id:
        transform_output["KmsKeyId"] = target.kms_key_id
    request: dict[str, Any] = {
        "TransformJobName": target.job_name or default_job_name(target.model_name),
        "ModelName": target.model_name,
        "ModelClientConfig": {
            "InvocationsTimeoutInSeconds": options.invocations_timeout_s,
            "InvocationsMaxRetries": options.invocations_max_retries,
        },
        "TransformInput": transform_input,
        "TransformOutput": transform_output,
        "TransformResources": {
            "InstanceType": target.instance_type,
            "InstanceCount": target.instance_count,
        },
    }
    if options.max_concurrent_transforms is not None:
        request["MaxConcurrentTransforms"] = options.max_concurrent_transforms
    if options.max_payload_mb is not None:
        request["MaxPayloadInMB"] = options.max_payload_mb
    if options.batch_strategy is not None:
        request["BatchStrategy"] = str(options.batch_strategy)
    if target.environment:
        request["Environment"] = dict(target.environment)
    processing = _data_processing(options)
    if processing:
        request["DataProcessing"] = processing
    if target.tags:
        request["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(target.tags.items())]
    check_against_api_model(request)
    return request


def _data_processing(options: TransformOptions) -> dict[str, str]:
    processing: dict[str, str] = {}
    if options.input_filter is not None:
        processing["InputFilter"] = options.input_filter
    if options.output_filter is not None:
        processing["OutputFilter"] = options.output_filter
    if options.join_source is not JoinSource.NONE:
        processing["JoinSource"] = str(options.join_source)
    return processing


def _target_problems(target: JobTarget) -> list[str]:
    problems = []
    if not target.model_name:
        problems.append("ModelName is required for a real transform job: the name of a SageMaker Model")
    for what, uri in (("the input location", target.input_uri), ("the output location", target.output_uri)):
        if not uri.startswith("s3://"):
            problems.append(
                f"{what} {uri!r} must be an s3:// URI for a real transform job (or run it locally)"
            )
    if target.job_name and not JOB_NAME.match(target.job_name):
        problems.append(
            f"TransformJobName {target.job_name!r} is not valid: 1-63 letters, digits and "
            "hyphens, starting and ending with a letter or digit"
        )
    if not INSTANCE_TYPE_RE.match(target.instance_type):
        problems.append(
            f"InstanceType {target.instance_type!r} is not a SageMaker instance type; use e.g. ml.m5.large"
        )
    if target.instance_count < 1:
        problems.append(f"InstanceCount {target.instance_count} must be 1 or more")
    return problems


def check_against_api_model(request: dict[str, Any]) -> None:
    """Validate ``request`` with botocore's own CreateTransformJob shape (enums, ranges, lengths), offline."""
    import botocore.session
    from botocore.validate import ParamValidator

    operation = botocore.session.get_session().get_service_model("sagemaker")
    shape = operation.operation_model("CreateTransformJob").input_shape
    report = ParamValidator().validate(request, shape)
    if report.has_errors():
        raise TransformOptionsError(
            [f"CreateTransformJob would be refused: {line}" for line in report.generate_report().splitlines()]
        )


WAIT_DELAY_S = 30
WAIT_MAX_ATTEMPTS = 240  # two hours of polling


def submit(request: dict[str, Any], *, endpoint_url: str | None = None, wait: bool = False) -> dict[str, Any]:
    """Call CreateTransformJob; return DescribeTransformJob's answer for the new job.

    With ``wait`` it first polls (botocore's ``transform_job_completed_or_stopped`` waiter) until the job is
    Completed, Failed or Stopped; a Failed job's answer carries ``FailureReason``.
    """
    import boto3
    from botocore.exceptions import WaiterError

    client = boto3.client("sagemaker", endpoint_url=endpoint_url)
    name = request["TransformJobName"]
    client.create_transform_job(**request)
    if wait:
        waiter = client.get_waiter("transform_job_completed_or_stopped")
        # A Failed job ends the waiter with WaiterError; the describe below reports it.
        with contextlib.suppress(WaiterError):
            waiter.wait(
                TransformJobName=name,
                WaiterConfig={"Delay": WAIT_DELAY_S, "MaxAttempts": WAIT_MAX_ATTEMPTS},
            )
    answer: dict[str, Any] = client.describe_transform_job(TransformJobName=name)
    return answer
