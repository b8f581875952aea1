"""Train the example models (when their inputs changed) and package every example archive.

    python -m scripts.package_models --build-dir build

Outputs: ``build/model.tar.gz`` (tabular), ``build/models/{tabular,iris}.tar.gz`` (the multi-model
set) and ``build/pipeline/{featurizer,regressor}.tar.gz`` (the serial pipeline). A training run is
skipped when a stamp in ``<build-dir>/.stamps`` shows the same training script, shared helpers and
library versions produced the artifacts already present. Archives are always rebuilt (and checked);
they are byte-identical for identical inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from smkit.packaging import Manifest, PackagingError, build_archive

ROOT = Path(__file__).resolve().parent.parent
MODEL_CODE = ROOT / "model_code"
VERSIONED = ("numpy", "scikit-learn", "scipy", "joblib")


@dataclass(frozen=True)
class Training:
    """One training script and the artifact files it must leave behind."""

    script: str
    produces: tuple[str, ...]


@dataclass(frozen=True)
class Archive:
    """One archive to build from a model folder's ``code/`` and ``artifacts/``."""

    output: str
    model: str


TRAININGS = (
    Training("tabular/train.py", ("tabular/artifacts/model.joblib",)),
    Training("iris/train.py", ("iris/artifacts/classifier.joblib",)),
    Training(
        "featurizer/train.py", ("featurizer/artifacts/featurizer.joblib", "regressor/artifacts/model.joblib")
    ),
)
ARCHIVES = (
    Archive("model.tar.gz", "tabular"),
    Archive("models/tabular.tar.gz", "tabular"),
    Archive("models/iris.tar.gz", "iris"),
    Archive("pipeline/featurizer.tar.gz", "featurizer"),
    Archive("pipeline/regressor.tar.gz", "regressor"),
)


def _fingerprint(training: Training) -> str:
    digest = hashlib.sha256()
    for path in (MODEL_CODE / training.script, MODEL_CODE / "common.py"):
        digest.update(path.read_bytes())
    digest.update(json.dumps({name: version(name) for name in VERSIONED}, sort_keys=True).encode())
    return digest.hexdigest()


def train_if_stale(training: Training, stamps: Path) -> bool:
    """Run the training script unless its stamp and artifacts are current; return whether it ran."""
    stamp = stamps / (training.script.replace("/", "_") + ".sha256")
    fingerprint = _fingerprint(training)
    current = stamp.is_file() and stamp.read_text().strip() == fingerprint
    if current and all((MODEL_CODE / p).is_file() for p in training.produces):
        return False
    subprocess.run([sys.executable, str(MODEL_CODE / training.script)], check=True)
    stamps.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint + "\n")
    return True


def build(archive: Archive, build_dir: Path) -> Manifest:
    """Package one model folder into its archive."""
    model = MODEL_CODE / archive.model
    return build_archive(model / "code", model / "artifacts", build_dir / archive.output, threads=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    args = parser.parse_args(argv)
    for training in TRAININGS:
        ran = train_if_stale(training, args.build_dir / ".stamps")
        print(f"{'trained' if ran else 'up to date'}: model_code/{training.script}")
    try:
        with ThreadPoolExecutor() as pool:
            manifests = list(pool.map(lambda a: build(a, args.build_dir), ARCHIVES))
    except PackagingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for manifest in manifests:
        print()
        print(manifest.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
