"""A container's additional model data sources on this machine.

SageMaker puts each channel of ``AdditionalModelDataSources`` at
``/opt/ml/additional-model-data-sources/<channel>/`` before the container starts: an ``S3Prefix`` copied as
it is, a ``Gzip`` archive extracted
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html). A local
endpoint has no ``/opt/ml``: each channel is a folder on this machine (a local folder as it is, an archive
extracted, data in S3 downloaded and extracted), linked under one folder per container that stands for
``/opt/ml/additional-model-data-sources``. What names AWS's path in the container's environment (and so in
the engine's arguments derived from it) names that folder instead, as ``SAGEMAKER_MODEL_PATH`` and a draft
model under ``/opt/ml/model`` name the local model folder (smkit.llm.engine). docs/channels.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smkit.config.resolved import ResolvedChannel
from smkit.contract import CHANNELS_DIR, CHANNELS_PATH
from smkit.local.artifacts import ArtifactError


def local_value(value: str, root: Path | None) -> str:
    """``value`` with AWS's channels folder (``/opt/ml/additional-model-data-sources``, as a whole path or
    followed by ``/``) replaced by ``root``, the folder that holds the channels on this machine (None: the
    container has no channels)."""
    if root is None or CHANNELS_DIR not in value:
        return value
    local = str(root)
    return CHANNELS_PATH.sub(lambda _: local, value)


def local_environment(environment: Mapping[str, str], root: Path | None) -> dict[str, str]:
    """Every value of ``environment`` through :func:`local_value`."""
    return {key: local_value(value, root) for key, value in environment.items()}


@dataclass(frozen=True)
class LocalChannel:
    """What the local endpoint does with one channel: ``kind`` as SageMaker reads it (``archive``: one
    ``.tar.gz`` it extracts, ``prefix``: files as they are), where the data comes from (``uri``: downloaded
    from S3; else the local ``source``), and the folder the container reads (``folder``)."""

    kind: str
    folder: Path
    source: Path | None
    uri: str | None


class ChannelFolders:
    """Where each container's channels are on this machine, and what :meth:`link` does to put them there.

    ``workdir``: the endpoint's scratch folder (removed when it stops). ``fetch`` receives what must be
    downloaded (local path -> S3 URI) and ``extract`` what must be extracted (folder -> archive), both run
    by the endpoint's start before :meth:`link`.
    """

    def __init__(self, workdir: Path, *, fetch: dict[Path, str], extract: dict[Path, Path]) -> None:
        self.workdir = workdir
        self._fetch = fetch
        self._extract = extract
        self._links: dict[Path, tuple[Path, str]] = {}  # link under a root -> (the channel's folder, label)
        self.planned: dict[tuple[str, str], LocalChannel] = {}  # (container, channel) -> what is done

    def root(self, container: str, channels: tuple[ResolvedChannel, ...]) -> Path | None:
        """The folder standing for ``/opt/ml/additional-model-data-sources`` in ``container`` (None: no
        channels); its entries are linked by :meth:`link`."""
        if not channels:
            return None
        root = self.workdir / "channels" / container
        for channel in channels:
            where = f"container {container}'s channel {channel.name} ({channel.data.location})"
            folder = self._folder(container, channel)
            self._links[root / channel.name] = (folder, where)
            self.planned[container, channel.name] = LocalChannel(
                channel.data.kind, folder, channel.data.path, channel.data.uri
            )
        return root

    def _folder(self, container: str, channel: ResolvedChannel) -> Path:
        data = channel.data
        local = data.path
        if data.uri is not None:
            local = self.workdir / "s3-channels" / container / channel.name / data.file_name
            self._fetch[local] = data.uri
            if data.kind == "prefix":
                return local
        assert local is not None  # a local channel has its path (smkit.config.channel_rules)
        # A folder as it is (an archive's folder: what smkit package packs and deploy uploads).
        if data.kind == "prefix" or channel.archive is not None:
            return local
        target = self.workdir / "extracted-channels" / container / channel.name
        self._extract[target] = local
        return target

    def link(self) -> None:
        """Link every channel's folder under its container's root (after downloads and extraction)."""
        for link, (folder, where) in self._links.items():
            if not folder.is_dir():
                raise ArtifactError(
                    f"{where}: {folder} is not a folder; give additional_model_data[].path the folder "
                    "that holds the channel's files (or a .tar.gz with source: archive)"
                )
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                os.symlink(folder, link, target_is_directory=True)
