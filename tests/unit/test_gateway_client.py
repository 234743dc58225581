"""The gateway client against a real loopback gateway: discovery rules, tickets, error mapping."""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

import pytest

from controller import errors
from controller.adapters import gateway as gw
from tests.integration.fake_gateway import FakeGateway


@pytest.fixture
def fake(tmp_path: Path):
    g = FakeGateway(tmp_path / "h").start()
    yield g
    g.stop()


def session(g: FakeGateway, *, writes: bool = False, timeout: float = 5.0) -> gw.Session:
    return gw.open_session(g.home, gw.GatewayOptions(timeout=timeout), writes=writes)


def test_discovery_identify_and_single_use_tickets(fake: FakeGateway):
    endpoint = gw.discover(fake.home)
    assert endpoint.api_origin == fake.origin and endpoint.instance_id == fake.instance_id
    with session(fake) as s:
        assert s.call("groups.capabilities")["driver"] is True
        assert s.call("groups.list")["rooms"] == []
    assert fake.tickets == {}  # the ticket was consumed by the handshake
    offered = fake.handshakes[-1]
    assert offered[0] == gw.SUBPROTOCOL and offered[1].startswith(gw.TICKET_PREFIX)


def test_no_socket_is_absent_and_never_started(tmp_path: Path):
    home = tmp_path / "h"
    home.mkdir(mode=0o700)
    with pytest.raises(errors.GatewayUnavailable) as info:
        gw.discover(home)
    assert info.value.reason == "absent" and "hermes gateway run" in str(info.value)
    assert "gateway.lock" not in str(info.value)
    # A gateway.lock nobody holds was left behind by a gateway that stopped: absent, said plainly.
    lock = home / "gateway.lock"
    lock.write_text('{"pid": 999999}')
    with pytest.raises(errors.GatewayUnavailable) as info:
        gw.discover(home)
    assert info.value.reason == "absent" and "left behind" in str(info.value) and "starting" not in str(info.value)
    # A live holder (Hermes flocks it while it runs) that has no control socket yet: starting.
    with open(lock, "a+") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(errors.GatewayUnavailable) as info:
            gw.discover(home)
        assert info.value.reason == "starting" and "no gateway is running" not in str(info.value)
        assert gw.lock_held(lock) is True
    assert gw.lock_held(lock) is False  # the probe itself leaves the lock free
    assert not (home / "gateway.sock").exists()


def test_unsafe_socket_and_pointer_are_refused(fake: FakeGateway, tmp_path: Path):
    os.chmod(fake.home / "gateway.sock", 0o660)
    with pytest.raises(errors.GatewayUnavailable) as info:
        gw.discover(fake.home)
    assert info.value.reason == "unsafe_control_permissions"
    os.chmod(fake.home / "gateway.sock", 0o600)
    os.chmod(fake.home, 0o777)
    with pytest.raises(errors.GatewayUnavailable) as info:
        gw.discover(fake.home)
    assert info.value.reason == "unsafe_control_path"
    os.chmod(fake.home, 0o700)
    other = tmp_path / "p"
    other.mkdir(mode=0o700)
    pointer = other / "gateway.sock.path"
    pointer.write_text("/tmp/elsewhere/control.sock\n")
    os.chmod(pointer, 0o600)
    with pytest.raises(errors.GatewayUnavailable) as info:
        gw.discover(other)
    assert info.value.reason == "invalid_control_pointer"


def test_descriptor_rules(fake: FakeGateway):
    good = fake.descriptor()
    assert gw.validate_descriptor(good, fake.home, "x").profile_id == good["served_profiles"][0]["profile_id"]
    for change, reason in (
        ({"runtime_protocol": True}, "incompatible"),
        ({"capabilities": []}, "incompatible"),
        ({"api_origin": "http://localhost:1"}, "invalid_control_response"),
        ({"api_origin": "http://10.1.2.3:80"}, "invalid_control_response"),
        ({"served_profiles": []}, "profile_mismatch"),
        ({"state": "draining"}, "draining"),
    ):
        with pytest.raises(errors.GatewayUnavailable) as info:
            gw.validate_descriptor({**good, **change}, fake.home, "x")
        assert info.value.reason == reason, change


