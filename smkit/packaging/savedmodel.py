"""Check the SavedModels of a TF-Serving archive: they load with TensorFlow and have serving signatures.

The check runs in a child ``python -I -B`` with TensorFlow (the packager itself never imports it) and
loads every ``<model>/<version>`` the SageMaker TensorFlow Serving image would serve
(:func:`smkit.tfs.layout.find_models`), listing each signature's method, inputs and outputs. Without
TensorFlow in the checking interpreter the load is skipped with a warning naming the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smkit.packaging.errors import PackagingError
from smkit.packaging.probe_run import run_probe
from smkit.tfs.layout import find_models

PROBE_SOURCE = (Path(__file__).with_name("_tf_probe.py")).read_text(encoding="utf-8")
NO_TENSORFLOW = (
    "TensorFlow is not installed in the checking interpreter, so the SavedModels were not loaded "
    "(pip install 'smkit[tensorflow]')"
)


@dataclass(frozen=True)
class SavedModelReport:
    """One served version and its signatures: ``{name: {"method", "inputs", "outputs"}}``."""

    label: str
    signatures: dict[str, dict[str, Any]]

    def describe(self) -> list[str]:
        """One line per signature: ``insurance/1 predict: (year string[-1], ...) -> (price float[-1])``."""
        lines = []
        for name, sig in self.signatures.items():
            inputs = ", ".join(f"{k} {v}" for k, v in sig["inputs"].items())
            outputs = ", ".join(f"{k} {v}" for k, v in sig["outputs"].items())
            method = sig["method"].rsplit("/", 1)[-1]
            lines.append(f"{self.label} {name} [{method}]: ({inputs}) -> ({outputs})")
        return lines


def check_saved_models(
    artifacts_dir: Path, *, python: str, timeout_s: float
) -> tuple[tuple[SavedModelReport, ...], tuple[str, ...]]:
    """Load every served version; return their signatures and any warnings; raise when one cannot serve."""
    models = find_models(artifacts_dir)
    items = [{"label": f"{m.name}/{v}", "path": str(m.version_path(v))} for m in models for v in m.versions]
    answer = run_probe(
        PROBE_SOURCE,
        {"models": items},
        python=python,
        cpu_s=timeout_s,
        label=f"artifacts folder {artifacts_dir}",
        doing="loading the SavedModels",
        check="SavedModel check",
        exit_fix="load the model yourself with tf.saved_model.load to see the error",
    )
    if answer["tensorflow"] is None:
        return (), (NO_TENSORFLOW,)
    reports = []
    for entry in answer["models"]:
        where = f"artifacts folder {artifacts_dir / entry['label']}"
        if "error" in entry:
            raise PackagingError(
                where,
                f"TensorFlow {answer['tensorflow']} cannot load this SavedModel: {entry['error']}",
                "export it again with tf.saved_model.save(module, path, signatures=...) and the same TensorFlow",
            )
        if not entry["signatures"]:
            raise PackagingError(
                where,
                "has no signatures, so TensorFlow Serving has nothing to call",
                "export it with signatures={'serving_default': module.f} where f has an input_signature",
            )
        reports.append(SavedModelReport(entry["label"], entry["signatures"]))
    return tuple(reports), ()
