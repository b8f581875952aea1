"""Shared pieces of the packager tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODEL_CODE = REPO / "model_code"

TINY_HANDLER = """\
import os


def model_fn(model_dir):
    with open(os.path.join(model_dir, "weights.txt")) as f:
        return float(f.read())


def input_fn(input_data, content_type):
    return input_data


def predict_fn(data, model):
    return data


def output_fn(prediction, accept):
    return prediction
"""


@dataclass
class Model:
    """A code folder and an artifacts folder on disk, plus an output folder that starts empty."""

    code: Path
    artifacts: Path
    out: Path

    def write(self, relative: str, text: str) -> Path:
        path = self.code / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def outputs(self) -> list[str]:
        """Everything in the output folder (hidden temp files included)."""
        return sorted(p.name for p in self.out.iterdir()) if self.out.exists() else []


@dataclass(frozen=True)
class Trained:
    """The example models trained into a temporary folder: ``artifacts[name]``, ``samples[name]``."""

    artifacts: dict[str, Path]
    samples: dict[str, Path]

    def code(self, name: str) -> Path:
        return MODEL_CODE / name / "code"
