"""The CI entry points as a runner sees them: --help, the gates (equal to `make test`), and the GitHub Actions
example (actionlint clean, OIDC only, calling only scripts that exist)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scripts import ci_gates, gates

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / "examples" / "github-actions").glob("*.yml"))
ACTIONLINT = Path(sys.executable).with_name("actionlint")
SCRIPTS = ("ci_gates", "publish_image", "deploy", "smoke_test", "rollback")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_has_help(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"scripts.{name}", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: python -m scripts.{name}")


def test_shell_entry_point_forwards_to_the_gates(capsys: pytest.CaptureFixture[str]) -> None:
    done = subprocess.run(
        ["bash", "scripts/ci_gates.sh", "--list"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert ci_gates.main(["--list"]) == 0
    assert done.returncode == 0 and done.stdout.endswith(capsys.readouterr().out)  # after `make setup`


def test_gate_list_is_printed_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert ci_gates.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["lint", "package-model", "pytest", "synth"]


def _recipe(*targets: str) -> list[str]:
    done = subprocess.run(
        ["make", "--dry-run", "--always-make", "PYTEST_ARGS=", *targets],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def test_gates_are_the_steps_of_make_test() -> None:
    """lint + package-model + pytest is exactly `make test`'s recipe (after its setup and bytecode
    prerequisites; package-model compiles the kit's bytecode too, so the pipeline's gates do), then
    `make test-frameworks`: the gates' one pytest runs the tests of both targets."""
    setup = _recipe("setup")
    bytecode = [line for line in _recipe("bytecode") if line not in setup]
    assert len(bytecode) == 1 and "-m compileall" in bytecode[0]
    test = [line for line in _recipe("test") if line not in setup]
    steps = [
        line
        for target in ("lint", "package-model")
        for line in _recipe(target)
        if line not in setup and line not in bytecode
    ]
    assert bytecode[0] in _recipe("package-model")
    pytest_line = next(line for line in test if " -m pytest" in line)
    assert test == [*bytecode, *steps, pytest_line]
    assert pytest_line.split()[0].endswith(".venv/bin/python")
    assert pytest_line.endswith('-m pytest -m "not frameworks"')
    frameworks = [line for line in _recipe("test-frameworks") if line not in setup]
    assert frameworks == [
        *bytecode,
        *[s for s in steps if s in _recipe("package-model")],
        pytest_line.replace('-m "not frameworks"', "-m frameworks"),
    ]
    # CI then runs the documented journeys from the built wheel (scripts/journeys.py), then the classic
    # journey again on each other supported Python.
    assert (REPO / ".ci" / "run").read_text().splitlines()[-4:] == [
        "make test",
        "make test-frameworks",
        "make test-journeys",
        "make test-journeys-pythons",
    ]
    assert gates.gate_commands()[2] == ".venv/bin/python -m pytest"


def test_gates_stop_at_the_first_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = (
        gates.Gate("first", "true", "passes"),
        gates.Gate("second", "echo broken >&2; exit 3", "fails"),
        gates.Gate("third", "true", "never runs"),
    )
    monkeypatch.setattr(gates, "GATES", steps)
    assert gates.run_gates(cwd=REPO) == 3
    err = capsys.readouterr().err
    assert re.search(r"^first\s+passed", err, re.M) and re.search(r"^second\s+FAILED", err, re.M)
    assert "not run after the failure: third" in err
    assert gates.run_gates(["first", "third"], cwd=REPO) == 0


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow: Path) -> None:
    done = subprocess.run([str(ACTIONLINT), str(workflow)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ github.evnt.name }}\n"
    )
    done = subprocess.run([str(ACTIONLINT), str(broken)], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "evnt" in done.stdout


def test_workflow_uses_oidc_and_only_existing_scripts() -> None:
    assert WORKFLOWS, "examples/github-actions/*.yml"
    for workflow in WORKFLOWS:
        text = workflow.read_text()
        data = yaml.safe_load(text)
        assert data["permissions"]["id-token"] == "write"
        assert not re.search(r"aws-access-key-id|aws-secret-access-key|secrets\.AWS_", text)
        steps = [step for job in data["jobs"].values() for step in job["steps"]]
        logins = [
            s for s in steps if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials")
        ]
        assert logins and all("role-to-assume" in s["with"] for s in logins)
        used = set(re.findall(r"scripts\.(\w+)", text)) | set(re.findall(r"scripts/(\w+)\.sh", text))
        assert used == set(SCRIPTS)
        assert all((REPO / "scripts" / f"{name}.py").is_file() for name in used)
        gates_job = data["jobs"]["gates"]
        assert any(step.get("run") == "bash scripts/ci_gates.sh" for step in gates_job["steps"])
        assert data["jobs"]["production"]["environment"] == "production"
        assert data["jobs"]["production"]["needs"] == "staging"
