"""Every gate a change must pass, in order: the same commands locally, in any CI runner and in the pipeline.

The gates are the steps of ``make test`` (lint, package-model, pytest — which synthesizes every config and
runs cfn-lint and cdk-nag over the templates) followed by a ``cdk synth`` of every config through the pinned
CDK CLI, the way users call it. ``GATES`` (scripts/gates.py) is the single list: this script runs it, and the
synth step of this repository's pipeline (stacks/app.py) runs exactly the same lines before it synthesizes
the pipeline itself.

::

    python -m scripts.ci_gates                 # all gates, stop at the first failure
    python -m scripts.ci_gates --list          # print the gate commands
    python -m scripts.ci_gates --only lint --only pytest
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scripts.gates import GATES, run_gates

REPO_ROOT = Path(__file__).resolve().parent.parent


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scripts.ci_gates",
        description="Run every gate of the kit (lint, package, tests with cfn-lint + cdk-nag, CDK synth).",
    )
    p.add_argument("--list", action="store_true", help="print each gate's name and command, run nothing")
    p.add_argument("--only", action="append", choices=[g.name for g in GATES], help="run only these gates")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.list:
        for gate in GATES:
            print(f"{gate.name}\t{gate.command}")
        return 0
    return run_gates(args.only, cwd=REPO_ROOT)


if __name__ == "__main__":
    sys.exit(main())
