"""Fixtures every test folder shares: the session's one moto server (the only emulated AWS) and the AWS
variables that point boto3 and child processes at it. Tests wait with ``waiting.wait_until``.

At the end of a run, the tests that used the most CPU are listed (``CPU_REPORT_COUNT``): the CPU seconds
of the test process while each test's setup, call and teardown ran, plus those of the child processes it
waited for (``os.times``). With pytest-xdist each worker measures its own tests and sends the number with
the test's report (``user_properties``); the controller adds the phases up and prints the list.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Generator, Iterator

import pytest

from smkit.emulator.server import MotoServer


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
    terminalreporter.write_line(f"{sum(_cpu_by_test.values()):8.2f} s  all {len(_cpu_by_test)} tests")
