"""smkit.process.free_port: one free port, a run of consecutive ones, under a bound."""

from __future__ import annotations

import socket

from smkit.process import HOST, free_port, port_taken


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def test_a_run_of_consecutive_ports_is_free() -> None:
    first = free_port(count=3)
    assert all(bindable(port) for port in (first, first + 1, first + 2))


def test_ports_below_a_bound_start_from_20000() -> None:
    first = free_port(below=32767, count=2)
    assert 20000 <= first < first + 1 < 32767
    assert bindable(first) and bindable(first + 1)


def test_port_taken_sees_a_bound_socket_and_nothing_else() -> None:
    with socket.socket() as held:
        held.bind((HOST, 0))
        port = held.getsockname()[1]
        assert port_taken(port)
    assert not port_taken(port)
