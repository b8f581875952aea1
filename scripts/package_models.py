"""Train the example models (when their inputs changed) and package every example archive.

    python -m scripts.package_models --build-dir build

    python -m scripts.package_models --config config/churn.yaml   # only what that config uses
    python -m scripts.package_models --model churn                # model_code/churn -> build/churn/

Outputs: ``build/model.tar.gz`` (tabular), ``build/models/{tabular,iris}.tar.gz`` (the multi-model
set), ``build/pipeline/{featurizer,regressor}.tar.gz`` (the serial pipeline) and
``build/tf_insurance.tar.gz`` (TensorFlow Serving form; skipped with a note when TensorFlow, the
``smkit[tensorflow]`` extra, is not installed). A training run is
skipped when a stamp in ``<build-dir>/.stamps`` shows the same training script, shared helpers and
library versions produced the artifacts already present. An archive is rebuilt (and its handler
checked again) when any input file's name, size or mtime, or a library version, changed since its
last build (its record in ``<build-dir>/.stamps``, :class:`smkit.project.BuildRecord`: the scheme of
``smkit package --config`` too), or with ``--force``; rebuilds are byte-identical for identical inputs.

A training run writes its samples to ``<build-dir>/.samples/<model>`` and compares them with the
committed ``model_code/<model>/samples`` (:func:`compare_samples`): the build never rewrites tracked
files. Requests must be identical; numbers in the answers may differ by the committed ``expected.json``'s
``rtol`` (another CPU's floating point), and a larger difference stops the build with the first ones
found. ``--update-samples`` writes the committed samples instead, after a deliberate change of a model.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from smkit.config import ConfigError
from smkit.ops.package_by_config import ModelDataError
from smkit.packaging import (
    ArchiveInfo,
    HandlerCheck,
    Manifest,
    PackagingError,
    build_archive,
    inspect_archive,
)
from smkit.project import BuildRecord, inputs_of

ROOT = Path(__file__).resolve().parent.parent
MODEL_CODE = ROOT / "model_code"
VERSIONED = ("numpy", "scikit-learn", "scipy", "joblib")
TENSORFLOW = "tensorflow-cpu"


@dataclass(frozen=True)
class Training:
    """One training script, the artifact files it must leave behind, and other files it reads."""

    script: str
    produces: tuple[str, ...]
    reads: tuple[str, ...] = ()
    requires: str | None = None  # an optional distribution the script needs (and whose version it records)

    @property
    def model(self) -> str:
        """The model folder whose ``samples/`` the script writes (``--samples``)."""
        return self.script.split("/")[0]


@dataclass(frozen=True)
class Archive:
    """One archive to build from a model folder's ``code/`` and ``artifacts/`` (plus shared helpers)."""

    output: str
    model: str
    include: tuple[str, ...] = ("shared/table_io.py",)
    requires: str | None = None


TRAININGS = (
    Training(
        "tabular/train.py",
        ("tabular/artifacts/model.npz",),
        ("tabular/code/trees.py", "tabular/code/features.py", "shared/table_io.py"),
    ),
    Training("iris/train.py", ("iris/artifacts/classifier.joblib",)),
    Training(
        "featurizer/train.py", ("featurizer/artifacts/featurizer.joblib", "regressor/artifacts/model.joblib")
    ),
    Training(
        "tf_insurance/train.py",
        ("tf_insurance/artifacts/insurance/1/saved_model.pb",),
        requires=TENSORFLOW,
    ),
)
ARCHIVES = (
    Archive("model.tar.gz", "tabular"),
    Archive("models/tabular.tar.gz", "tabular"),
    Archive("models/iris.tar.gz", "iris"),
    Archive("pipeline/featurizer.tar.gz", "featurizer"),
    Archive("pipeline/regressor.tar.gz", "regressor"),
    Archive("tf_insurance.tar.gz", "tf_insurance", include=(), requires=TENSORFLOW),
)


def installed(distribution: str | None) -> bool:
    """Whether an optional distribution is installed (None: nothing optional needed)."""
    if distribution is None:
        return True
    try:
        version(distribution)
    except PackageNotFoundError:
        return False
    return True


def _fingerprint(training: Training) -> str:
    digest = hashlib.sha256()
    for name in (training.script, "common.py", *training.reads):
        path = MODEL_CODE / name
        digest.update(path.read_bytes())
    names = (*VERSIONED, *([training.requires] if training.requires else []))
    digest.update(json.dumps({name: version(name) for name in names}, sort_keys=True).encode())
    return digest.hexdigest()


