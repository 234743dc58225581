"""`export` includes the rooms of a reachable gateway (read-only), and says when it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.fake_gateway import FakeGateway
from tests.integration.helpers import apply, hermes_fleet, plan_json, write_fleet

BOTS = [{"name": n} for n in ("alice", "bob", "carol")]


@pytest.fixture
def gateway(home: Path):
    gw = FakeGateway(home).start()
    yield gw
    gw.stop()


def test_export_writes_the_live_rooms_and_the_export_plans_no_change(home: Path, manifests: Path, gateway, tmp_path):
    rooms = [
        {"name": "Ops", "members": ["alice", "bob"]},
        {"name": "Review", "members": ["alice", "bob", "carol"], "who_answers": "lead:carol"},
    ]
    source = write_fleet(manifests, BOTS, rooms=rooms)
    assert apply(source, home).code == 0
    writes_before = len(gateway.writes)

    target = tmp_path / "export.yaml"
    run = hermes_fleet("export", "--home", home, "--fleet", "acme", "-o", target)
    assert run.code == 0, run.text
    text = target.read_text()
    assert "name: Review" in text and "who_answers: lead:carol" in text and "name: Ops" in text
    assert len(gateway.writes) == writes_before  # export never writes to the gateway
    report = plan_json(target, home)
    assert report["summary"]["changes_pending"] is False, [o for o in report["objects"] if o["fields"]]


def test_export_without_a_gateway_warns_and_still_exports_the_bots(home: Path, manifests: Path, tmp_path):
    assert apply(write_fleet(manifests, BOTS), home).code == 0
    run = hermes_fleet("export", "--home", home, "--fleet", "acme")
    assert run.code == 0 and "name: alice" in run.out
    assert "rooms were not exported" in run.err
    quiet = hermes_fleet("export", "--home", home, "--fleet", "acme", "--no-rooms")
    assert quiet.code == 0 and "rooms were not exported" not in quiet.err
