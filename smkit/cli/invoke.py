"""``smkit invoke`` and ``smkit smoke-test``: call an endpoint (real or local) through boto3."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from smkit.cli.shared_options import config_option
from smkit.object_store import Storage

if TYPE_CHECKING:
    from smkit.client.invoke import Target


def _read_data(data: str) -> tuple[bytes | None, str | None]:
    """``@FILE`` or ``-`` -> (bytes, None); anything else is a literal -> (None, text)."""
    if data == "-":
        return sys.stdin.buffer.read(), None
    if data.startswith("@"):
        path = Path(data[1:])
        if not path.is_file():
            raise click.BadParameter(f"{data!r}: {path} is not a file", param_hint="--data")
        return path.read_bytes(), None
    return None, data


def _print_answer(decoded: Any, content_type: str | None, raw: bytes, as_raw: bool) -> None:
    from smkit.client.codecs import to_jsonable

    if as_raw:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        return
    click.echo(json.dumps(to_jsonable(decoded), indent=2))


@click.command("invoke")
@click.option("--endpoint", required=True, help="EndpointName.")
@click.option("--endpoint-url", help="SageMaker Runtime URL (the local gateway, e.g. http://127.0.0.1:8080).")
@click.option("--region", help="AWS region (default: the environment's).")
@click.option("--variant", help="TargetVariant.")
@click.option("--target-model", help="TargetModel (multi-model endpoints), e.g. tabular.tar.gz.")
@click.option("--target-container", help="TargetContainerHostname (direct multi-container endpoints).")
@click.option(
    "--inference-component", help="InferenceComponentName (endpoints that host inference components)."
)
@click.option("--content-type", default="application/json", show_default=True, help="Request Content-Type.")
@click.option("--accept", help="Accept (default: the model's default).")
@click.option("--data", required=True, help="@FILE, - (stdin) or a literal (JSON for JSON/NPY types).")
@click.option("--custom-attributes", help="X-Amzn-SageMaker-Custom-Attributes.")
@click.option("--async", "asynchronous", is_flag=True, help="InvokeEndpointAsync, then poll for the result.")
@click.option("--input-location", help="Async: s3:// or file:// request location instead of an inline body.")
@click.option("--timeout", default=900.0, show_default=True, help="Async: seconds to wait for the result.")
@click.option(
    "--s3-endpoint-url", help="S3 endpoint for async output locations (moto's server); default: AWS."
)
@click.option(
    "--output", type=click.Path(dir_okay=False, path_type=Path), help="Also write the raw body here."
)
@click.option("--raw", is_flag=True, help="Print the raw body instead of the deserialized answer.")
@click.option(
    "--stream",
    is_flag=True,
    help="InvokeEndpointWithResponseStream: print each PayloadPart as it arrives (raw bytes).",
)
def invoke_command(
    endpoint: str,
    endpoint_url: str | None,
    region: str | None,
    variant: str | None,
    target_model: str | None,
    target_container: str | None,
    inference_component: str | None,
    content_type: str,
    accept: str | None,
    data: str,
    custom_attributes: str | None,
    asynchronous: bool,
    input_location: str | None,
    timeout: float,
    s3_endpoint_url: str | None,
    output: Path | None,
    raw: bool,
    stream: bool,
) -> None:
    """Invoke an endpoint: serialize with sagemaker.core.serializers by --content-type, deserialize the
    answer with sagemaker.core.deserializers by the RESPONSE Content-Type."""
    from botocore.exceptions import BotoCoreError, ClientError

    from smkit.client.invoke import InvokeError, describe_client_error, invoke, runtime_client

    target = _target(
        variant=variant,
        model=target_model,
        container=target_container,
        component=inference_component,
        asynchronous=asynchronous,
        stream=stream,
        input_location=input_location,
    )
    body = _request_body(data, content_type)
    client = runtime_client(endpoint_url=endpoint_url, region=region)
    # What InvokeEndpoint and InvokeEndpointWithResponseStream are both called with.
    call: dict[str, Any] = {
        "content_type": content_type,
        "accept": accept,
        "target": target,
        "custom_attributes": custom_attributes,
    }
    if stream:
        _invoke_stream(client, endpoint, body, call, output)
        return
    try:
        if asynchronous:
            answer, ctype, payload = _invoke_async(
                client,
                endpoint,
                body,
                content_type=content_type,
                accept=accept,
                custom_attributes=custom_attributes,
                input_location=input_location,
                timeout=timeout,
                storage=Storage(s3_endpoint_url, region or "us-east-1"),
            )
        else:
            result = invoke(client, endpoint, body, **call)
            _say_variant(result)
            answer, ctype, payload = result.decoded(), result.content_type, result.body
    except (ClientError, BotoCoreError, InvokeError) as exc:
        raise click.ClickException(describe_client_error(exc)) from None
    if output is not None:
        output.write_bytes(payload)
    _print_answer(answer, ctype, payload, raw)


def _target(
    *,
    variant: str | None,
    model: str | None,
    container: str | None,
    component: str | None,
    asynchronous: bool,
    stream: bool,
    input_location: str | None,
) -> Target:
    """The one target the flags name, checked against the API they choose (--async, --stream)."""
    from smkit.client.invoke import Target

    targets = {
        "--variant": variant,
        "--target-model": model,
        "--target-container": container,
        "--inference-component": component,
    }
    chosen = [k for k, v in targets.items() if v is not None]
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} are mutually exclusive; pass at most one")
    if asynchronous and chosen:
        raise click.UsageError(f"{chosen[0]} does not apply to --async (InvokeEndpointAsync has no targets)")
    if input_location and not asynchronous:
        raise click.UsageError("--input-location needs --async")
    if stream and asynchronous:
        raise click.UsageError("--stream and --async are mutually exclusive")
    if stream and model is not None:
        raise click.UsageError(
            "--target-model does not apply to --stream (InvokeEndpointWithResponseStream has no TargetModel)"
        )
    return Target(variant=variant, model=model, container=container, component=component)


def _request_body(data: str, content_type: str) -> bytes:
    """--data serialized for --content-type (a file or stdin as is, a literal by the type's serializer)."""
    from smkit.client.codecs import serialize, serialize_literal

    raw_bytes, literal = _read_data(data)
    try:
        if raw_bytes is not None:
            return serialize(raw_bytes, content_type)
        return serialize_literal(literal or "", content_type)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--data") from None


def _say_variant(result: Any) -> None:
    click.echo(
        f"InvokedProductionVariant: {result.invoked_variant}  Content-Type: {result.content_type}", err=True
    )


def _invoke_stream(
    client: Any, endpoint: str, body: bytes, call: dict[str, Any], output: Path | None
) -> None:
    """Print each part as it arrives; a stream error after some parts is reported after them."""
    from botocore.exceptions import BotoCoreError, ClientError

    from smkit.client.invoke import InvokeError, describe_client_error, invoke_stream

    received: list[bytes] = []
    try:
        result = invoke_stream(client, endpoint, body, **call)
        _say_variant(result)
        for part in result.parts:
            received.append(part)
            sys.stdout.buffer.write(part)
            sys.stdout.flush()
    except (ClientError, BotoCoreError, InvokeError) as exc:
        raise click.ClickException(describe_client_error(exc)) from None
    finally:
        if output is not None:
            output.write_bytes(b"".join(received))


def _invoke_async(
    client: Any,
    endpoint: str,
    body: bytes,
    *,
    content_type: str,
    accept: str | None,
    custom_attributes: str | None,
    input_location: str | None,
    timeout: float,
    storage: Storage,
) -> tuple[Any, str | None, bytes]:
    from tqdm import tqdm

    from smkit.client.invoke import InvokeError, invoke_async, wait_for_outcome
    from smkit.contract import ASYNC_INLINE_BODY_LIMIT

    if input_location is None and len(body) > ASYNC_INLINE_BODY_LIMIT:
        raise click.UsageError(
            f"the request is {len(body)} bytes; an inline async body holds at most {ASYNC_INLINE_BODY_LIMIT}. "
            "Upload it and pass --input-location s3://BUCKET/KEY"
        )
    submission = invoke_async(
        client,
        endpoint,
        content_type=content_type,
        accept=accept,
        body=None if input_location else body,
        input_location=input_location,
        custom_attributes=custom_attributes,
    )
    click.echo(
        f"InferenceId: {submission.inference_id}\nOutputLocation: {submission.output_location}", err=True
    )
    with tqdm(desc="waiting for the result", bar_format="{desc} {elapsed}", file=sys.stderr) as spinner:
        outcome = wait_for_outcome(
            submission,
            storage,
            accept=accept,
            timeout_s=timeout,
            on_poll=lambda _elapsed: spinner.update(),
        )
    if not outcome.succeeded:
        raise InvokeError(f"inference failed ({outcome.location}): {outcome.body.decode(errors='replace')}")
    return outcome.decoded(), outcome.content_type, outcome.body


def _component_names(text: str) -> dict[str, str]:
    pairs = [pair.split("=", 1) for pair in text.split(",")]
    if any(len(pair) != 2 or not all(pair) for pair in pairs):
        raise click.BadParameter(
            f"{text!r}: expected name=deployed-name pairs separated by commas, as in the serving stack's "
            "InferenceComponentNames output",
            param_hint="--component-names",
        )
    return dict((name, deployed) for name, deployed in pairs)


@click.command("smoke-test")
@config_option("Deployment config whose model samples to send.")
@click.option("--endpoint", help="EndpointName (default: the config's name, as the local endpoint uses).")
@click.option("--endpoint-url", help="SageMaker Runtime URL (the local gateway); default: AWS.")
@click.option("--region", help="AWS region (default: the environment's).")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Project folder holding model_code/<model>/samples [default: the nearest folder above the config "
    "file that has a model_code/ folder].",
)
@click.option("--timeout", default=120.0, show_default=True, help="Async: seconds to wait per request.")
@click.option(
    "--s3-endpoint-url", help="S3 endpoint for async output locations (moto's server); default: AWS."
)
@click.option(
    "--component-names",
    help="Inference components: the serving stack's InferenceComponentNames output (name=deployed name,...); "
    "default: the config's names, as the local endpoint uses.",
)
def smoke_test(
    config_path: Path,
    endpoint: str | None,
    endpoint_url: str | None,
    region: str | None,
    root: Path | None,
    timeout: float,
    s3_endpoint_url: str | None,
    component_names: str | None,
) -> None:
    """Send model_code/<model>/samples/ payloads and check the answers against expected.json."""
    from smkit.client import smoke
    from smkit.client.invoke import runtime_client
    from smkit.config import ConfigError, load_deployment

    try:
        deployment = load_deployment(config_path)
        names = _component_names(component_names) if component_names else None
        cases = smoke.plan(deployment, root or smoke.project_root(config_path), component_names=names)
    except (ConfigError, smoke.SmokeError) as exc:
        raise click.ClickException(str(exc)) from None
    name = endpoint or deployment.name
    client = runtime_client(endpoint_url=endpoint_url, region=region)
    results = smoke.run(
        client,
        name,
        cases,
        asynchronous=deployment.endpoint_type == "async",
        storage=Storage(s3_endpoint_url, region or "us-east-1"),
        timeout_s=timeout,
    )
    for result in results:
        mark = "PASS" if result.ok else "FAIL"
        click.echo(f"{mark} {result.case.label:<40} {result.seconds * 1000:8.1f} ms  {result.detail}")
    failed = sum(not r.ok for r in results)
    click.echo(f"smoke-test of {name}: {len(results) - failed} of {len(results)} cases passed")
    if failed or not results:
        raise SystemExit(1)
