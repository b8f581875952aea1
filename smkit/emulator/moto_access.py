"""What an execution role may do, by moto's own IAM policy evaluation: the emulator's checks that the role
SageMaker runs a model or an inference component with can read its data and write its logs.

SageMaker reads model data and adapter weights, and writes container logs, with the execution role; a role
that cannot do so leaves a component without logs, or an old fleet (during an update) and a rollback without
their data. The emulator refuses those deploys instead of passing them (docs/aws-rules.md):

- a base inference component whose role may not write ``/aws/sagemaker/InferenceComponents/<name>``;
- an adapter whose role may not read its ``ArtifactUrl``, and an update that leaves the role unable to read
  the previous ``ArtifactUrl``;
- a Model update that leaves the role unable to read the previous model data in S3.

Only identity policies attached to the role are evaluated (inline and managed), with moto's
``IAMPolicy.is_action_permitted``; bucket policies and KMS key policies are not.
"""

from __future__ import annotations

from typing import Any

LOG_PREFIX = "/aws/sagemaker/InferenceComponents/"


def role_may(account_id: str, role_arn: str, action: str, resources: list[str]) -> bool | None:
    """Whether the role's policies allow ``action`` on any of ``resources`` (None: no such role in moto)."""
    from moto.iam.access_control import IAMPolicy, PermissionResult
    from moto.iam.models import iam_backends

    backend = iam_backends[account_id]["global"]
    try:
        role = backend.get_role_by_arn(role_arn)
    except Exception:  # an ARN moto does not know (a role outside the stack): not checked
        return None
    policies = [IAMPolicy(p) for p in role.managed_policies.values()]
    policies += [IAMPolicy(document) for document in role.policies.values()]
    results = [p.is_action_permitted(action, resource) for p in policies for resource in resources]
    if PermissionResult.DENIED in results:
        return False
    return PermissionResult.PERMITTED in results


def s3_object_arns(uri: str) -> list[str]:
    """The object ARN of ``s3://BUCKET/KEY``, or of an object under ``s3://BUCKET/PREFIX/``."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return [
        f"arn:aws:s3:::{bucket}/{key}model.safetensors"
        if key.endswith("/")
        else f"arn:aws:s3:::{bucket}/{key}"
    ]


def readable(account_id: str, role_arn: str, uri: str) -> bool:
    """The role may ``s3:GetObject`` the data at ``uri`` (True when the role is not moto's to judge)."""
    return role_may(account_id, role_arn, "s3:GetObject", s3_object_arns(uri)) is not False


def component_problem(
    account_id: str, region: str, role_arn: str | None, name: str, specification: dict[str, Any]
) -> str | None:
    """Why SageMaker's role cannot run component ``name`` as specified (None: it can)."""
    if not role_arn:
        return None
    url = specification.get("Container", {}).get("ArtifactUrl")
    if specification.get("BaseInferenceComponentName"):
        if url and not readable(account_id, role_arn, url):
            return (
                f"the execution role {role_arn} may not s3:GetObject the adapter weights {url} of inference "
                f"component {name}"
            )
        return None
    group = f"arn:aws:logs:{region}:{account_id}:log-group:{LOG_PREFIX}{name}"
    if role_may(account_id, role_arn, "logs:PutLogEvents", [group, f"{group}:*"]) is False:
        return (
            f"the execution role {role_arn} may not write the logs of inference component {name} to "
            f"{LOG_PREFIX}{name} (logs:PutLogEvents): its containers' output would be lost "
            "(https://docs.aws.amazon.com/sagemaker/latest/dg/logging-cloudwatch.html)"
        )
    return None


def previous_data_problem(
    account_id: str, role_arn: str | None, old: list[str], new: list[str]
) -> str | None:
    """Why the role, after an update from data ``old`` to ``new``, cannot read the previous release's data."""
    if not role_arn:
        return None
    lost = [
        u for u in old if u not in new and u.startswith("s3://") and not readable(account_id, role_arn, u)
    ]
    if not lost:
        return None
    return (
        f"the execution role {role_arn} can no longer read the previous release's data {', '.join(lost)}: the "
        "old fleet of this update and an auto-rollback read it with the role; keep the role's read of it "
        "(smkit deploy passes the recorded releases' S3 data as the previous_s3_uris context)"
    )


def model_data_uris(containers: list[dict[str, Any]]) -> list[str]:
    """The S3 URIs of model containers (ModelDataUrl and ModelDataSource.S3DataSource.S3Uri)."""
    out = []
    for c in containers:
        source = (c.get("ModelDataSource") or {}).get("S3DataSource", {}).get("S3Uri")
        out += [u for u in (c.get("ModelDataUrl"), source) if u]
    return out
