"""What each command's help imports: ``smkit --help`` and ``smkit COMMAND --help`` list options only, so they
import no SDK, CDK, NumPy or boto3 (each costs from a third of a second to seconds). Asserted on the set of
top-level packages in ``sys.modules`` of a fresh interpreter, never on a time."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from smkit.cli import COMMANDS, SUMMARIES, main

HEAVY = {"sagemaker", "aws_cdk", "jsii", "constructs", "numpy", "pandas", "boto3", "botocore", "moto"}

PROBE = """
import json, sys
sys.argv = ["smkit", *json.loads(sys.argv[1])]
from smkit.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted({m.split(".")[0] for m in sys.modules})}), file=sys.stderr)
"""


def imported(*args: str) -> set[str]:
    """Top-level packages imported by ``smkit ARGS`` in a fresh interpreter (which must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return set(report["modules"])


def test_group_help_imports_no_command():
    modules = imported("--help")
    assert not modules & HEAVY
    assert not modules & {"pydantic", "yaml", "starlette", "httpx"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_help_imports_no_sdk_cdk_numpy_or_boto3(command):
    assert not imported(command, "--help") & HEAVY


def test_group_help_lists_every_command_with_its_own_summary():
    ctx = click.Context(main)
    assert set(SUMMARIES) == set(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        assert command.get_short_help_str(limit=1000) == click.Command(
            name, help=SUMMARIES[name]
        ).get_short_help_str(limit=1000), name


INVOKE_PROBE = """
import sys
from smkit.client.codecs import deserialize, serialize_literal
from smkit.client.invoke import InvokeResult
body = serialize_literal('[[1, 2]]', 'application/json')
assert InvokeResult(body, 'application/json', 'v').decoded() == [[1, 2]]
assert deserialize(b'ok', 'text/plain') == 'ok'
print(sorted({m.split('.')[0] for m in sys.modules} & {'sagemaker', 'numpy'}))
"""


def test_json_invocations_do_not_import_the_sdk():
    done = subprocess.run([sys.executable, "-c", INVOKE_PROBE], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
