#!/usr/bin/env python3
"""The repository's CDK app (cdk.json): ``cdk synth -c config=config/<name>.yaml``; see stacks/app.py."""

from pathlib import Path

from stacks.app import main

if __name__ == "__main__":
    main(Path(__file__).resolve().parent)
