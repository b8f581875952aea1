"""``smkit batch-transform``: a transform job with CreateTransformJob's options, locally or on SageMaker."""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from smkit.batch.options import (
    AssembleWith,
    BatchStrategy,
    CompressionType,
    JoinSource,
    SplitType,
    TransformOptions,
    TransformOptionsError,
    validate,
)
from smkit.contract import DEFAULT_STARTUP_HEALTH_CHECK_S

if TYPE_CHECKING:
    from smkit.batch.local import LocalModel
    from smkit.batch.request import JobTarget

_Options = SplitType | BatchStrategy | AssembleWith | JoinSource | CompressionType


def _enum_option(flag: str, enum_type: type[_Options], help_: str, *, default: str | None = "None") -> Any:
    """An option whose values are the members of one of CreateTransformJob's enums (any case)."""
    return click.option(
        flag,
        type=click.Choice([str(member) for member in enum_type], case_sensitive=False),
        default=default,
        show_default=default is not None,
        help=help_,
    )


def _env_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(
                f"{pair!r} is not NAME=VALUE (e.g. --env SAGEMAKER_PROGRAM=inference.py)"
            )
        env[name] = value
    return env


# CreateTransformJob's own fields (TransformInput, TransformOutput, DataProcessing, the invocation limits): the
# same for a local run and a real job, handed to the command as one TransformOptions.
_TRANSFORM_OPTIONS = (
    click.option("--content-type", default=None, help="TransformInput.ContentType, sent as Content-Type."),
    click.option("--accept", default=None, help="TransformOutput.Accept, sent as Accept."),
    _enum_option(
        "--split-type",
        SplitType,
        "TransformInput.SplitType: None, Line, RecordIO or TFRecord (the last two only without --local).",
    ),
    _enum_option(
        "--compression-type",
        CompressionType,
        "TransformInput.CompressionType: None or Gzip (inputs are gunzipped before splitting).",
    ),
    _enum_option(
        "--batch-strategy",
        BatchStrategy,
        "SingleRecord or MultiRecord. Unset: the container's GET /execution-parameters answer (the smkit "
        "runtime, like the toolkit, says MultiRecord), else SingleRecord.",
        default=None,
    ),
    click.option(
        "--max-payload-mb",
        type=int,
        default=None,
        help="MaxPayloadInMB, 0-100 (default: the container's or 6).",
    ),
    click.option(
        "--max-concurrent-transforms",
        type=int,
        default=None,
        help="Parallel requests (default: the container's or 1).",
    ),
    _enum_option(
        "--assemble-with",
        AssembleWith,
        "TransformOutput.AssembleWith: None (outputs glued together) or Line (one per line).",
    ),
    click.option(
        "--input-filter",
        default=None,
        help="DataProcessing.InputFilter JSONPath, e.g. '$[1:]' or '$.features'.",
    ),
    click.option(
        "--output-filter",
        default=None,
        help="DataProcessing.OutputFilter JSONPath, e.g. \"$['id','SageMakerOutput']\".",
    ),
    _enum_option(
        "--join-source",
        JoinSource,
        "DataProcessing.JoinSource: None or Input (output joined to its input record).",
    ),
    click.option(
        "--invocations-timeout", type=int, default=600, show_default=True, help="Seconds per request."
    ),
    click.option("--invocations-max-retries", type=int, default=3, show_default=True),
)


