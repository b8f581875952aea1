"""Every gate a change to this repository must pass, in order: the same commands locally, in any CI runner
and in this repository's own pipeline.

The gates are the steps of ``make test`` (lint, package-model, pytest — which synthesizes every config and
runs cfn-lint and cdk-nag over the templates) followed by a ``cdk synth`` of every config through the pinned
CDK CLI, the way users call it. :data:`GATES` is the single list: ``scripts/ci_gates.py`` runs it, and the
synth step of this repository's pipeline (stacks/app.py gives them to ``smkit.cdk.PipelineStack``) runs
exactly the same lines before it synthesizes the pipeline itself. Each command runs from the repository root.
They belong to this repository (its Makefile, its scripts/), not to the package: a project made by
``smkit init`` gets the pipeline commands of ``smkit.cdk.PipelineCommands.for_project``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CONFIG_GLOB = "config/*.yaml"
GATE_ASSEMBLY_DIR = "build/synth-gates"


@dataclass(frozen=True)
class Gate:
    """One gate: a name, the shell line it runs (bash, -e -u -o pipefail) and what passing proves."""

    name: str
    command: str
    proves: str


GATES: tuple[Gate, ...] = (
    Gate("lint", "make lint", "ruff lint + format check and mypy are clean"),
    Gate("package-model", "make package-model", "the example models train and package reproducibly"),
    Gate(
        "pytest",
        ".venv/bin/python -m pytest",
        "unit and socket tests; every config synthesized with cfn-lint and cdk-nag clean; emulated deploy",
    ),
    Gate(
        "synth",
        f"for c in {CONFIG_GLOB}; do npx --no-install cdk synth --quiet --output {GATE_ASSEMBLY_DIR}"
        ' -c config="$c" || exit 1; done',
        "every config synthesizes through the pinned CDK CLI, offline and without credentials",
    ),
)


def gate_commands() -> list[str]:
    """The shell lines of every gate, in order."""
    return [gate.command for gate in GATES]


# This repository's pipeline steps install with its Makefile (uv from uv.lock, the pinned CDK CLI).
PIPELINE_INSTALL_COMMANDS = ("make setup",)


def pipeline_synth_commands(config: str) -> list[str]:
    """This repository's CDK Pipelines synth step: every gate, then the synth of the pipeline app itself, once
    more with what each stage runs now when a stage runs something (smkit.release.stage_state, as ``smkit synth
    --read-stages`` does for a project made by ``smkit init``)."""
    synth = f"npx --no-install cdk synth -c config={config} -c pipeline=true"
    read = f"STAGES=$(.venv/bin/python -m smkit.release.stage_state {config} cdk.out)"
    return [*gate_commands(), synth, f'{read} && if [ -n "$STAGES" ]; then eval "{synth} $STAGES"; fi']


def pipeline_smoke_test_commands(config: str) -> list[str]:
    """This repository's post-deploy smoke test: scripts/smoke_test.py, assuming the staging role itself.

    ``ENDPOINT_NAME``, ``ENDPOINT_REGION`` and ``SMOKE_TEST_ROLE_ARN`` are set by the pipeline's smoke-test
    step (smkit/cdk/pipeline_stack.py).
    """
    return [
        f'.venv/bin/python -m scripts.smoke_test --config {config} --region "$ENDPOINT_REGION"'
        ' --endpoint-name "$ENDPOINT_NAME" --role-arn "$SMOKE_TEST_ROLE_ARN"'
    ]


def run_gates(names: list[str] | None = None, *, cwd: Path | None = None) -> int:
    """Run the gates (all, or those named) in ``cwd`` in order; stop at the first failure; print a summary."""
    selected = [g for g in GATES if not names or g.name in names]
    results: list[tuple[str, str, float]] = []
    status = 0
    for gate in selected:
        print(f"==> gate {gate.name}: {gate.command}", file=sys.stderr, flush=True)
        started = time.monotonic()
        code = subprocess.run(["bash", "-euo", "pipefail", "-c", gate.command], cwd=cwd, check=False)
        elapsed = time.monotonic() - started
        results.append((gate.name, "passed" if code.returncode == 0 else "FAILED", elapsed))
        if code.returncode != 0:
            status = code.returncode
            break
    for name, outcome, elapsed in results:
        print(f"{name:<14} {outcome:<7} {elapsed:8.1f} s", file=sys.stderr)
    skipped = [g.name for g in selected[len(results) :]]
    if skipped:
        print(f"not run after the failure: {', '.join(skipped)}", file=sys.stderr)
    return status
