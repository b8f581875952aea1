"""Superseded model copies in emulated AWS: the deploy step tags what no live model and no recorded release
uses, never what a live model uses, and untags a copy that is in use again (smkit.release.model_copies).

The models and the endpoint are created through the SageMaker API of the session's moto server; the bucket's
lifecycle rule that expires tagged copies is checked in tests/stacks/test_day2.py.
"""

from __future__ import annotations

import uuid

from smkit.emulator import MotoServer
from smkit.release.model_copies import kept_prefixes, live_model_data, mark_superseded

ROLE = "arn:aws:iam::123456789012:role/sagemaker"
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/smkit:1"


def _tags(s3: object, bucket: str, key: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]}  # type: ignore[attr-defined]


def test_only_copies_no_live_model_and_no_release_uses_are_tagged(moto_server: MotoServer) -> None:
    s3, sagemaker = moto_server.client("s3"), moto_server.client("sagemaker")
    bucket = f"data-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    keys = {
        "old": "models/ModelDataTabular/h1/model.tar.gz",  # superseded
        "recorded": "models/ModelDataTabular/h2/model.tar.gz",  # a recorded release: rollback target
        "live": "models/ModelDataTabular/h3/model.tar.gz",  # the live model
        "mme-old": "models/ModelDataMme/m1/a.tar.gz",
        "mme-live": "models/ModelDataMme/m2/a.tar.gz",
    }
    for key in keys.values():
        s3.put_object(Bucket=bucket, Key=key, Body=b"x", Tagging="team=ml")
    s3.put_object(Bucket=bucket, Key="data-capture/x.jsonl", Body=b"{}")  # not a model copy
    name = uuid.uuid4().hex[:8]
    sagemaker.create_model(
        ModelName=f"single-{name}",
        ExecutionRoleArn=ROLE,
        PrimaryContainer={"Image": IMAGE, "ModelDataUrl": f"s3://{bucket}/{keys['live']}"},
    )
    sagemaker.create_model(
        ModelName=f"mme-{name}",
        ExecutionRoleArn=ROLE,
        PrimaryContainer={
            "Image": IMAGE,
            "Mode": "MultiModel",
            "ModelDataUrl": f"s3://{bucket}/models/ModelDataMme/m2/",
        },
    )
    variants = [
        {
            "VariantName": v,
            "ModelName": f"{v}-{name}",
            "InstanceType": "ml.m5.large",
            "InitialInstanceCount": 1,
        }
        for v in ("single", "mme")
    ]
    sagemaker.create_endpoint_config(EndpointConfigName=f"config-{name}", ProductionVariants=variants)
    sagemaker.create_endpoint(EndpointName=f"endpoint-{name}", EndpointConfigName=f"config-{name}")
    # An earlier run tagged the recorded release; it is in the history again (a rollback): untagged.
    s3.put_object_tagging(
        Bucket=bucket,
        Key=keys["recorded"],
        Tagging={"TagSet": [{"Key": "smkit:superseded", "Value": "true"}]},
    )

    in_use = live_model_data(sagemaker, f"endpoint-{name}") + [f"s3://{bucket}/{keys['recorded']}"]
    assert sorted(kept_prefixes(bucket, in_use)) == [
        "models/ModelDataMme/m2/",
        "models/ModelDataTabular/h2/",
        "models/ModelDataTabular/h3/",
    ]
    marked = mark_superseded(s3, bucket, kept_prefixes(bucket, in_use))

    assert sorted(marked.superseded) == sorted([keys["old"], keys["mme-old"]])
    assert _tags(s3, bucket, keys["old"]) == {"team": "ml", "smkit:superseded": "true"}
    for what in ("live", "recorded", "mme-live"):
        assert "smkit:superseded" not in _tags(s3, bucket, keys[what]), what
    assert _tags(s3, bucket, "data-capture/x.jsonl") == {}
    # A second run changes nothing.
    again = mark_superseded(s3, bucket, kept_prefixes(bucket, in_use))
    assert sorted(again.superseded) == sorted(marked.superseded) and sorted(again.kept) == sorted(marked.kept)