def _transform_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add :data:`_TRANSFORM_OPTIONS` to ``command``, which takes their values as ``options``."""

    @functools.wraps(command)
    def with_options(
        *,
        content_type: str | None,
        accept: str | None,
        split_type: str,
        compression_type: str,
        batch_strategy: str | None,
        max_payload_mb: int | None,
        max_concurrent_transforms: int | None,
        assemble_with: str,
        input_filter: str | None,
        output_filter: str | None,
        join_source: str,
        invocations_timeout: int,
        invocations_max_retries: int,
        **rest: Any,
    ) -> None:
        options = TransformOptions(
            content_type=content_type,
            accept=accept,
            split_type=SplitType(_canonical(SplitType, split_type)),
            compression_type=CompressionType(_canonical(CompressionType, compression_type)),
            batch_strategy=BatchStrategy(_canonical(BatchStrategy, batch_strategy))
            if batch_strategy
            else None,
            max_payload_mb=max_payload_mb,
            max_concurrent_transforms=max_concurrent_transforms,
            assemble_with=AssembleWith(_canonical(AssembleWith, assemble_with)),
            input_filter=input_filter,
            output_filter=output_filter,
            join_source=JoinSource(_canonical(JoinSource, join_source)),
            invocations_timeout_s=invocations_timeout,
            invocations_max_retries=invocations_max_retries,
        )
        command(options=options, **rest)

    decorated: Callable[..., None] = with_options
    for option in reversed(_TRANSFORM_OPTIONS):
        decorated = option(decorated)
    return decorated


@click.command("batch-transform")
@click.option(
    "--local", "local", is_flag=True, help="Run against the local serving runtime instead of SageMaker."
)
@click.option(
    "--model", "model_path", type=click.Path(path_type=Path), help="--local: model.tar.gz or model folder."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="--local: deployment YAML (one container).",
)
@click.option(
    "--model-name",
    default=None,
    help="Without --local: the SageMaker Model to run (CreateTransformJob ModelName).",
)
@click.option("--input", "input_location", required=True, help="File, folder or s3:// prefix (S3Prefix).")
@click.option(
    "--output", "output_location", required=True, help="Folder or s3:// prefix for <input name>.out objects."
)
@_transform_options
@click.option(
    "--startup-timeout",
    type=click.FloatRange(min=1),
    default=DEFAULT_STARTUP_HEALTH_CHECK_S,
    show_default=True,
    help="--local: seconds the serving runtime may take to answer /ping 200.",
)
@click.option(
    "--endpoint-url", default=None, help="AWS endpoint (e.g. moto's server); else AWS_ENDPOINT_URL."
)
@click.option(
    "--container-log",
    type=click.Path(path_type=Path),
    default=None,
    help="--local: keep the runtime's log here.",
)
@click.option(
    "--job-name", default=None, help="Without --local: TransformJobName (default <model>-batch-<time>)."
)
@click.option("--instance-type", default="ml.m5.large", show_default=True)
@click.option("--instance-count", type=int, default=1, show_default=True)
@click.option("--kms-key-id", default=None, help="Without --local: TransformOutput.KmsKeyId.")
@click.option("--env", "env_pairs", multiple=True, help="Container environment NAME=VALUE (repeatable).")
@click.option(
    "--dry-run", is_flag=True, help="Without --local: print the CreateTransformJob request, do not send it."
)
@click.option(
    "--wait", is_flag=True, help="Without --local: poll until the job ends; exit 1 unless it Completed."
)
@click.option(
    "--python",
    type=click.Path(exists=True, dir_okay=False),
    help="--local: run the model with this interpreter instead of its own environment (smkit env).",
)
def batch_transform(
    *,
    local: bool,
    model_path: Path | None,
    config_path: Path | None,
    model_name: str | None,
    input_location: str,
    output_location: str,
    options: TransformOptions,
    startup_timeout: float,
    endpoint_url: str | None,
    container_log: Path | None,
    job_name: str | None,
    instance_type: str,
    instance_count: int,
    kms_key_id: str | None,
    env_pairs: tuple[str, ...],
    dry_run: bool,
    wait: bool,
    python: str | None,
) -> None:
    """Run a batch transform job with SageMaker's semantics.

    With --local the job runs here against the serving runtime: records are split (SplitType), packed
    (BatchStrategy, MaxPayloadInMB), sent MaxConcurrentTransforms at a time, filtered and joined
    (DataProcessing) and assembled (AssembleWith) into one <input name>.out per input object. The command
    exits 1 when any input object failed. Without --local the same options become a CreateTransformJob
    request for an existing SageMaker Model (--model-name).
    """
    environment = _env_pairs(env_pairs)
    try:
        if local:
            if (model_path is None) == (config_path is None):
                raise click.UsageError(
                    "--local needs exactly one of --model PATH (archive or folder) or --config FILE"
                )
            _run_local(
                options,
                _local_model(model_path, config_path, environment, python),
                input_location=input_location,
                output_location=output_location,
                endpoint_url=endpoint_url,
                container_log=container_log,
                startup_timeout_s=startup_timeout,
            )
            return
        if model_path is not None or config_path is not None:
            raise click.UsageError(
                "--model/--config are for --local; a real job runs an existing SageMaker Model: pass --model-name"
            )
        from smkit.batch.request import JobTarget

        _run_remote(
            options,
            JobTarget(
                model_name=model_name or "",
                input_uri=input_location,
                output_uri=output_location,
                job_name=job_name,
                instance_type=instance_type,
                instance_count=instance_count,
                kms_key_id=kms_key_id,
                environment=environment,
            ),
            endpoint_url=endpoint_url,
            dry_run=dry_run,
            wait=wait,
        )
    except TransformOptionsError as exc:
        raise click.UsageError(str(exc)) from None


def _canonical(enum_type: type[_Options], value: str) -> str:
    return next(str(member) for member in enum_type if str(member).lower() == value.lower())


def _local_model(
    model_path: Path | None, config_path: Path | None, environment: dict[str, str], python: str | None = None
) -> LocalModel:
    from smkit.batch.local import LocalModel, model_from_deployment
    from smkit.config import load_deployment
    from smkit.local.artifacts import ArtifactError
    from smkit.local.environments import environment_for_path
    from smkit.modelenv import ImageRuntime, envs_enabled

    if config_path is None:
        model = LocalModel(Path(str(model_path)), environment)
    else:
        try:
            model = model_from_deployment(load_deployment(config_path), str(config_path))
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        model = dataclasses.replace(model, environment={**model.environment, **environment})
    if not model.path.exists() or not envs_enabled():
        return model  # run_local_job reports a missing model
    try:
        env = environment_for_path(
            model.path, model.runtime or ImageRuntime(), python=python, isolated=model.network_isolation
        )
    except ArtifactError as exc:
        raise click.ClickException(str(exc)) from None
    return dataclasses.replace(model, python=env.python, environment={**env.environ(), **model.environment})


def _run_local(
    options: TransformOptions,
    model: LocalModel,
    *,
    input_location: str,
    output_location: str,
    endpoint_url: str | None,
    container_log: Path | None,
    startup_timeout_s: float,
) -> None:
    from smkit.batch.local import run_local_job
    from smkit.batch.objects import StorageError
    from smkit.process import ProcessStartError

    try:
        result = run_local_job(
            options,
            model,
            input_location=input_location,
            output_location=output_location,
            log=lambda line: click.echo(line, err=True),
            endpoint_url=endpoint_url,
            container_log=container_log,
            startup_timeout_s=startup_timeout_s,
        )
    except TransformOptionsError:
        raise
    except (StorageError, FileNotFoundError, ProcessStartError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(result.summary())
    if not result.ok:
        sys.exit(1)


def _run_remote(
    options: TransformOptions, target: JobTarget, *, endpoint_url: str | None, dry_run: bool, wait: bool
) -> None:
    from smkit.batch.request import build_request, submit

    validate(options, local=False)
    request = build_request(options, target)
    if dry_run:
        click.echo(json.dumps(request, indent=2, ensure_ascii=False))
        return
    answer = submit(request, endpoint_url=endpoint_url, wait=wait)
    status = answer.get("TransformJobStatus", "unknown")
    click.echo(f"Created {answer['TransformJobName']} ({answer.get('TransformJobArn', '')}): {status}")
    if answer.get("FailureReason"):
        click.echo(f"FailureReason: {answer['FailureReason']}", err=True)
    if wait and status != "Completed":
        sys.exit(1)
