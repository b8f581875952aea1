#!/usr/bin/env bash
# Every gate of the kit, for CI runners that prefer a shell entry point: installs through `make setup`
# (idempotent) and runs scripts/ci_gates.py with the arguments given (--help, --list, --only NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
make setup
exec .venv/bin/python -m scripts.ci_gates "$@"