def test_refusals_are_typed(fake: FakeGateway):
    with session(fake) as s:
        with pytest.raises(errors.GatewayRefused) as info:
            s.call("groups.state", {"room_id": "nope"})
        assert info.value.code == 4114 and info.value.outcome == "permanent"
        fake.refuse["groups.state"] = (4114, "hosted room not found", "room_history_expired")
        with pytest.raises(errors.GatewayRefused) as info:
            s.call("groups.state", {"room_id": "nope"})
        assert info.value.reason == "room_history_expired"
        fake.too_old = True
        with pytest.raises(errors.GatewayIncompatible) as info:
            s.call("groups.capabilities")
        assert info.value.code == -32601


def test_plan_sessions_refuse_writes_locally(fake: FakeGateway):
    with session(fake) as s, pytest.raises(errors.GatewayRefused, match="read-only"):
        s.call("groups.create", {"room_id": "r1", "name": "x", "members": []})
    assert fake.calls == []


def test_lost_reply_to_a_write_is_unknown_but_a_read_is_transient(fake: FakeGateway):
    members = [{"member_id": "a", "profile": "default", "handle": "a"}]
    fake.home.joinpath("profiles", "bob").mkdir(parents=True)
    members.append({"member_id": "b", "profile": "bob", "handle": "b"})
    fake.lose_reply.add("groups.create")
    with session(fake, writes=True) as s:
        with pytest.raises(errors.GatewayOutcomeUnknown) as info:
            s.call("groups.create", {"room_id": "r1", "name": "x", "members": members})
        assert info.value.outcome == "unknown"
        assert "r1" in fake.live()  # it did happen
        fake.lose_reply.add("groups.list")
        with pytest.raises(errors.GatewayUnavailable) as read:
            s.call("groups.list")
        assert read.value.outcome == "transient"
        assert len(s.call("groups.list")["rooms"]) == 1  # reconnects with a fresh ticket


def test_timeout_reset_and_5xx(fake: FakeGateway):
    fake.delay["groups.list"] = 1.0
    with session(fake, timeout=0.3) as s:
        with pytest.raises(errors.GatewayUnavailable) as info:
            s.call("groups.list")
        assert info.value.reason in ("timeout", "connection_closed")
    fake.reset_before.add("groups.rename")
    with session(fake, writes=True) as s, pytest.raises(errors.GatewayOutcomeUnknown):
        s.call("groups.rename", {"room_id": "r1", "event_id": "e1", "name": "y"})
    fake.http_status = 503
    with session(fake) as s, pytest.raises(errors.GatewayUnavailable) as info:
        s.call("groups.list")
    assert info.value.reason == "http_5xx"


