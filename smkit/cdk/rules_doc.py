"""Write docs/aws-rules.md: synthesize every config under config/ into one CDK app (as ``cdk synth`` would, with
the app's feature flags and cdk.json's context) and render smkit/config/rule_table.py's rows against the
templates (smkit/config/rule_doc.py).

Run ``python -m smkit.cdk.rules_doc`` from the project root (``--root``) once the configs' model archives
exist (``make package-model`` here); ``--check`` exits 1 when the committed file differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import aws_cdk as cdk

from smkit.cdk import FEATURE_FLAGS, add_serving_stacks
from smkit.config import load_deployment
from smkit.config.rule_doc import emitted, render

DOC = Path("docs") / "aws-rules.md"


def document(root: Path) -> str:
    """The document for the configs under ``root/config``."""
    context = {**FEATURE_FLAGS, **json.loads((root / "cdk.json").read_text())["context"]}
    with tempfile.TemporaryDirectory() as out:
        app = cdk.App(context=context, outdir=out)
        stacks = [
            add_serving_stacks(app, deployment=load_deployment(path))
            for path in sorted((root / "config").glob("*.yaml"))
        ]
        assembly = app.synth()
        templates = [assembly.get_stack_by_name(s.serving.stack_name).template for s in stacks]
    return render(emitted(templates))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/aws-rules.md is out of date")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project (config/, cdk.json)")
    args = parser.parse_args(argv)
    text = document(args.root)
    doc = args.root / DOC
    if args.check:
        if doc.read_text(encoding="utf-8") != text:
            print(f"{doc} is out of date: python -m smkit.cdk.rules_doc", file=sys.stderr)
            return 1
        return 0
    doc.write_text(text, encoding="utf-8")
    print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
