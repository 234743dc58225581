"""Seating a bot from another machine: two loopback gateways, one per scratch home (docs/rooms.md).

`office` owns the room; `spark` runs the member bot. Each machine runs hermes-fleet on its own
slice of one fleet (`--host`): spark converges the bot (with the API key the fleet's peer key
names, and its RoomLink endpoint) and checks that its gateway can serve the seat; office asks
spark's API server for an invitation with that peer key, creates the room with the member pinned
to spark's catalog, and registers the grant (`groups.peer.register`, which probes spark with it).
Both gateways are real servers in this process (tests/integration/fake_gateway.py); nothing of the
controller is mocked. Grants and keys never appear in output or in the inventory.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from controller.core import rooms as rooms_mod
from tests.integration.fake_gateway import FakeGateway
from tests.integration.helpers import hermes_fleet, plan_json, write_fleet

KEY = "peer-key-SECRETVALUE-5f1e2d3c4b"


@pytest.fixture
def office(home: Path):
    gw = FakeGateway(home).start()
    yield gw
    gw.stop()


@pytest.fixture
def spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPARK_KEY", KEY)
    gw = FakeGateway(tmp_path / "spark-home").start(api_server=True)
    yield gw
    gw.stop()


def team(manifests: Path, spark: FakeGateway, *, room: dict[str, Any] | None = None, key_env: str = "SPARK_KEY") -> Path:
    bots = [
        {"name": "alice", "host": "office"},
        {"name": "bob", "host": "office"},
        {"name": "carol", "host": "office"},
        {
            "name": "reviewer",
            "host": "spark",
            "env": {"API_SERVER_KEY": {"from_env": key_env}},
            "config": {"gateway.room_link_url": spark.api_url},
        },
    ]
    review = room or {"name": "Review", "host": "office", "members": ["alice", "bob", "spark/reviewer"]}
    return write_fleet(
        manifests,
        bots,
        rooms=[review],
        peers=[{"name": "spark", "url": spark.api_url, "key": {"from_env": "SPARK_KEY"}, "host": "office"}],
    )


def run(verb: str, fleet: Path, home: Path, host: str, *flags: str):
    return hermes_fleet(verb, "-f", fleet, "--home", home, "--host", host, *flags)


def room_object(fleet: Path, home: Path, host: str) -> dict[str, Any]:
    data = plan_json(fleet, home, "--host", host)
    return next(o for o in data["objects"] if o["kind"] == "room" and o["name"] == "Review")


def only_room(gw: FakeGateway) -> dict[str, Any]:
    (room,) = gw.live().values()
    return room


def inventory_text(home: Path) -> str:
    return "".join(p.read_text() for p in (home / ".hermes-fleet" / "inventory").glob("*.json"))


def test_a_bot_on_another_machine_is_seated_by_both_halves(home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway):
    fleet = team(manifests, spark)
    # The member's machine: the bot, its API key and RoomLink endpoint; the seat is its half.
    first = run("apply", fleet, spark.home, "spark")
    assert first.code == 0, first.text
    seat = room_object(fleet, spark.home, "spark")
    assert (seat["action"], seat["reason_code"]) == ("no-op", "remote-seat")
    assert "host 'office'" in seat["reason"] and spark.api_url in seat["reason"]
    assert spark.writes == []  # the member's side never writes to its gateway

    # The room's machine: invitation from spark, create with the pinned peer target, register.
    applied = run("apply", fleet, home, "office")
    assert applied.code == 0, applied.text
    room = only_room(office)
    peer = next(m for m in room["members"] if m["target"]["kind"] == "peer")
    assert peer["member_id"] == "spark.reviewer" and peer["profile"] == "reviewer" and peer["handle"] == "reviewer"
    assert peer["target"]["installation_id"] == spark.install_id and peer["target"]["peer_id"] == "spark"
    assert ("POST", "/v1/room-members/invitations") in spark.http_calls
    assert ("GET", "/v1/room-members/capabilities") in spark.http_calls  # register probed spark with the grant
    link = office.links[(room["room_id"], "spark.reviewer")]
    assert link["target_url"] == spark.api_url and link["status"] == "ready"
    fingerprint = hashlib.sha256(link["grant"].encode()).hexdigest()
    entry = json.loads(inventory_text(home))["objects"]["room/Review"]
    assert entry["seats"]["spark/reviewer"]["grant_sha256"] == fingerprint
    assert link["grant"] not in applied.text + inventory_text(home) and KEY not in applied.text + inventory_text(home)
    assert rooms_mod.in_family(rooms_mod.base_room_id("acme", "Review"), room["room_id"])

    # Both machines are converged.
    assert run("plan", fleet, home, "office", "--detailed-exitcode").code == 0
    assert run("plan", fleet, spark.home, "spark", "--detailed-exitcode").code == 0


def test_seat_renewal_and_a_lost_register_reply(home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway):
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0
    room_id = only_room(office)["room_id"]
    old = office.links[(room_id, "spark.reviewer")]["grant"]
    # The worker found the grant unusable: the plan re-seats the member, the apply asks spark again
    # and registers against the current fingerprint; spark revokes the superseded grant.
    office.route_status(room_id, "spark.reviewer", "needs_reauthorization")
    seat = {f["field"]: f for f in room_object(fleet, home, "office")["fields"]}["seat:spark/reviewer"]
    assert seat["old"] == "needs reauthorization"
    office.lose_reply.add("groups.peer.register")  # registered, the reply lost: settled by reading the route
    applied = run("apply", fleet, home, "office")
    assert applied.code == 0, applied.text
    new = office.links[(room_id, "spark.reviewer")]
    assert new["grant"] != old and new["status"] == "ready"
    register = [p for m, p in office.calls if m == "groups.peer.register"][-1]
    assert register["expected_grant_sha256"] == hashlib.sha256(old.encode()).hexdigest()
    # The superseded grant, exactly (register_peer_route: revoke_grant_exact); the new one lives.
    assert [route for route, _ in spark.revocations] == ["revoke-exact"]
    assert not spark.grant_alive(old) and spark.grant_alive(new["grant"])
    entry = json.loads(inventory_text(home))["objects"]["room/Review"]
    assert entry["seats"]["spark/reviewer"]["grant_sha256"] == hashlib.sha256(new["grant"].encode()).hexdigest()
    assert run("plan", fleet, home, "office", "--detailed-exitcode").code == 0


def test_what_the_contract_does_not_allow_is_said_with_the_step(
    home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway
):
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0
    # Members of a room with peers cannot change (groups.members.update refuses peers).
    bigger = team(
        manifests, spark, room={"name": "Review", "host": "office", "members": ["alice", "bob", "carol", "spark/reviewer"]}
    )
    change = room_object(bigger, home, "office")
    assert (change["action"], change["reason_code"]) == ("error", "peer-members")
    assert "room_membership_peer_unsupported" in change["reason"] and "apply --prune" in change["reason"]
    writes = len(office.writes)
    assert run("apply", bigger, home, "office").code == 1 and len(office.writes) == writes
    # The way out it names: a new name without renamed_from, then --prune disbands the old room
    # (its peer route revoked on spark).
    renamed = team(
        manifests, spark, room={"name": "Review 2", "host": "office", "members": ["alice", "bob", "carol", "spark/reviewer"]}
    )
    assert run("apply", renamed, home, "office", "--prune").code == 0
    (room,) = office.live().values()
    assert room["name"] == "Review 2" and len(room["members"]) == 4
    # The old room's grant, revoked by its disband: scope-wide (revoke_room_routes), as a disband should.
    assert [route for route, _ in spark.revocations] == ["revoke"]


def test_a_disband_waits_for_the_member_machine(home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway):
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0
    spark.stop_api()  # spark unreachable: the gateway cannot revoke the grant, so it keeps the room
    gone = write_fleet(manifests, [{"name": "alice", "host": "office"}, {"name": "bob", "host": "office"}])
    pruned = run("apply", gone, home, "office", "--prune", "--yes")  # carol: 1 of 3 bots, above the guard
    assert pruned.code == 1 and "5114" in pruned.text and "reachable" in pruned.text
    assert len(office.live()) == 1


def test_the_wrong_key_and_a_member_machine_that_cannot_serve(
    home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("OTHER_KEY", "another-key-SECRETVALUE-99")
    fleet = team(manifests, spark, key_env="OTHER_KEY")  # the bot's API key is not the peer key
    assert run("apply", fleet, spark.home, "spark").code == 0
    refused = run("apply", fleet, home, "office")
    assert refused.code == 1 and "refused the peer key" in refused.text and "API_SERVER_KEY" in refused.text
    assert office.live() == {} and KEY not in refused.text  # nothing half-made
    # The member's side says what it lacks, with the fix, on its own machine.
    fleet = team(manifests, spark)
    spark.durable_runs = False
    seat = room_object(fleet, spark.home, "spark")
    assert (seat["action"], seat["reason_code"]) == ("error", "gateway-unsupported")
    assert "durable_run_storage_required" in seat["reason"] and "API_SERVER_ENABLED" in seat["reason"]
    spark.durable_runs = True
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0


def test_the_room_side_first_then_the_member_side(home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway):
    """Either machine may run first: until spark has the bot, office reports why and changes nothing."""
    fleet = team(manifests, spark)
    early = run("apply", fleet, home, "office")
    assert early.code == 1 and "spark" in early.text and office.live() == {}
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0
    assert run("plan", fleet, home, "office", "--detailed-exitcode").code == 0


def test_the_team_example_applies_on_both_machines(
    home: Path, tmp_path: Path, office: FakeGateway, spark: FakeGateway, monkeypatch: pytest.MonkeyPatch
):
    """examples/team, as shipped, against a running gateway on each machine: exit 0 on both.
    Only its placeholder address of spark is replaced by the loopback one of this test."""
    example = tmp_path / "team"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "team", example)
    for path in example.rglob("*.yaml"):
        path.write_text(path.read_text().replace("https://spark.lan:8642", spark.api_url))
    for name, value in {
        "OPENROUTER_API_KEY": "sk-or-test",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "GITHUB_MCP_AUTHORIZATION": "Bearer ghp-test",
        "CRM_API_TOKEN": "crm-test",
        "SPARK_PEER_KEY": KEY,
    }.items():
        monkeypatch.setenv(name, value)

    def team_run(verb: str, where: Path, host: str, *flags: str):
        return hermes_fleet(verb, "-R", "-f", example, "--home", where, "--host", host, *flags)

    spark_apply = team_run("apply", spark.home, "spark")
    assert spark_apply.code == 0, spark_apply.text
    office_apply = team_run("apply", home, "office")
    assert office_apply.code == 0, office_apply.text
    names = {r["name"]: r for r in office.live().values()}
    assert set(names) == {"Review", "Drafts", "Client Desk"}
    assert any(m["target"]["kind"] == "peer" for m in names["Review"]["members"])
    assert names["Drafts"]["responder_policy"]["default_responder"] == "leader"
    assert team_run("plan", home, "office", "--detailed-exitcode").code == 0
    assert team_run("plan", spark.home, "spark", "--detailed-exitcode").code == 0


def test_a_grant_issued_for_a_create_that_failed_is_revoked(home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway):
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    office.refuse["groups.create"] = (4110, "This host has too many active Group Chats. Delete one and try again.", None)
    failed = run("apply", fleet, home, "office")
    assert failed.code == 1 and "too many active Group Chats" in failed.text
    # Nothing half-made; the unused grant revoked, exactly that one.
    assert office.live() == {} and [route for route, _ in spark.revocations] == ["revoke-exact"]
    assert run("apply", fleet, home, "office").code == 0


def invitations(spark: FakeGateway) -> int:
    return spark.http_calls.count(("POST", "/v1/room-members/invitations"))


def past_retry(home: Path) -> None:
    """Time passes beyond the seat's backoff (the inventory's retry_after, recorded by apply)."""
    for path in (home / ".hermes-fleet" / "inventory").glob("*.json"):
        data = json.loads(path.read_text())
        for seat in data.get("objects", {}).get("room/Review", {}).get("seats", {}).values():
            if "retry_after" in seat:
                seat["retry_after"] = 0
        path.write_text(json.dumps(data))


def test_a_refused_re_seat_keeps_the_live_grant_and_a_later_apply_seats_the_bot(
    home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway
):
    """spark implements the real scope-wide `/grants/revoke`: revoking the refused grant that way
    would kill the grant the room still uses. Only that grant is retired (`/grants/revoke-exact`)."""
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    assert run("apply", fleet, home, "office").code == 0
    room_id = only_room(office)["room_id"]
    live = office.links[(room_id, "spark.reviewer")]["grant"]
    office.route_status(room_id, "spark.reviewer", "needs_reauthorization")
    office.refuse["groups.peer.register"] = (5120, "peer route changed during reconnect", None)
    refused = run("apply", fleet, home, "office")
    assert refused.code == 1
    assert "room/Review: pending: remote member spark/reviewer is not seated" in refused.text
    assert "peer route changed during reconnect" in refused.text and "tried again after" in refused.text
    assert spark.grant_alive(live) and office.links[(room_id, "spark.reviewer")]["grant"] == live
    assert [route for route, _ in spark.revocations] == ["revoke-exact"]  # the refused grant, only
    # Until the backoff ends, the plan says why the seat waits and apply asks spark for nothing.
    change = room_object(fleet, home, "office")
    assert (change["action"], change["reason_code"]) == ("error", "gateway-pending")
    assert change["reason"].startswith("pending: remote member spark/reviewer is not seated")
    asked = invitations(spark)
    assert run("apply", fleet, home, "office").code == 1 and invitations(spark) == asked
    # Once the backoff is over and the gateway accepts it, the bot is seated.
    past_retry(home)
    assert run("apply", fleet, home, "office").code == 0
    new = office.links[(room_id, "spark.reviewer")]["grant"]
    assert new != live and spark.grant_alive(new) and not spark.grant_alive(live)
    seat = json.loads(inventory_text(home))["objects"]["room/Review"]["seats"]["spark/reviewer"]
    assert "pending" not in seat and seat["grant_sha256"] == hashlib.sha256(new.encode()).hexdigest()
    assert run("plan", fleet, home, "office", "--detailed-exitcode").code == 0


def test_a_room_whose_remote_seat_is_refused_is_kept_and_reported_pending(
    home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway
):
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    office.refuse["groups.peer.register"] = (5120, "peer room authorization failed (HTTP 403)", None)
    first = run("apply", fleet, home, "office")
    assert first.code == 1 and "not seated" in first.text and "HTTP 403" in first.text
    room = only_room(office)  # the room exists and is recorded: no second room later
    entry = json.loads(inventory_text(home))["objects"]["room/Review"]
    assert entry["room_id"] == room["room_id"] and entry["seats"]["spark/reviewer"]["attempts"] == 1
    assert (room["room_id"], "spark.reviewer") not in office.links
    past_retry(home)
    assert run("apply", fleet, home, "office").code == 0
    assert len(office.live()) == 1 and office.writes.count("groups.create") == 1
    assert office.links[(room["room_id"], "spark.reviewer")]["status"] == "ready"
    assert run("plan", fleet, home, "office", "--detailed-exitcode").code == 0


def test_seats_are_refused_on_a_gateway_without_grant_fingerprints(
    home: Path, manifests: Path, office: FakeGateway, spark: FakeGateway
):
    """Without `peer_route_grant_fingerprint` a lost register reply can never be settled and a
    renewal cannot be fenced: the room is not created, spark is not asked, and the fix is named."""
    fleet = team(manifests, spark)
    assert run("apply", fleet, spark.home, "spark").code == 0
    office.features.remove("peer_route_grant_fingerprint")
    change = room_object(fleet, home, "office")
    assert (change["action"], change["reason_code"]) == ("error", "gateway-unsupported")
    assert "peer_route_grant_fingerprint" in change["reason"] and "hermes update" in change["reason"]
    assert run("apply", fleet, home, "office").code == 1
    assert office.writes == [] and invitations(spark) == 0
