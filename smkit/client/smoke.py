"""Smoke test: send a config's sample payloads and compare the answers with ``expected.json``.

Samples live in ``model_code/<model>/samples/`` (``request.csv``, ``request.json``, ``request.npy``,
``expected.json`` = ``{"predictions": [...], "rtol": ...}`` plus optional extra keys). Which samples and
which targets follow from the config:

================= =============================================================================
multi-model       every ``*.tar.gz`` under the model prefix, as TargetModel; samples of its stem
multi-container   direct: every container by TargetContainerHostname; serial: the first container's
                  samples (its expected answer is the pipeline's end-to-end output)
inference-        every component by InferenceComponentName (``component_names`` maps the config's
components        names to deployed ones); samples of the component's container
async             inline Body (samples are small), output polled at OutputLocation
other             the first container's samples
================= =============================================================================

The same plan runs against the local gateway and a real endpoint (only the client's endpoint URL differs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smkit.client.invoke import Target, describe_client_error, invoke, invoke_async, wait_for_outcome
from smkit.config.resolved import ResolvedDeployment
from smkit.object_store import Storage
from smkit.project import samples_dir

# Sample file -> request Content-Type.
PAYLOADS: dict[str, str] = {
    "request.csv": "text/csv",
    "request.json": "application/json",
    "request.npy": "application/x-npy",
}
ACCEPT = "application/json"
DEFAULT_RTOL = 1e-6


class SmokeError(ValueError):
    """The config's samples cannot be found; the message names the missing path."""


@dataclass(frozen=True)
class SmokeCase:
    """One payload sent to one target."""

    label: str
    payload: Path
    content_type: str
    expected: dict[str, Any]
    target: Target


@dataclass(frozen=True)
class SmokeResult:
    """The outcome of one case."""

    case: SmokeCase
    ok: bool
    detail: str
    seconds: float


def project_root(config_path: Path) -> Path:
    """The nearest folder at or above the config's folder that holds ``model_code/`` (else the cwd)."""
    for folder in config_path.resolve().parents:
        if (folder / "model_code").is_dir():
            return folder
    return Path.cwd()


def _samples(root: Path, model: str, *, why: str, deployment: ResolvedDeployment | None = None) -> Path:
    """The samples of container (or multi-model archive stem) ``model``: its archive's model_code folder."""
    samples = (
        samples_dir(deployment, model, root)
        if deployment is not None
        else root / "model_code" / model / "samples"
    )
    if not (samples / "expected.json").is_file():
        raise SmokeError(
            f"no samples for {why}: {samples / 'expected.json'} does not exist; write them with "
            f"`smkit train NAME --samples-only` (or train.py) or add {samples}/"
        )
    return samples


def _cases_for(samples: Path, label: str, target: Target) -> list[SmokeCase]:
    expected = json.loads((samples / "expected.json").read_text(encoding="utf-8"))
    return [
        SmokeCase(f"{label} {name}", samples / name, content_type, expected, target)
        for name, content_type in PAYLOADS.items()
        if (samples / name).is_file()
    ]


def plan(
    deployment: ResolvedDeployment, root: Path, *, component_names: Mapping[str, str] | None = None
) -> list[SmokeCase]:
    """The cases the deployment's endpoint should pass.

    ``component_names``: config component name -> deployed InferenceComponentName (the serving stack's
    ``InferenceComponentNames`` output); locally the config's names are the component names.
    """
    containers = deployment.containers
    first = containers[0]
    if deployment.components is not None:
        names = component_names or {}
        return [
            case
            for component in deployment.components.components
            if component.container is not None  # adapters answer through their base's engine only
            for case in _cases_for(
                _samples(
                    root,
                    component.container,
                    why=f"inference component {component.name}",
                    deployment=deployment,
                ),
                component.name,
                Target(component=names.get(component.name, component.name)),
            )
        ]
    data = first.model_data
    if data.kind == "multi-model":
        if data.path is None:
            raise SmokeError(f"the multi-model prefix {data.uri} is in S3; the smoke test lists a local one")
        prefix = data.path
        archives = sorted(prefix.glob("*.tar.gz"))
        if not archives:
            raise SmokeError(f"no *.tar.gz under the multi-model prefix {prefix}; run make package-model")
        cases: list[SmokeCase] = []
        for archive in archives:
            stem = archive.name.removesuffix(".tar.gz")
            samples = _samples(root, stem, why=f"TargetModel {archive.name}")
            cases += _cases_for(samples, archive.name, Target(model=archive.name))
        return cases
    if deployment.inference_mode == "direct":
        cases = []
        for container in deployment.production_containers:
            host = container.hostname or container.name
            cases += _cases_for(
                _samples(root, container.name, why=f"container {host}", deployment=deployment),
                host,
                Target(container=host),
            )
        return cases
    return _cases_for(
        _samples(root, first.name, why=f"container {first.name}", deployment=deployment),
        deployment.name,
        Target(),
    )


def compare(expected: dict[str, Any], answer: Any) -> tuple[bool, str]:
    """Every expected key the answer has must match (numbers within ``rtol``); ``predictions`` is required."""
    rtol = float(expected.get("rtol", DEFAULT_RTOL))
    if not isinstance(answer, dict):
        answer = {"predictions": answer}
    for key, want in expected.items():
        if key == "rtol" or (key != "predictions" and key not in answer):
            continue
        if key not in answer:
            return False, f"answer has no {key!r}: {str(answer)[:120]}"
        got = answer[key]
        try:
            same = np.allclose(
                np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=rtol, atol=0.0
            )
        except (TypeError, ValueError):
            same = _close(got, want, rtol)
        if not same:
            return False, f"{key}: expected {str(want)[:80]}, got {str(got)[:80]}"
    return True, "ok"


def _close(got: Any, want: Any, rtol: float) -> bool:
    """Structural equality with numbers within ``rtol``: pipeline answers like ``[{"label", "score"}]``."""
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(_close(got[k], want[k], rtol) for k in want)
        )
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(_close(g, w, rtol) for g, w in zip(got, want, strict=True))
        )
    numbers = (int, float)
    if isinstance(want, numbers) and isinstance(got, numbers) and not isinstance(want, bool):
        return bool(np.isclose(got, want, rtol=rtol, atol=0.0))
    return bool(got == want)


def run(
    client: Any,
    endpoint: str,
    cases: list[SmokeCase],
    *,
    asynchronous: bool = False,
    storage: Storage | None = None,
    timeout_s: float = 120.0,
) -> list[SmokeResult]:
    """Send every case; errors become failed results (the run goes on)."""
    results = []
    for case in cases:
        started = time.monotonic()
        body = case.payload.read_bytes()
        try:
            if asynchronous:
                submission = invoke_async(
                    client, endpoint, content_type=case.content_type, accept=ACCEPT, body=body
                )
                outcome = wait_for_outcome(
                    submission, storage or Storage(), accept=ACCEPT, timeout_s=timeout_s
                )
                if not outcome.succeeded:
                    raise RuntimeError(f"failed: {outcome.body.decode(errors='replace')[:200]}")
                answer = outcome.decoded()
            else:
                answer = invoke(
                    client, endpoint, body, content_type=case.content_type, accept=ACCEPT, target=case.target
                ).decoded()
            ok, detail = compare(case.expected, answer)
        except Exception as exc:  # ClientError, storage, decoding: report and continue
            ok, detail = False, describe_client_error(exc)
        results.append(SmokeResult(case, ok, detail, time.monotonic() - started))
    return results
