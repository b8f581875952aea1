"""`smkit package` / `smkit inspect` through the real click group: output and exit codes."""

from __future__ import annotations

import platform
from importlib import metadata

from click.testing import CliRunner
from pkg_harness import TINY_HANDLER, Model

from smkit.cli import main


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_package_then_inspect(tiny: Model) -> None:
    out = tiny.out / "model.tar.gz"
    code, stdout, _ = _run(
        "package",
        "--code",
        str(tiny.code),
        "--artifacts",
        str(tiny.artifacts),
        "--output",
        str(out),
        "--uncompressed",
        str(tiny.out / "flat"),
        "--threads",
        "2",
    )
    assert code == 0
    assert f"{out}: " in stdout and "code/inference.py" in stdout and "4 files" in stdout
    code, stdout, _ = _run("inspect", str(out))
    assert code == 0
    assert "manifest: 4 files match their size and sha256" in stdout
    # What the archive was checked with, recorded at build time: the interpreter and exact versions.
    assert f"checked with: Python {platform.python_version()}" in stdout
    assert f"numpy=={metadata.version('numpy')}" in stdout
    # A summary, not every pin of the environment (those stay in the manifest): no test tool is listed.
    assert "(every version: smkit-manifest.json, handler.checked_with)" in stdout
    assert f"pytest=={metadata.version('pytest')}" not in stdout
    code, stdout, _ = _run("inspect", "--no-handler-check", str(out))
    assert code == 0 and "handler:" not in stdout


def test_refusals_exit_1_with_message_on_stderr(tiny: Model) -> None:
    broken = TINY_HANDLER.replace("def predict_fn(data, model)", "def predict_fn(data)")
    (tiny.code / "inference.py").write_text(broken)
    code, stdout, stderr = _run(
        "package",
        "--code",
        str(tiny.code),
        "--artifacts",
        str(tiny.artifacts),
        "--output",
        str(tiny.out / "model.tar.gz"),
    )
    assert code == 1 and stdout == ""
    # Notes (e.g. "not vendoring wheels: the kit's image provides ...") may come first; the error is one line.
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert errors and "predict_fn: takes 1 positional parameter" in stderr
    assert tiny.outputs() == []
    code, _, stderr = _run("package", "--code", str(tiny.code), "--artifacts", str(tiny.artifacts))
    assert code == 2 and "pass --output FILE and/or --uncompressed DIR" in stderr
    code, _, stderr = _run("inspect", str(tiny.out / "absent.tar.gz"))
    assert code == 1 and "no such archive file" in stderr


def test_usage_errors_exit_2(tiny: Model) -> None:
    code, _, stderr = _run("package", "--artifacts", str(tiny.artifacts), "--output", "x.tar.gz")
    assert code == 2 and "--code" in stderr
    code, _, stderr = _run(
        "package",
        "--code",
        str(tiny.code),
        "--artifacts",
        str(tiny.artifacts),
        "--output",
        "x.tar.gz",
        "--level",
        "9",
    )
    assert code == 2 and "--level" in stderr