def test_bad_token_is_an_auth_error_and_never_shown(fake: FakeGateway, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GW_TOK", "secret-token-value-123")
    options = gw.GatewayOptions(url=fake.origin, token_env="GW_TOK")
    with gw.open_session(fake.home, options, writes=False) as s, pytest.raises(errors.GatewayAuthError) as info:
        s.call("groups.list")
    assert "secret-token-value-123" not in str(info.value) and "hermes gateway ticket" in str(info.value)
    ticket = fake.mint_ticket()  # what `hermes gateway ticket` prints on that machine
    monkeypatch.setenv("GW_TOK", ticket)
    options = gw.GatewayOptions(url=fake.origin, token_env="GW_TOK")
    with gw.open_session(fake.home, options, writes=False) as s:
        assert s.call("groups.list")["rooms"] == []


def test_a_single_use_ticket_serves_every_session_of_one_run(fake: FakeGateway, monkeypatch: pytest.MonkeyPatch):
    """One --gateway-token-env ticket: the run's sessions share its one connection (tickets are single-use)."""
    ticket = fake.mint_ticket()
    monkeypatch.setenv("GW_TOK", ticket)
    options = gw.GatewayOptions(url=fake.origin, token_env="GW_TOK")
    with gw.open_session(fake.home, options, writes=False) as s:
        s.call("groups.capabilities")
    with gw.open_session(fake.home, options, writes=False) as s:
        s.call("groups.list")
    with gw.open_session(fake.home, options, writes=True) as s, pytest.raises(errors.GatewayRefused):
        s.call("groups.state", {"room_id": "nope"})
    assert len(fake.handshakes) == 1  # one connection for the whole run
    # The same ticket on a second connection is refused by the gateway (single use) ...
    again = gw.GatewayOptions(url=fake.origin, token_env="GW_TOK")
    with gw.open_session(fake.home, again, writes=False) as s, pytest.raises(errors.GatewayAuthError):
        s.call("groups.list")
    # ... and once the run's connection is gone, the run says why it cannot open another one.
    options.release()
    with gw.open_session(fake.home, options, writes=False) as s, pytest.raises(errors.GatewayAuthError) as info:
        s.call("groups.list")
    assert "already used by this run" in str(info.value) and ticket not in str(info.value)


def test_tickets_expire(fake: FakeGateway, monkeypatch: pytest.MonkeyPatch):
    fake.ticket_ttl = 0.2
    monkeypatch.setenv("GW_TOK", fake.mint_ticket())
    time.sleep(0.4)
    options = gw.GatewayOptions(url=fake.origin, token_env="GW_TOK")
    with gw.open_session(fake.home, options, writes=False) as s, pytest.raises(errors.GatewayAuthError):
        s.call("groups.list")
    with session(fake) as s:  # discovery mints each ticket right before its connection
        assert s.call("groups.list")["rooms"] == []


def test_a_refused_ticket_keeps_the_gateways_reason_and_says_the_fix(fake: FakeGateway):
    """The gateway issues tickets only for a private home (mode & 0o077 == 0, no symlink on the path)."""
    os.chmod(fake.home, 0o750)
    with session(fake) as s, pytest.raises(errors.GatewayUnavailable) as info:
        s.call("groups.list")
    text = str(info.value)
    assert "authenticated runtime bootstrap unavailable" in text and f"chmod 700 {fake.home}" in text
    assert "restart the gateway" not in text
    os.chmod(fake.home, 0o700)
    with session(fake) as s:
        assert s.call("groups.list")["rooms"] == []


def test_a_gateway_restarted_between_identify_and_ticket_is_found_again(fake: FakeGateway):
    endpoint = gw.discover(fake.home)
    fake.instance_id = "inst-restarted"  # the next identify answers another instance
    with gw.Session(gw.ws_url(endpoint.api_origin), gw._Fresh(endpoint, 5.0), 5.0) as s:
        assert s.call("groups.list")["rooms"] == []


def test_nothing_listening_is_transient(tmp_path: Path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = gw.GatewayOptions(url=f"http://127.0.0.1:{port}", token_env="GW_NONE", timeout=2)
    os.environ.setdefault("GW_NONE", "x")
    with gw.open_session(tmp_path, options, writes=True) as s, pytest.raises(errors.GatewayUnavailable) as info:
        s.call("groups.create", {})
    assert info.value.outcome == "transient"  # never connected: nothing was sent


def test_ws_url_forms():
    assert gw.ws_url("http://127.0.0.1:9119") == "ws://127.0.0.1:9119/api/ws"
    assert gw.ws_url("https://gw.example:443/") == "wss://gw.example:443/api/ws"
    assert gw.ws_url("ws://127.0.0.1:1/custom") == "ws://127.0.0.1:1/custom"
    with pytest.raises(errors.GatewayIncompatible):
        gw.ws_url("ftp://x")
