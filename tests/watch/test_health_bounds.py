"""The health server is bounded: an idle client is dropped after the read timeout, and past the
connection cap a new connection is closed at once instead of holding one more thread (issue 27:
369 idle connections held 373 threads). A real server on loopback, real sockets."""

from __future__ import annotations

import http.client
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.adapters.sources import LocalSource
from controller.engine import healthserver, watching


@pytest.fixture
def start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """start(read_timeout) -> a health server allowing 4 connections at once."""
    servers: list[Any] = []

    def _start(read_timeout: float) -> Any:
        monkeypatch.setattr(healthserver, "HEALTH_READ_TIMEOUT", read_timeout)
        monkeypatch.setattr(healthserver, "HEALTH_CONNECTIONS", 4)
        reconciler = watching.Reconciler(
            tmp_path, LocalSource([str(tmp_path)], recursive=False), watching.Options(), watching.Log("text", io.StringIO())
        )
        servers.append(healthserver.start_health(0, reconciler, watching.Log("text", io.StringIO())))
        return servers[-1]

    yield _start
    for server in servers:
        server.shutdown()
        server.server_close()


def _idle(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _healthz(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        assert json.loads(response.read())["last_result"] == "starting"
        return response.status
    finally:
        conn.close()


def _handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("Thread-") and "process_request_thread" in t.name)


def test_an_idle_client_is_dropped_after_the_read_timeout(start: Any) -> None:
    port = start(0.5).server_address[1]
    sock = _idle(port)
    begun = time.monotonic()
    assert _closed_within(sock, 3.0), "an idle connection was kept past the read timeout"
    assert time.monotonic() - begun < 2.5
    sock.close()
    assert _healthz(port) == 200


def test_connections_past_the_cap_are_closed_and_hold_no_thread(start: Any) -> None:
    port = start(3.0).server_address[1]  # the four held ones keep their slots while the rest are tried
    held = [_idle(port) for _ in range(4)]
    time.sleep(0.1)  # the four are being served (each in its thread, waiting for a request line)
    serving = _handler_threads()
    assert serving >= 4
    extra = [_idle(port) for _ in range(20)]
    assert all(_closed_within(sock, 1.0) for sock in extra[:5]), "a connection past the cap was kept open"
    assert _handler_threads() == serving
    for sock in held + extra:
        sock.close()
    time.sleep(0.3)  # closed by the client: their handlers end and free the slots
    assert _healthz(port) == 200