def train_if_stale(training: Training, build_dir: Path, *, update_samples: bool = False) -> bool:
    """Run the training script unless its stamp and artifacts are current; return whether it ran.

    Its samples go to ``<build_dir>/.samples/<model>`` and are compared with the committed ones
    (PackagingError when they differ beyond the tolerance); ``update_samples`` writes the committed ones.
    """
    stamps = build_dir / ".stamps"
    stamp = stamps / (training.script.replace("/", "_") + ".sha256")
    fingerprint = _fingerprint(training)
    current = stamp.is_file() and stamp.read_text().strip() == fingerprint
    if current and all((MODEL_CODE / p).is_file() for p in training.produces):
        return False
    committed = MODEL_CODE / training.model / "samples"
    produced = committed if update_samples else build_dir / ".samples" / training.model
    subprocess.run(
        [sys.executable, str(MODEL_CODE / training.script), "--samples", str(produced)], check=True
    )
    if not update_samples:
        differences = compare_samples(committed, produced)
        if differences:
            shown = "; ".join(differences[:MAX_SHOWN])
            raise PackagingError(
                f"model_code/{training.model}/samples",
                f"differs from what model_code/{training.script} produced now (in {produced}): {shown}",
                "if the model or its training changed on purpose, rewrite the committed samples with "
                "`python -m scripts.package_models --update-samples` and commit them",
            )
    stamps.mkdir(parents=True, exist_ok=True)
    stamp.write_text(fingerprint + "\n")
    return True


# -- samples: requests identical, answers within the committed expected.json's rtol ----------------------
DEFAULT_RTOL = 1e-6  # model_code/common.py's RTOL, for an expected.json that states none
ATOL = 1e-12  # numbers this close to each other (around zero) are equal whatever their ratio
MAX_SHOWN = 5
ANSWERS = ("expected.json", "featurized.csv")  # computed by the model: compared with the tolerance


def compare_samples(committed: Path, produced: Path) -> list[str]:
    """What differs between two sample folders, in words (empty: the same within the tolerance).

    Files named in :data:`ANSWERS` hold numbers a model computed: JSON values and CSV cells are compared
    with ``math.isclose(rel_tol=rtol, abs_tol=ATOL)``, ``rtol`` from the committed ``expected.json``. Every
    other file (the requests) must be identical byte for byte.
    """
    expected = committed / "expected.json"
    rtol = (
        float(json.loads(expected.read_text()).get("rtol", DEFAULT_RTOL))
        if expected.is_file()
        else DEFAULT_RTOL
    )
    differences: list[str] = []
    names = sorted({p.name for p in committed.iterdir()} | {p.name for p in produced.iterdir()})
    for name in names:
        old, new = committed / name, produced / name
        if not old.is_file() or not new.is_file():
            differences.append(
                f"{name} exists only in {'the new samples' if new.is_file() else 'the committed ones'}"
            )
        elif old.read_bytes() == new.read_bytes():
            continue
        elif name not in ANSWERS:
            differences.append(f"{name} is not byte-identical (a request must be)")
        elif name.endswith(".json"):
            _compare(json.loads(old.read_text()), json.loads(new.read_text()), rtol, name, differences)
        else:
            _compare(_csv(old), _csv(new), rtol, name, differences)
    return [f"{d} (rtol {rtol:g})" if " != " in d else d for d in differences]


def _csv(path: Path) -> list[list[Any]]:
    rows = csv.reader(io.StringIO(path.read_text()))
    return [[_number(cell) for cell in row] for row in rows]


def _number(cell: str) -> Any:
    try:
        return float(cell)
    except ValueError:
        return cell


