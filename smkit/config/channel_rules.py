"""Rules of a container's ``additional_model_data`` (ContainerDefinition.AdditionalModelDataSources), each
from AWS's text.

- At most 5 channels per container, each ``{ChannelName, S3DataSource}``; a ChannelName is 1-64 characters
  of ``[A-Za-z0-9\\.\\-_]+`` (botocore's service model, :data:`smkit.aws.patterns.CHANNEL_NAME`,
  :data:`smkit.aws.limits.MAX_CHANNELS`):
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html
- SageMaker puts each channel in its own folder, ``/opt/ml/additional-model-data-sources/<channel>/``, so
  two channels of a container cannot share a name.
- S3DataSource: ``Gzip`` with ``S3Object`` is one gzip-compressed tar archive SageMaker extracts; ``None``
  with ``S3Prefix`` is a key name prefix, which "always ends with a forward slash (/)":
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html
- A container variable that names a channel's folder names one the container has (else it names a folder
  that is not there, on AWS as locally).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from smkit.aws.limits import CHANNEL_NAME_LENGTH, MAX_CHANNELS
from smkit.aws.patterns import CHANNEL_NAME
from smkit.config.containers import Container, ModelDataChannel
from smkit.config.model_data_rules import ARCHIVE_SUFFIX, key_issues, uri_issues
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue
from smkit.contract import CHANNELS_DIR, CHANNELS_PATH

CHANNEL_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html"
_NAME = re.compile(CHANNEL_NAME)
# A channel's folder named in a value: CHANNELS_DIR/<name> (CHANNELS_DIR as a whole path, as the local endpoint
# reads it), ended by "/", the end, or a character no channel name holds (a quote of a JSON value, a space, ...).
NAMED_CHANNEL = re.compile(CHANNELS_PATH.pattern + r"/([A-Za-z0-9._-]*)")


def channels(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Count, names and sources of every container's ``additional_model_data``, and the channel folders its
    environment names."""
    for i, c in enumerate(cfg.model.containers):
        field = f"model.containers[{i}].additional_model_data"
        if len(c.additional_model_data) > MAX_CHANNELS:
            yield Issue(
                field,
                f"{len(c.additional_model_data)} channels",
                f"a container takes at most {MAX_CHANNELS} additional model data sources "
                f"(AdditionalModelDataSources); put related files into one channel's folder ({CHANNEL_URL})",
            )
        yield from _names(c, field)
        for j, channel in enumerate(c.additional_model_data):
            yield from _source(channel, f"{field}[{j}]", region=cfg.region)
        yield from _named_folders(c, f"model.containers[{i}].environment")


def _names(c: Container, field: str) -> Iterable[Issue]:
    low, high = CHANNEL_NAME_LENGTH
    for j, channel in enumerate(c.additional_model_data):
        name = channel.channel
        if not low <= len(name) <= high or not _NAME.match(name):
            example = "".join(ch if _NAME.match(ch) else "_" for ch in name)[:high] or "draft"
            yield Issue(
                f"{field}[{j}].channel",
                name,
                f"a channel name is {low}-{high} letters, digits, '.', '-' or '_' (ChannelName "
                f"{CHANNEL_NAME.strip('^$')}), the folder under {CHANNELS_DIR}/; e.g. {example} ({CHANNEL_URL})",
            )
    for name, count in Counter(ch.channel for ch in c.additional_model_data).items():
        if count > 1:
            yield Issue(
                f"{field}[].channel",
                name,
                f"{count} channels of container {c.name} are called {name}, and each is its own folder "
                f"{CHANNELS_DIR}/<channel>/; give each a name of its own",
            )


def _source(channel: ModelDataChannel, field: str, *, region: str | None) -> Iterable[Issue]:
    if channel.source != "s3":
        if channel.path is None:
            what = "a folder or a .tar.gz" if channel.source == "archive" else "a folder"
            yield Issue(
                f"{field}.path", None, f"source {channel.source} needs path: {what}, relative to the config"
            )
        elif channel.source == "prefix" and channel.path.endswith(ARCHIVE_SUFFIX):
            yield Issue(
                f"{field}.path",
                channel.path,
                "source prefix uploads a folder uncompressed (S3Prefix); for a .tar.gz that SageMaker extracts "
                "set source: archive",
            )
        for name in ("uri", "kms_key_arn"):
            if getattr(channel, name) is not None:
                yield Issue(
                    f"{field}.{name}",
                    getattr(channel, name),
                    f"{name} applies only to source: s3 (data already in S3); remove it or set source: s3 and "
                    "drop path",
                )
        if channel.accept_eula:
            yield Issue(
                f"{field}.accept_eula",
                True,
                "accept_eula applies only to source: s3 with an uncompressed prefix (gated weights SageMaker "
                "downloads); remove it",
            )
        return
    if channel.path is not None:
        yield Issue(f"{field}.path", channel.path, "source s3 uses uri, not a local path; remove path")
    yield from uri_issues(channel.uri, f"{field}.uri", mme=False)
    if channel.kms_key_arn is not None:
        yield from key_issues(channel.kms_key_arn, f"{field}.kms_key_arn", region=region)
    if channel.accept_eula and channel.uri is not None and not channel.uri.endswith("/"):
        yield Issue(
            f"{field}.accept_eula",
            True,
            "ModelAccessConfig.AcceptEula applies to an uncompressed prefix (uri ending /), not to an archive; "
            "remove accept_eula or point uri at the prefix",
        )


def _named_folders(c: Container, field: str) -> Iterable[Issue]:
    names = {ch.channel for ch in c.additional_model_data}
    for key, value in c.environment.items():
        for found in NAMED_CHANNEL.finditer(value):
            if not found.group(1) or found.group(1) in names:
                continue
            have = ", ".join(sorted(names)) or "none"
            yield Issue(
                f"{field}.{key}",
                value,
                f"names {CHANNELS_DIR}/{found.group(1)}, which is not a channel of container {c.name} (its "
                f"channels: {have}); add it under additional_model_data or name one of those",
            )
