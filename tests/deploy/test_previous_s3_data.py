"""What a deploy keeps readable of earlier releases: their S3 model data and adapter weights outside the
deployment's own bucket (smkit.release.history.previous_s3_uris)."""

from __future__ import annotations

from smkit.release.history import DeployedContainer, Release, previous_s3_uris


def _release(data: str, adapters: tuple[str, ...] = ()) -> Release:
    image = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"
    container = DeployedContainer(image=image, model_data=data, data_type="prefix")
    return Release(
        endpoint="e", containers=(container,), deployed_at="2026-11-27T00:00:00Z", adapters=adapters
    )


def test_previous_uris_are_every_release_s_data_and_adapters_outside_the_own_bucket() -> None:
    history = [
        _release("s3://weights/v1/", ("s3://weights/adapters/a1/",)),
        _release("s3://own-bucket/models/ModelDataQwen/abc/"),
        _release("s3://weights/v2/", ("s3://weights/adapters/a1/",)),
    ]
    assert previous_s3_uris(history, own_bucket="own-bucket") == [
        "s3://weights/adapters/a1/",
        "s3://weights/v1/",
        "s3://weights/v2/",
    ]
    assert "s3://own-bucket/models/ModelDataQwen/abc/" in previous_s3_uris(history, own_bucket=None)


def test_a_release_recorded_before_adapters_were_recorded_still_reads() -> None:
    data = _release("s3://weights/v1/").to_json()
    del data["adapters"]
    assert Release.from_json(data).adapters == ()
    assert Release.from_json(_release("s3://w/v1/", ("s3://w/a/",)).to_json()).adapters == ("s3://w/a/",)
