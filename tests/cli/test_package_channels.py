"""``smkit package --config`` packs a channel's local folder (``additional_model_data`` with ``source: archive``)
into the archive the stacks upload, as it packs an adapter's: reproducible bytes, rebuilt only when the folder
changes; a channel folder uploaded uncompressed (``source: prefix``) needs no packing."""

from __future__ import annotations

import tarfile
from pathlib import Path

import yaml
from click.testing import CliRunner

from smkit.cli import main


def _project(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text("def model_fn(model_dir):\n    return None\n")
    lookup = tmp_path / "lookup"
    (lookup / "tables").mkdir(parents=True)
    (lookup / "tables" / "labels.txt").write_text("a b c\n")
    (lookup / "scale.npy").write_bytes(b"\x93NUMPY")
    (tmp_path / "draft").mkdir()
    (tmp_path / "draft" / "config.json").write_text("{}")
    config = tmp_path / "config" / "scaler.yaml"
    config.parent.mkdir()
    config.write_text(
        yaml.safe_dump(
            {
                "name": "scaler",
                "image": {"source": "build"},
                "model": {
                    "containers": [
                        {
                            "name": "main",
                            "model_data": {"source": "prefix", "path": "../model"},
                            "additional_model_data": [
                                {"channel": "lookup", "source": "archive", "path": "../lookup"},
                                {"channel": "draft", "source": "prefix", "path": "../draft"},
                            ],
                        }
                    ]
                },
                "endpoint": {
                    "type": "realtime",
                    "variants": [{"name": "main", "instance_type": "ml.m5.large"}],
                },
            }
        )
    )
    return config


def test_package_packs_a_channel_folder_once_and_again_when_it_changes(tmp_path: Path) -> None:
    config = _project(tmp_path)
    archive = tmp_path / "build" / "scaler" / "channels" / "main" / "lookup.tar.gz"
    first = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert first.exit_code == 0, first.output
    assert f"channel of container main lookup: {archive}" in first.output
    with tarfile.open(archive) as tar:
        assert sorted(m.name for m in tar if m.isfile()) == ["scale.npy", "tables/labels.txt"]
    assert list((tmp_path / "build" / "scaler" / "channels" / "main").glob("*.tar.gz")) == [archive]
    again = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert f"channel of container main archive {archive} is up to date" in again.output
    (tmp_path / "lookup" / "tables" / "labels.txt").write_text("a b c d\n")
    rebuilt = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert (
        "changed since" in rebuilt.output and f"channel of container main lookup: {archive}" in rebuilt.output
    )
