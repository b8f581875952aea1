"""CDK's BucketDeployment in the emulator: the copy really happens, as the Lambda handler does it."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from smkit.emulator import MotoServer

SOURCE, DESTINATION = "cdk-assets", "deployment-data"


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _template(source_key: str, prefix: str, **flags: bool) -> str:
    properties: dict[str, Any] = {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:handler",
        "SourceBucketNames": [SOURCE],
        "SourceObjectKeys": [source_key],
        "DestinationBucketName": DESTINATION,
        "DestinationBucketKeyPrefix": prefix,
        "Prune": False,
        "RetainOnDelete": True,
        **flags,
    }
    return json.dumps(
        {"Resources": {"Copy": {"Type": "Custom::CDKBucketDeployment", "Properties": properties}}}
    )


def test_copy_extracts_into_the_prefix_under_the_bucket_key_and_is_retained() -> None:
    with MotoServer.start() as server:
        s3, cloudformation = server.client("s3"), server.client("cloudformation")
        key_arn = server.client("kms").create_key()["KeyMetadata"]["Arn"]
        for bucket in (SOURCE, DESTINATION):
            s3.create_bucket(Bucket=bucket)
        s3.put_bucket_encryption(
            Bucket=DESTINATION,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": key_arn,
                        }
                    }
                ]
            },
        )
        s3.put_object(Bucket=SOURCE, Key="v1.zip", Body=_zip({"model.tar.gz": b"one"}))
        s3.put_object(Bucket=SOURCE, Key="v2.zip", Body=_zip({"model.tar.gz": b"two", "code/x.py": b"x"}))

        cloudformation.create_stack(StackName="Copy", TemplateBody=_template("v1.zip", "models/h1/"))
        assert (
            cloudformation.describe_stacks(StackName="Copy")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
        )
        head = s3.head_object(Bucket=DESTINATION, Key="models/h1/model.tar.gz")
        assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", key_arn)
        assert s3.get_object(Bucket=DESTINATION, Key="models/h1/model.tar.gz")["Body"].read() == b"one"

        # A changed archive is a new prefix; the old one stays (prune off) for a rollback.
        cloudformation.update_stack(StackName="Copy", TemplateBody=_template("v2.zip", "models/h2/"))
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket=DESTINATION)["Contents"]}
        assert keys == {"models/h1/model.tar.gz", "models/h2/model.tar.gz", "models/h2/code/x.py"}

        cloudformation.delete_stack(StackName="Copy")
        assert len(s3.list_objects_v2(Bucket=DESTINATION)["Contents"]) == 3  # RetainOnDelete


def test_copy_without_extract_prunes_and_deletes_when_not_retained() -> None:
    with MotoServer.start() as server:
        s3, cloudformation = server.client("s3"), server.client("cloudformation")
        for bucket in (SOURCE, DESTINATION):
            s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=SOURCE, Key="assets/a.bin", Body=b"a")
        s3.put_object(Bucket=DESTINATION, Key="p/stale", Body=b"old")
        template = _template("assets/a.bin", "p", Extract=False, Prune=True, RetainOnDelete=False)
        cloudformation.create_stack(StackName="Copy", TemplateBody=template)
        assert [o["Key"] for o in s3.list_objects_v2(Bucket=DESTINATION)["Contents"]] == ["p/a.bin"]
        cloudformation.delete_stack(StackName="Copy")
        assert "Contents" not in s3.list_objects_v2(Bucket=DESTINATION)
