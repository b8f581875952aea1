"""A config that breaks one of AWS's documented constraints is refused before anything is synthesized.

``smkit synth`` (a user's path) loads the config first: the refusal names the field, the bad value, AWS's
sentence and page, and no cloud assembly is left behind (smkit/config/rule_table.py lists the rows).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from smkit.config import absolute_paths

ROOT = Path(__file__).resolve().parents[2]
SMKIT = [sys.executable, "-m", "smkit.cli"]


def _variant(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((ROOT / "config" / "realtime.yaml").read_text()), ROOT / "config"
    )
    data["endpoint"]["variants"][0].update(changes)
    return data


CASES = {
    "instance-store-volume": (
        {"instance_type": "ml.m5d.large", "volume_size_gb": 50},
        [
            "endpoint.variants[0].volume_size_gb",
            "ml.m5d.large",
            "Currently only Amazon EBS gp2 storage volumes are supported",
            "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html",
        ],
    ),
    "misspelled-instance-type": (
        {"instance_type": "ml.m5.larg"},
        ["endpoint.variants[0].instance_type", "ml.m5.larg", "ml.m5.large"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_smkit_synth_refuses_a_broken_row_and_writes_no_cloud_assembly(case: str, tmp_path: Path) -> None:
    changes, expected = CASES[case]
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(_variant(**changes)))
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [*SMKIT, "synth", "--config", str(config), "--output", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0, result.stdout[-2000:]
    for text in expected:
        assert text in result.stderr, (text, result.stderr[-3000:])
    assert not out.exists(), sorted(p.name for p in out.iterdir())
