"""Mark superseded model copies in the deployment's data bucket, so its lifecycle rule can expire them.

Local model data is copied under ``models/<id>/<content hash>/`` of the data bucket, one prefix per release
(smkit/cdk/constructs/model_copy.py), and nothing deletes an old prefix: a rollback needs it. After a deploy,
this step tags every object under ``models/`` that no live model and no recorded release uses with
``smkit:superseded=true`` (the bucket's ``SupersededModelCopies`` rule expires those after
``storage.superseded_model_days``), and removes the tag from anything in use again. What a live model uses
is never tagged, so never expires; a later re-copy of an old release (a rollback) writes untagged objects.
https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from smkit.object_store import SUPERSEDED_TAG

MODELS = "models/"


@dataclass(frozen=True)
class Marked:
    """What one run tagged as superseded and what it found in use."""

    superseded: list[str]
    kept: list[str]


def live_model_data(sagemaker: Any, endpoint_name: str) -> list[str]:
    """The model data URIs of every model the endpoint runs: its production and shadow variants' models and,
    on an inference-component endpoint, its components' models and its adapter components' archives
    (``Specification.Container.ArtifactUrl``)."""
    endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    models = {v["ModelName"] for v in variants if v.get("ModelName")}
    uris = []
    if hasattr(sagemaker, "list_inference_components") and not models:
        for summary in sagemaker.list_inference_components(EndpointNameEquals=endpoint_name)[
            "InferenceComponents"
        ]:
            component = sagemaker.describe_inference_component(
                InferenceComponentName=summary["InferenceComponentName"]
            )
            specification = component.get("Specification", {})
            name = specification.get("ModelName")
            if name:
                models.add(name)
            artifact = specification.get("Container", {}).get("ArtifactUrl")
            if artifact:
                uris.append(artifact)
    for name in sorted(models):
        model = sagemaker.describe_model(ModelName=name)
        containers = model.get("Containers") or [model.get("PrimaryContainer", {})]
        for c in containers:
            source = c.get("ModelDataSource", {}).get("S3DataSource", {}).get("S3Uri")
            uris += [u for u in (c.get("ModelDataUrl"), source) if u]
    return uris


def kept_prefixes(bucket: str, uris: Iterable[str]) -> set[str]:
    """Key prefixes under ``models/`` of ``bucket`` that ``uris`` use: an archive's folder or a prefix."""
    out = set()
    for uri in uris:
        head = f"s3://{bucket}/"
        if not uri.startswith(head):
            continue  # model data elsewhere (source: s3): not this bucket's copies
        key = uri[len(head) :]
        prefix = key if key.endswith("/") else key.rsplit("/", 1)[0] + "/"
        if prefix.startswith(MODELS):
            out.add(prefix)
    return out


def mark_superseded(s3: Any, bucket: str, keep: set[str]) -> Marked:
    """Tag the current objects under ``models/`` outside ``keep`` as superseded; untag those inside it."""
    key_name, value = SUPERSEDED_TAG
    superseded, kept = [], []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=MODELS):
        for item in page.get("Contents", []):
            key = item["Key"]
            tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
            tagged = any(t["Key"] == key_name for t in tags)
            if any(key.startswith(prefix) for prefix in keep):
                kept.append(key)
                others = [t for t in tags if t["Key"] != key_name]
                if tagged and others:
                    s3.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": others})
                elif tagged:
                    s3.delete_object_tagging(Bucket=bucket, Key=key)
            else:
                superseded.append(key)
                if not tagged:
                    s3.put_object_tagging(
                        Bucket=bucket, Key=key, Tagging={"TagSet": [*tags, {"Key": key_name, "Value": value}]}
                    )
    return Marked(superseded=superseded, kept=kept)
