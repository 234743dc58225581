"""Webhooks bounded: a receiver that trickles, one that streams a huge body, one that is down at
exit (the outbox sends it again), and the `--host` name in every event.

Real loopback servers (raw sockets where HTTP itself is the attack), the real Notifier and the
real `watch` / `apply --notify` processes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import outbox, webhooks
from tests.integration.helpers import hermes_fleet
from tests.watch.harness import cli
from tests.watch.test_notifications import TOKEN, Lines, Receiver, event, manifest_with_hooks


class Raw:
    """A loopback server answering every connection with `answer(conn)` (a raw socket)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.sent = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hooks/{TOKEN}"

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)
                self.answer(self, conn)
            except OSError:
                return

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[Any]:
    made: list[Raw] = []

    def make(answer: Any) -> Raw:
        made.append(Raw(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def receivers() -> Iterator[Any]:
    made: list[Receiver] = []

    def make(mode: str = "ok") -> Receiver:
        made.append(Receiver(mode))
        return made[-1]

    yield make
    for r in made:
        r.close()


def trickle(server: Raw, conn: socket.socket) -> None:
    """A header byte every 0.2 s, forever: each read is answered well within any per-read timeout."""
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
        if server.closed.is_set():
            return
        server.send(conn, bytes([byte]))
        time.sleep(0.2)


def firehose(server: Raw, conn: socket.socket) -> None:
    """200 OK, then an endless chunked body."""
    server.send(conn, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
    while not server.closed.is_set() and server.sent < 4 << 30:
        server.send(conn, chunk)


def test_a_trickling_receiver_is_cut_at_the_attempt_deadline(raw) -> None:
    server = raw(trickle)
    log = Lines()
    notifier = webhooks.Notifier(log, retries=0)
    notifier.configure([webhooks.Target("slow", server.url, timeout=1.0)])
    started = time.monotonic()
    notifier.post(event())
    assert notifier.close(10)
    took = time.monotonic() - started
    assert took < 3, f"one attempt took {took:.1f}s (the receiver never stops sending)"
    failed = log.named("notify_failed")
    assert failed and failed[0]["error"] == "no answer within 1s", log.text()
    assert TOKEN not in log.text()


def test_a_huge_response_body_is_never_read(raw) -> None:
    server = raw(firehose)
    log = Lines()
    notifier = webhooks.Notifier(log, retries=0)
    notifier.configure([webhooks.Target("hose", server.url, timeout=5.0)])
    tracemalloc.start()
    try:
        notifier.post(event())
        assert notifier.close(10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert log.named("notify_sent")[0]["status"] == "200", log.text()
    assert peak < 8 << 20, f"{peak} bytes allocated while the receiver streamed"
    time.sleep(0.3)
    assert server.sent < 64 << 20, f"the receiver got {server.sent} bytes out before we closed"


def test_an_event_not_delivered_stays_in_the_outbox_and_goes_out_from_the_next_notifier(tmp_path: Path) -> None:
    home = tmp_path / "hermes"
    down = Receiver()
    url = down.url
    down.close()  # refused
    log = Lines()
    first = webhooks.Notifier(log, retries=1, backoff=0.05, outbox=outbox.Outbox(home, log))
    first.configure([webhooks.Target("ops", url)])
    sent = webhooks.Event("stalled", "error", "acme", "invalid", {}, "2026-01-01T00:00:00+00:00", id="a" * 32)
    first.post(sent)
    assert first.close(10)
    assert log.named("notify_failed")[-1]["kept"] == "outbox"
    kept = home / ".hermes-fleet" / "outbox" / "ops" / f"{'a' * 32}.json"
    assert kept.is_file() and oct(kept.stat().st_mode & 0o777) == "0o600"
    assert TOKEN not in kept.read_text() and "127.0.0.1" not in kept.read_text()

    up = Receiver()
    try:
        second = webhooks.Notifier(log, outbox=outbox.Outbox(home, log))
        second.configure([webhooks.Target("ops", up.url)])
        assert second.close(10)
        assert [(b["event"], b["id"]) for b in up.wait(1)] == [("stalled", "a" * 32)]
        assert not kept.exists(), "delivered: gone from the outbox"
        third = webhooks.Notifier(log, outbox=outbox.Outbox(home, log))
        third.configure([webhooks.Target("ops", up.url)])
        assert third.close(10) and len(up.bodies) == 1, "sent once"
    finally:
        up.close()


def test_a_4xx_leaves_nothing_in_the_outbox_and_a_repeat_id_is_queued_once(tmp_path: Path, receivers) -> None:
    home = tmp_path / "hermes"
    gone, flaky = receivers("gone"), receivers("fail:1")
    log = Lines()
    notifier = webhooks.Notifier(log, backoff=0.3, outbox=outbox.Outbox(home, log))
    notifier.configure([webhooks.Target("gone", gone.url), webhooks.Target("flaky", flaky.url)])
    once = webhooks.Event("drift", "warning", "acme", "x", {}, "", id="b" * 32)
    notifier.post(once)
    notifier.post(once)  # while the first is between its retries: not queued again
    assert notifier.close(10)
    assert not list((home / ".hermes-fleet" / "outbox").rglob("*.json"))
    assert [b["id"] for b in flaky.bodies] == ["b" * 32] and flaky.attempts == 2
    assert gone.attempts == 1


@pytest.mark.parametrize("content", [b"{", b"[" * 100_000, b'{"queued": 1, "event": {"kind": 3}}', b"x" * (300 * 1024)])
def test_a_broken_outbox_file_is_dropped(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "hermes" / ".hermes-fleet" / "outbox" / "ops"
    folder.mkdir(parents=True)
    (folder / f"{'c' * 32}.json").write_bytes(content)
    log = Lines()
    assert outbox.Outbox(tmp_path / "hermes", log).pending() == {}
    assert log.named("notify_dropped") and not list(folder.iterdir())


def test_watch_resends_at_the_next_start_what_it_could_not_deliver(user: Path, manifests: Path, home: Path) -> None:
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}}]
    manifest_with_hooks(manifests, [{"name": "Not A Name"}], hooks)
    down = Receiver()
    dead = down.url
    down.close()
    first = cli(user, "watch", "--once", "-f", manifests, "--home", home, "--notify-timeout", "1s", OPS_HOOK=dead)
    assert first.returncode == 2, first.stdout + first.stderr  # stalled: nothing valid to apply
    # Invalid manifests configure no webhook; a valid fleet whose secret is missing does.
    manifest_with_hooks(manifests, [{"name": "alpha", "env": {"OPENROUTER_API_KEY": {"from_env": "NOPE_NOT_SET"}}}], hooks)
    second = cli(user, "watch", "--once", "-f", manifests, "--home", home, "--notify-timeout", "1s", OPS_HOOK=dead)
    assert second.returncode == 1, second.stdout + second.stderr
    kept = list((home / ".hermes-fleet" / "outbox" / "ops").glob("*.json"))
    assert len(kept) == 1, second.stdout
    stored = json.loads(kept[0].read_text())["event"]
    assert stored["kind"] == "apply-failed"

    up = Receiver()
    try:
        third = cli(user, "watch", "--once", "-f", manifests, "--home", home, "--notify-timeout", "5s", OPS_HOOK=up.url)
        assert third.returncode == 1, third.stdout + third.stderr
        bodies = up.wait(1)
        assert [(b["event"], b["id"]) for b in bodies] == [("apply-failed", stored["id"])], bodies
        assert "notify_resend" in third.stdout
        assert not list((home / ".hermes-fleet" / "outbox").rglob("*.json"))
        assert TOKEN not in first.stdout + second.stdout + third.stdout
    finally:
        up.close()


def test_the_host_field_is_the_host_option(spawn, manifests: Path, home: Path, receivers, monkeypatch) -> None:
    r = receivers()
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}}]
    unset = {"OPENROUTER_API_KEY": {"from_env": "NOT_SET_ANYWHERE"}}
    manifest = manifest_with_hooks(manifests, [{"name": "alpha", "env": unset}], hooks)
    monkeypatch.setenv("OPS_HOOK", r.url)
    run = hermes_fleet("apply", "-f", manifest, "--home", home, "--notify", "--host", "office-7")
    assert run.code == 1, run.text
    assert r.wait(1)[0]["host"] == "office-7"
    watch = spawn("-f", manifests, "--home", home, "--host", "office-7", "--interval", "30", OPS_HOOK=r.url)
    watch.wait_for("reconciled", timeout=30, result="partial")
    bodies = r.wait(2)
    assert bodies[1]["event"] == "apply-failed" and bodies[1]["host"] == "office-7", bodies
    assert len({b["id"] for b in bodies}) == 2
    watch.stop()
