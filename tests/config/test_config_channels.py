"""``additional_model_data``: a container's channels (AdditionalModelDataSources), their AWS rules and what
they resolve to."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from config_harness import raw

from smkit.aws.limits import CHANNEL_NAME_LENGTH, MAX_CHANNELS
from smkit.aws.patterns import CHANNEL_NAME
from smkit.aws.service_models import member, shape
from smkit.config import ConfigError, parse_config
from smkit.config.resolved import resolve

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
FIELD = "model.containers[0].additional_model_data"


def _with(channels: list[dict[str, Any]], environment: dict[str, str] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(raw("realtime.yaml"))
    container = data["model"]["containers"][0]
    container["additional_model_data"] = channels
    if environment is not None:
        container["environment"] = {**container["environment"], **environment}
    data["region"] = "eu-west-1"
    return data


def test_channels_resolve_to_their_kind_path_and_archive(tmp_path: Path) -> None:
    config_dir = tmp_path / "config"
    data = _with(
        [
            {"channel": "draft", "source": "prefix", "path": "../draft-model"},
            {"channel": "tables.v2", "source": "archive", "path": "../tables"},
            {"channel": "packed", "source": "archive", "path": "../packed.tar.gz"},
            {"channel": "weights_s3", "source": "s3", "uri": "s3://my-models/w/", "kms_key_arn": KEY},
            {"channel": "medusa-heads", "source": "s3", "uri": "s3://my-models/heads.tar.gz"},
        ],
        {"DRAFT_MODEL": "/opt/ml/additional-model-data-sources/draft"},
    )
    cfg = parse_config(data, source="channels.yaml", base_dir=config_dir)
    (container,) = resolve(cfg, config_dir).containers
    got = [
        (c.name, c.data.kind, c.s3_data_type, c.data.compression, c.upload, c.data.uri)
        for c in container.channels
    ]
    assert got == [
        ("draft", "prefix", "S3Prefix", "None", tmp_path / "draft-model", None),
        ("tables.v2", "archive", "S3Object", "Gzip",
         tmp_path / "build" / "tabular-realtime" / "channels" / "tabular" / "tables.v2.tar.gz", None),
        ("packed", "archive", "S3Object", "Gzip", tmp_path / "packed.tar.gz", None),
        ("weights_s3", "prefix", "S3Prefix", "None", None, "s3://my-models/w/"),
        ("medusa-heads", "archive", "S3Object", "Gzip", None, "s3://my-models/heads.tar.gz"),
    ]  # fmt: skip
    assert container.channels[1].data.path == tmp_path / "tables"  # the local endpoint reads the folder
    assert container.channels[0].container_path == "/opt/ml/additional-model-data-sources/draft"


def test_a_container_without_channels_resolves_none() -> None:
    cfg = parse_config(raw("realtime.yaml"), source="realtime.yaml")
    assert all(c.channels == () for c in resolve(cfg, Path.cwd()).containers)


def _problems(data: dict[str, Any]) -> list[tuple[str, Any, str]]:
    with pytest.raises(ConfigError) as exc:
        parse_config(data, source="channels.yaml")
    return [(i.path, i.value, i.message) for i in exc.value.issues]


PREFIX = {"source": "prefix", "path": "draft"}
INVALID = [
    ([{"channel": "draft model", **PREFIX}], f"{FIELD}[0].channel", "draft model", "e.g. draft_model"),
    ([{"channel": "", **PREFIX}], f"{FIELD}[0].channel", "", "a channel name is 1-64 letters"),
    ([{"channel": "d" * 65, **PREFIX}], f"{FIELD}[0].channel", "d" * 65, "1-64 letters, digits"),
    ([{"channel": "draft", **PREFIX}, {"channel": "draft", "source": "s3", "uri": "s3://b-1/d/"}],
     f"{FIELD}[].channel", "draft", "give each a name of its own"),
    ([{"channel": f"c{n}", **PREFIX} for n in range(6)], FIELD, "6 channels", "at most 5"),
    ([{"channel": "draft", "source": "prefix"}], f"{FIELD}[0].path", None, "source prefix needs path"),
    ([{"channel": "draft", "source": "archive"}], f"{FIELD}[0].path", None, "a folder or a .tar.gz"),
    ([{"channel": "draft", "source": "prefix", "path": "d.tar.gz"}], f"{FIELD}[0].path", "d.tar.gz",
     "set source: archive"),
    ([{"channel": "draft", **PREFIX, "uri": "s3://b-1/d/"}], f"{FIELD}[0].uri", "s3://b-1/d/",
     "uri applies only to source: s3"),
    ([{"channel": "draft", **PREFIX, "accept_eula": True}], f"{FIELD}[0].accept_eula", True,
     "only to source: s3"),
    ([{"channel": "draft", "source": "s3"}], f"{FIELD}[0].uri", None, "source s3 needs uri"),
    ([{"channel": "draft", "source": "s3", "uri": "s3://b-1/d"}], f"{FIELD}[0].uri", "s3://b-1/d",
     "add the trailing /"),
    ([{"channel": "draft", "source": "s3", "uri": "s3://b-1/d/", "path": "x"}], f"{FIELD}[0].path", "x",
     "remove path"),
    ([{"channel": "draft", "source": "s3", "uri": "s3://b-1/d/", "kms_key_arn": "alias/x"}],
     f"{FIELD}[0].kms_key_arn", "alias/x", "not a KMS key ARN"),
    ([{"channel": "draft", "source": "s3", "uri": "s3://b-1/d/",
       "kms_key_arn": KEY.replace("eu-west-1", "us-east-1")}],
     f"{FIELD}[0].kms_key_arn", KEY.replace("eu-west-1", "us-east-1"), "copy the model data to a eu-west-1"),
    ([{"channel": "draft", "source": "s3", "uri": "s3://b-1/d.tar.gz", "accept_eula": True}],
     f"{FIELD}[0].accept_eula", True, "not to an archive"),
    ([{"channel": "draft", "source": "zip", "path": "d.zip"}], f"{FIELD}[0].source", "zip",
     "'archive', 'prefix' or 's3'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("channels", "path", "value", "fix"), INVALID, ids=[f"{i}" for i in range(len(INVALID))]
)
def test_invalid_channels_name_the_field_value_and_fix(
    channels: list[dict[str, Any]], path: str, value: Any, fix: str
) -> None:
    problems = _problems(_with(channels))
    assert any(p == path and v == value and fix in m for p, v, m in problems), problems


def test_a_variable_naming_a_folder_that_is_no_channel_is_refused() -> None:
    data = _with(
        [{"channel": "draft", **PREFIX}],
        {"SM_VLLM_SPECULATIVE_CONFIG": '{"model": "/opt/ml/additional-model-data-sources/drafts"}'},
    )
    [(path, value, problem)] = _problems(data)
    assert path == "model.containers[0].environment.SM_VLLM_SPECULATIVE_CONFIG"
    assert "/opt/ml/additional-model-data-sources/drafts, which is not a channel" in problem
    assert "its channels: draft" in problem and '"model"' in value


def test_the_channels_root_and_a_channels_files_may_be_named() -> None:
    data = _with(
        [{"channel": "draft", **PREFIX}],
        {
            "ROOT": "/opt/ml/additional-model-data-sources/",
            "F": "/opt/ml/additional-model-data-sources/draft/x",
            # Other folders, which the local endpoint leaves as they are too (smkit.local.channels).
            "OLD": "/opt/ml/additional-model-data-sources-old/drafts",
            "BACKUP": "/backup/opt/ml/additional-model-data-sources/drafts",
        },
    )
    parse_config(data, source="channels.yaml")


def test_channel_limits_are_botocores() -> None:
    """The pattern, length and count come from the installed service model (tests/aws check the tables too)."""
    name = member("sagemaker", "AdditionalModelDataSource", "ChannelName")
    assert f"^{name.pattern}$" == CHANNEL_NAME
    assert (name.min, name.max) == CHANNEL_NAME_LENGTH
    assert shape("sagemaker", "AdditionalModelDataSources").metadata["max"] == MAX_CHANNELS
    source = shape("sagemaker", "S3ModelDataSource")
    assert set(source.members["S3DataType"].enum) == {"S3Prefix", "S3Object"}
    assert set(source.members["CompressionType"].enum) == {"None", "Gzip"}
