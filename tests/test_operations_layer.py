"""Each operation is written once, in smkit/ops (smkit/ops/__init__.py): read from the source, by what each
module imports and calls, so that a second way cannot come back unnoticed.

- a server process (the serving runtime, moto's server) is started and waited for only by
  smkit/ops/server_process.py: nothing else calls :func:`smkit.process.start_group`,
  :func:`~smkit.process.wait_ready` or :func:`~smkit.process.await_ready`, in the library or its tests.
  The benchmarks (bench/) time a cold start themselves and are the one documented exception.
- the pinned CDK CLI is found and run only by smkit/ops/cdk_cli.py: no other module of the library names
  its command (``npx``, ``aws-cdk@...``, ``node_modules/.bin``) in its code;
- a deploy (``smkit deploy``, the release scripts' deploy, ECR-only deploy and rollback, ``smkit emulator
  deploy``) runs smkit/ops/deploy_pipeline.py: nothing else in the library builds a ``cdk deploy`` call,
  and each of those entry points hands its target to :func:`smkit.ops.deploy_pipeline.run_deploy`;
- packaging by config is the library's (smkit/ops/package_by_config.py): the CLI builds no model data
  itself, and whether model data is stale is decided by :class:`smkit.project.BuildRecord` alone (the
  example archives of scripts/package_models.py included).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("smkit", "tests", "scripts")
START_AND_WAIT = {"start_group", "wait_ready", "await_ready"}
SERVER_PROCESS = "smkit/ops/server_process.py"
CDK_CLI = "smkit/ops/cdk_cli.py"


def _files() -> Iterator[Path]:
    for name in SOURCES:
        yield from (
            path
            for path in sorted((REPO / name).rglob("*.py"))
            if not any(part.startswith(".") for part in path.relative_to(REPO).parts)
        )


def uses(path: Path, module: str, names: set[str]) -> list[str]:
    """Where ``path`` imports one of ``names`` from ``module``, or reaches it as an attribute of it."""
    text = path.read_text(encoding="utf-8")
    parent, _, short = module.rpartition(".")
    if module not in text and f"from {parent} import {short}" not in text:
        return []  # cheap: most files never name the module
    name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    found = []
    for node in ast.walk(ast.parse(text)):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module == module:
            found += [f"{where}: imports {alias.name}" for alias in node.names if alias.name in names]
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in names
            and isinstance(node.value, ast.Name)
            and node.value.id == short
        ):
            found.append(f"{where}: calls {short}.{node.attr}")
    return found


def test_only_the_operations_layer_starts_and_waits_for_a_server() -> None:
    found = [
        use
        for path in _files()
        if path.relative_to(REPO).as_posix() != SERVER_PROCESS
        for use in uses(path, "smkit.process", START_AND_WAIT)
    ]
    assert found == [], "start servers with smkit.ops.server_process.ServerProcess:\n" + "\n".join(found)


def test_the_rule_sees_both_ways_of_reaching_the_primitives(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from smkit.process import start_group, free_port\nfrom smkit import process\n"
        "process.wait_ready(None, None)\n",
        encoding="utf-8",
    )
    assert [u.split(": ", 1)[1] for u in uses(sample, "smkit.process", START_AND_WAIT)] == [
        "imports start_group",
        "calls process.wait_ready",
    ]


def cli_names(path: Path) -> list[str]:
    """String constants in the code of ``path`` (docstrings left out) that name the CDK CLI's command."""
    text = path.read_text(encoding="utf-8")
    if "npx" not in text and "aws-cdk@" not in text and "node_modules/" not in text:
        return []  # cheap: most files never name it
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if text == "npx" or "aws-cdk@" in text or "node_modules/" in text:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {text[:60]!r}")
    return found


def test_only_the_operations_layer_runs_the_cdk_cli() -> None:
    found = [
        name
        for path in sorted((REPO / "smkit").rglob("*.py"))
        if path.relative_to(REPO).as_posix() != CDK_CLI
        for name in cli_names(path)
    ]
    assert found == [], "run the CDK CLI with smkit.ops.cdk_cli.CdkCli:\n" + "\n".join(found)
    assert cli_names(REPO / CDK_CLI), "the rule sees the runner's own names"


DEPLOY_PIPELINE = "smkit/ops/deploy_pipeline.py"
DEPLOY_CALLS = {"deploy_args", "deploy_assembly"}
# Each deploy the library offers: (module, the function that is it).
DEPLOYS = (
    ("smkit/cli/project.py", "deploy"),
    ("smkit/release/deploy.py", "deploy"),
    ("smkit/release/deploy.py", "deploy_repository"),
    ("smkit/release/rollback.py", "rollback"),
    ("smkit/emulator/deploy.py", "deploy_config"),
)


def deploy_calls(tree: ast.AST) -> list[int]:
    """Lines that build or run a ``cdk deploy`` call: ``X.deploy_args(...)``, ``X.deploy_assembly(...)``,
    ``cli.deploy(...)``."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (
            node.func.attr in DEPLOY_CALLS
            or (
                node.func.attr == "deploy"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"cli", "cdk"}
            )
        )
    ]


def test_every_deploy_runs_the_one_pipeline() -> None:
    outside = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "smkit").rglob("*.py"))
        if path.relative_to(REPO).as_posix() not in (DEPLOY_PIPELINE, CDK_CLI)
        and "deploy" in (text := path.read_text(encoding="utf-8"))
        for line in deploy_calls(ast.parse(text))
    ]
    assert outside == [], "deploy through smkit.ops.deploy_pipeline.run_deploy:\n" + "\n".join(outside)
    assert deploy_calls(ast.parse((REPO / DEPLOY_PIPELINE).read_text(encoding="utf-8")))
    for module, function in DEPLOYS:
        tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
        (defined,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function]
        names = {n.id for n in ast.walk(defined) if isinstance(n, ast.Name)}
        assert "run_deploy" in names, (
            f"{module}: {function}() does not run smkit.ops.deploy_pipeline.run_deploy"
        )


PACKAGING_CALLS = {"build_archive", "project_models", "archive_folder", "check_handler_file"}


def test_packaging_by_config_is_the_library_s_with_one_staleness_record() -> None:
    in_cli = [
        f"{path.relative_to(REPO)}:{node.lineno}: {name}"
        for path in sorted((REPO / "smkit" / "cli").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (name := getattr(node.func, "id", getattr(node.func, "attr", ""))) in PACKAGING_CALLS
    ]
    assert in_cli == [], "package through smkit.ops.package_by_config:\n" + "\n".join(in_cli)
    script = ast.parse((REPO / "scripts" / "package_models.py").read_text(encoding="utf-8"))
    (build,) = [n for n in ast.walk(script) if isinstance(n, ast.FunctionDef) and n.name == "build"]
    assert "BuildRecord" in {n.id for n in ast.walk(build) if isinstance(n, ast.Name)}
    records = [
        f"{path.relative_to(REPO)}: {node.name}"
        for path in [*sorted((REPO / "smkit").rglob("*.py")), REPO / "scripts" / "package_models.py"]
        if "stale" in (text := path.read_text(encoding="utf-8"))
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef) and node.name == "stale"
    ]
    assert records == ["smkit/project.py: stale", "smkit/project.py: stale"], records  # BuildRecord's, and
    # ProjectModel's, which hands its inputs to BuildRecord