def _compare(old: Any, new: Any, rtol: float, where: str, out: list[str]) -> None:
    if len(out) >= MAX_SHOWN:
        return
    numbers = (int, float)
    if isinstance(old, numbers) and isinstance(new, numbers) and not isinstance(old, bool):
        if not math.isclose(old, new, rel_tol=rtol, abs_tol=ATOL):
            out.append(f"{where}: {old!r} != {new!r}")
    elif isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        for key in old:
            _compare(old[key], new[key], rtol, f"{where}[{key!r}]", out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _compare(a, b, rtol, f"{where}[{index}]", out)
    elif old != new:
        out.append(f"{where}: {old!r} != {new!r}")


def _settings(archive: Archive) -> dict[str, object]:
    """What shapes an example archive besides its input files: the library and packager versions."""
    names = (*VERSIONED, "smkit", "isal", "packaging", *([archive.requires] if archive.requires else []))
    return {**{name: version(name) for name in names}, "python": sys.version}


def build(archive: Archive, build_dir: Path, *, force: bool) -> tuple[Manifest, bool]:
    """Package one model folder into its archive unless its build record (:class:`smkit.project.BuildRecord`,
    the one staleness scheme of ``smkit package --config`` too) shows it is current; True if built."""
    model = MODEL_CODE / archive.model
    output = build_dir / archive.output
    record = BuildRecord(
        output, build_dir / ".stamps" / (archive.output.replace("/", "_") + ".json"), MODEL_CODE
    )
    sources = [model / "code", model / "artifacts", *(MODEL_CODE / name for name in archive.include)]
    settings = _settings(archive)
    if not force and output.is_file():
        digest = _sha256(output)
        if record.stale(inputs_of(MODEL_CODE, sources), settings, sha256=digest) is None:
            report = inspect_archive(output, handler_check=False)
            if report.manifest is not None:
                info = ArchiveInfo(str(output), output.stat().st_size, digest)
                return replace(report.manifest, archive=info), False
    include = [MODEL_CODE / name for name in archive.include]
    manifest = build_archive(model / "code", model / "artifacts", output, include=include, threads=1)
    assert manifest.archive is not None
    record.record(inputs_of(MODEL_CODE, sources), settings, sha256=manifest.archive.sha256)
    return manifest, True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def package_user_model(name: str, build_dir: Path, config: Path | None) -> Manifest:
    """``model_code/NAME`` (from ``smkit init``) -> ``<build-dir>/NAME/model.tar.gz``, as ``smkit package``.

    The handler is checked in the model's own environment; with ``config`` (default ``config/NAME.yaml``
    when it exists) its image and network isolation decide the Python version and wheel vendoring.
    """
    from smkit.modelenv import cache_root
    from smkit.ops.package_by_config import environment, target
    from smkit.packaging.vendor import VendorTarget

    model = MODEL_CODE / name
    if not (model / "code").is_dir():
        raise PackagingError(
            f"model_code/{name}", "has no code/ folder", f"create it with `smkit init {name}`"
        )
    default = ROOT / "config" / f"{name}.yaml"
    goal = target(config or (default if default.is_file() else None))
    vendor = goal.vendor_wheels  # the resolved deployment's decision, as for `smkit package`
    return build_archive(
        model / "code",
        model / "artifacts",
        build_dir / name / "model.tar.gz",
        vendor=VendorTarget(python=goal.runtime.python) if vendor else None,
        wheel_cache=cache_root(),
        handler=HandlerCheck(
            environment=environment(goal.runtime, None),
            framework=goal.defaults,
            container_env=goal.container_env,
        ),
    )


def archives_of(config: Path, build_dir: Path) -> tuple[list[Archive], list[str]]:
    """The example archives and the ``smkit init`` models (by name) that ``config``'s model data names."""
    from smkit.config import load_deployment

    examples: list[Archive] = []
    users: list[str] = []
    build = build_dir.resolve()
    for container in load_deployment(config).containers:
        if container.model_data.path is None:
            continue  # model data already in S3
        path = container.model_data.path
        if not path.is_relative_to(build):
            continue  # built elsewhere: the config names an existing archive
        rel = path.relative_to(build).as_posix()
        found = [a for a in ARCHIVES if a.output == rel or a.output.startswith(rel + "/")]
        examples += [a for a in found if a not in examples]
        parts = rel.split("/")
        if not found and len(parts) == 2 and parts[1] == "model.tar.gz" and (MODEL_CODE / parts[0]).is_dir():
            users.append(parts[0])
    return examples, users


def _in_config(name: str, config: Path) -> bool:
    from smkit.config import load_deployment
    from smkit.project import project_models

    return any(model.name == name for model in project_models(load_deployment(config)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--force", action="store_true", help="rebuild (and re-check) every archive")
    parser.add_argument("--model", help="package only model_code/MODEL (smkit init) into build/MODEL/")
    parser.add_argument("--config", type=Path, help="package only what this deployment config uses")
    parser.add_argument(
        "--update-samples",
        action="store_true",
        help="train every example again and write its samples into model_code/<model>/samples "
        "(default: compare them with the committed ones)",
    )
    args = parser.parse_args(argv)
    archives: Sequence[Archive] = ARCHIVES
    users: list[str] = []
    if args.model or args.config:
        archives, users = archives_of(args.config, args.build_dir) if args.config else ([], [])
        if args.model and args.model not in users:
            users.append(args.model)
    try:
        if args.config is not None and users:
            # The models of `smkit init` in this repository: what `smkit package --config` builds.
            from smkit.ops.package_by_config import package_config

            package_config(args.config)
            users = [name for name in users if name == args.model and not _in_config(name, args.config)]
        for name in users:
            print(package_user_model(name, args.build_dir, args.config).summary())
    except PackagingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ConfigError, ModelDataError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not archives:
        return 0
    wanted = {a.model for a in archives}
    for training in TRAININGS:
        if not any(p.split("/")[0] in wanted for p in training.produces):
            continue
        if not installed(training.requires):
            print(
                f"skipped ({training.requires} not installed: pip install 'smkit[tensorflow]'): model_code/{training.script}"
            )
            continue
        try:
            ran = train_if_stale(training, args.build_dir, update_samples=args.update_samples)
        except PackagingError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(f"{'trained' if ran else 'up to date'}: model_code/{training.script}")
    archives = [a for a in archives if installed(a.requires)]
    try:
        with ThreadPoolExecutor() as pool:
            results = list(pool.map(lambda a: build(a, args.build_dir, force=args.force), archives))
    except PackagingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for manifest, built in results:
        print()
        if not built:
            print("up to date (inputs unchanged since the checked build; --force rebuilds):")
        print(manifest.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
