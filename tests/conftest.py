"""Fixtures every test folder shares: the session's one moto server (the only emulated AWS) and the AWS
variables that point boto3 and child processes at it. Tests wait with ``waiting.wait_until``.

At the end of a run, the tests that used the most CPU are listed (``CPU_REPORT_COUNT``): the CPU seconds
of the test process while each test's setup, call and teardown ran, plus those of the child processes it
waited for (``os.times``). With pytest-xdist each worker measures its own tests and sends the number with
the test's report (``user_properties``); the controller adds the phases up and prints the list, then the
sums by folder.

The tests of the heavy folders (real framework models, the vLLM engine) are marked ``frameworks``:
``make test`` leaves them to ``make test-frameworks``.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Generator, Iterator

import pytest

from smkit.emulator.moto_server import MotoServer


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """moto's real server on 127.0.0.1 with smkit's repairs, for the whole session (one per xdist worker).

    Tests share it, so each uses names of its own (buckets, stacks, parameters) and checks only what it
    created. Its request log is in the session's temporary folder.
    """
    with MotoServer.start(log_path=tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture()
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """The session's moto server, with this test's environment pointing boto3 (and children) at it."""
    for key, value in moto_server.environment().items():
        monkeypatch.setenv(key, value)
    return moto_server


@pytest.fixture()
def validated_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CDK apps this test runs as child processes skip aws-cdk-lib's built-in CloudFormation validation.

    For tests whose subject is a deploy, a release, a rollback or the demo of a config in config/, whose
    templates tests/stacks synthesizes with that validation (and cdk-nag) on: each app run here started the
    validation's WebAssembly engine again, 8-9 s of CPU per run (release flow: 77 s of CPU with it, 48 s
    without). ``CDK_VALIDATION=false`` is aws-cdk-lib's own switch, read when the app synthesizes; cdk-nag
    still runs. This process's own jsii kernel is started first, with the variable unset, so the synths
    it runs keep the validation.
    """
    import aws_cdk  # noqa: F401  (loading the assembly starts this worker's kernel, if it is not running)

    monkeypatch.setenv("CDK_VALIDATION", "false")


# -- the heavy folders ---------------------------------------------------------------------------------------
# Real framework models and the vLLM engine, end to end: `make test-frameworks` runs them (CI runs it after
# `make test`), `make test` the rest (pytest -m "not frameworks"); plain `pytest` runs both.
FRAMEWORK_FOLDERS = ("frameworks", "tfs", "llm")
_TESTS = os.path.dirname(os.path.abspath(__file__))


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = os.path.relpath(str(item.path), _TESTS).split(os.sep, 1)[0]
        if folder in FRAMEWORK_FOLDERS:
            item.add_marker(pytest.mark.frameworks)


# -- collection -------------------------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """pytest's rewritten test modules are cached as .pyc (``__pycache__/*-pytest-*.pyc``) even where
    PYTHONDONTWRITEBYTECODE is set (the image, many CI machines): without the cache every xdist worker
    rewrote and compiled every test module at each run (4 s of CPU per worker). Only while collecting: the
    tests themselves import modules from temporary folders, which stay as they are."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = before


# -- CPU seconds per test ----------------------------------------------------------------------------------
CPU_REPORT_COUNT = 20
CPU_PROPERTY = "cpu_seconds"
_PHASE_START = pytest.StashKey[float]()
_cpu_by_test: defaultdict[str, float] = defaultdict(float)


def _cpu_now() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _timed(item: pytest.Item) -> Generator[None, object, object]:
    item.stash[_PHASE_START] = _cpu_now()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _timed(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _timed(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _timed(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    start = item.stash.get(_PHASE_START, None)
    if start is not None:
        report.user_properties.append((CPU_PROPERTY, _cpu_now() - start))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == CPU_PROPERTY:
            _cpu_by_test[report.nodeid] += float(value)  # type: ignore[arg-type]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _cpu_by_test:
        return
    slowest = sorted(_cpu_by_test.items(), key=lambda item: item[1], reverse=True)[:CPU_REPORT_COUNT]
    terminalreporter.section(
        f"CPU seconds of the {len(slowest)} costliest tests (with the children they waited for)"
    )
    for nodeid, seconds in slowest:
        terminalreporter.write_line(f"{seconds:8.2f} s  {nodeid}")
    by_folder: defaultdict[str, float] = defaultdict(float)
    for nodeid, seconds in _cpu_by_test.items():
        by_folder[nodeid.split("::")[0].rsplit("/", 1)[0]] += seconds
    shown = ", ".join(
        f"{folder} {seconds:.0f} s" for folder, seconds in sorted(by_folder.items(), key=lambda i: -i[1])
    )
    terminalreporter.write_line(f"by folder: {shown}")
    terminalreporter.write_line(f"{sum(_cpu_by_test.values()):8.2f} s  all {len(_cpu_by_test)} tests")
