"""Rooms converge onto a gateway over `groups.*` JSON-RPC (docs/rooms.md).

A real loopback gateway (tests/integration/fake_gateway.py: a WebSocket server and an AF_UNIX
control socket in the test process) holds the rooms; the CLI runs in-process against a real
Hermes home in a temporary folder. Nothing of the controller is mocked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.adapters.profilemeta import ProfileMeta
from controller.core import rooms as rooms_mod
from tests.integration.fake_gateway import FakeGateway
from tests.integration.helpers import apply, hermes_fleet, plan, plan_json, profile, read_yaml, write_fleet

BOTS = [{"name": n} for n in ("alice", "bob", "carol")]
TOKEN = "tok-SECRETVALUE-5a6b7c"


@pytest.fixture
def gateway(home: Path):
    gw = FakeGateway(home).start()
    yield gw
    gw.stop()


def fleet(manifests: Path, rooms: list[dict[str, Any]], bots: list[dict[str, Any]] | None = None) -> Path:
    return write_fleet(manifests, bots if bots is not None else BOTS, rooms=rooms)


def groups(home: Path, bot: str) -> tuple[list[str], Any]:
    path = profile(home, bot) / "profile.yaml"
    data = (read_yaml(path) if path.exists() else None) or {}
    record = (data.get("ui_meta") or {}).get("hermes-bots") or {}
    return record.get("groups"), record.get("group")


def only_room(gw: FakeGateway) -> dict[str, Any]:
    live = gw.live()
    assert len(live) == 1, live
    return next(iter(live.values()))


def members(room: dict[str, Any]) -> list[str]:
    return sorted(m["profile"] for m in room["members"])


def room_change(home: Path, manifest: Path, name: str, *flags: str) -> dict[str, Any]:
    data = plan_json(manifest, home, *flags)
    return next(o for o in data["objects"] if o["kind"] == "room" and o["name"] == name)


def test_create_rename_members_who_answers_and_groups_mirror(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 0, run.text
    room = only_room(gateway)
    assert room["name"] == "Ops" and members(room) == ["alice", "bob"]
    assert room["room_id"] == rooms_mod.base_room_id("acme", "Ops")
    assert groups(home, "alice") == (["Ops"], "Ops") and groups(home, "bob") == (["Ops"], "Ops")
    assert groups(home, "carol")[0] in (None, [])
    assert plan(m, home, "--detailed-exitcode").code == 0

    # A name the fleet does not manage stays where it is, in order.
    meta_path = profile(home, "alice") / "profile.yaml"
    meta = ProfileMeta.load(meta_path)
    meta.set_bot_record({**(meta.bot_record() or {}), "groups": ["Design", "Ops"], "group": "Design"})
    meta.save(meta_path)
    assert groups(home, "alice")[0] == ["Design", "Ops"]

    # Rename (renamed_from), add carol, lead: carol.
    m = fleet(
        manifests,
        [{"name": "Operations", "renamed_from": "Ops", "members": ["alice", "bob", "carol"], "who_answers": "lead:carol"}],
    )
    run = apply(m, home)
    assert run.code == 0, run.text
    room = only_room(gateway)
    assert room["room_id"] == rooms_mod.base_room_id("acme", "Ops")  # same room, renamed in place
    assert room["name"] == "Operations" and members(room) == ["alice", "bob", "carol"]
    lead = next(x["member_id"] for x in room["members"] if x["profile"] == "carol")
    assert room["responder_policy"]["default_responder"] == "leader"
    assert room["responder_policy"]["leader_member_id"] == lead
    assert groups(home, "alice") == (["Design", "Operations"], "Design")
    assert groups(home, "carol") == (["Operations"], "Operations")
    assert plan(m, home, "--detailed-exitcode").code == 0

    # Remove carol (the lead): the policy goes first, then the roster; carol's groups lose the room.
    m = fleet(manifests, [{"name": "Operations", "members": ["alice", "bob"], "who_answers": "auto"}])
    run = apply(m, home)
    assert run.code == 0, run.text
    room = only_room(gateway)
    assert members(room) == ["alice", "bob"]
    assert room["responder_policy"]["default_responder"] == "mentions_only"
    assert [x["profile"] for x in room["retired_members"]] == ["carol"]
    assert groups(home, "carol") == ([], None)
    assert groups(home, "alice")[0] == ["Design", "Operations"]

    # Carol comes back: her retired member id is never reused.
    m = fleet(manifests, [{"name": "Operations", "members": ["alice", "bob", "carol"]}])
    assert apply(m, home).code == 0
    room = only_room(gateway)
    assert {x["profile"]: x["member_id"] for x in room["members"]}["carol"] == "carol-2"
    assert room["responder_policy"]["default_responder"] == "all"
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_drift_in_the_desktop_is_shown_then_corrected(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    rid = only_room(gateway)["room_id"]
    room = gateway.rooms[rid]
    gateway.edit(
        rid,
        name="Ops (old)",
        members=[
            *room["members"],
            {"member_id": "carol", "profile": "carol", "handle": "carol", "target": {"kind": "local", "profile": "carol"}},
        ],
    )
    change = room_change(home, m, "Ops")
    assert change["action"] == "update" and change["drift"] is True
    by_field = {f["field"]: f for f in change["fields"]}
    assert by_field["room:name"]["old"] == "Ops (old)" and by_field["room:name"]["drift"] is True
    assert by_field["room:members"]["old"] == ["alice", "bob", "carol"]
    text = plan(m, home).out
    assert "room/Ops" in text and "drift" in text
    status = hermes_fleet("status", "--home", home, "-o", "json").json()
    room_status = next(o for o in status["fleets"][0]["objects"] if o["object"] == "room/Ops")
    assert sorted(room_status["drifted_fields"]) == ["members", "name"]

    assert apply(m, home).code == 0
    room = only_room(gateway)
    assert room["name"] == "Ops" and members(room) == ["alice", "bob"]
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_plan_and_status_never_write_to_the_gateway(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert plan(m, home).code == 0
    assert hermes_fleet("apply", "--dry-run", "-f", m, "--home", home).code == 0
    assert gateway.writes == [] and gateway.live() == {}
    assert apply(m, home).code == 0
    before = len(gateway.writes)
    gateway.edit(only_room(gateway)["room_id"], name="Renamed")
    assert plan(m, home).code == 0
    assert hermes_fleet("status", "--home", home, "-f", m).code == 0
    assert len(gateway.writes) == before
    assert {meth for meth, _ in gateway.calls} <= {"groups.capabilities", "groups.list", "groups.state", "groups.create"}


def test_lost_create_reply_never_makes_a_second_room(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    gateway.lose_reply.add("groups.create")
    run = apply(m, home)
    assert run.code == 0, run.text  # resolved by reading state: the room is there
    assert gateway.writes.count("groups.create") == 1
    assert len(gateway.live()) == 1
    assert groups(home, "alice") == (["Ops"], "Ops")
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_lost_rename_reply_and_lost_inventory_find_the_same_room(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    # The reply to the rename is lost after the gateway applied it: a re-read settles it.
    gateway.lose_reply.add("groups.rename")
    m = fleet(manifests, [{"name": "Ops2", "renamed_from": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 0, run.text  # the re-read showed the rename happened
    assert only_room(gateway)["name"] == "Ops2"
    assert gateway.writes.count("groups.rename") == 1

    # Inventory lost (or a create whose reply never came back): the fleet's room id is found again.
    for f in (home / ".hermes-fleet" / "inventory").glob("*.json"):
        f.unlink()
    change = room_change(home, m, "Ops2", "--adopt")
    assert change["action"] == "adopt", change
    assert apply(m, home, "--adopt").code == 0
    assert len(gateway.live()) == 1 and gateway.writes.count("groups.create") == 1


def test_gateway_down_bots_converge_rooms_pending(home: Path, manifests: Path, gateway: FakeGateway):
    gateway.stop()
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 1, run.text
    assert (profile(home, "alice") / "profile.yaml").exists() or profile(home, "alice").is_dir()
    assert "room/Ops" in run.text and "pending: gateway unreachable" in run.text
    assert groups(home, "alice")[0] in (None, [])  # no ghost group names
    data = plan_json(m, home)
    room = next(o for o in data["objects"] if o["kind"] == "room")
    assert room["action"] == "error" and room["reason"].startswith("pending: gateway unreachable")
    bots = [o for o in data["objects"] if o["kind"] == "bot"]
    assert all(o["action"] == "no-op" for o in bots)


def test_too_old_gateway_and_missing_methods(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    gateway.too_old = True
    run = apply(m, home)
    assert run.code == 1
    assert "gateway too old" in run.text and "hermes update" in run.text
    assert gateway.live() == {}
    gateway.too_old = False
    gateway.methods = [x for x in gateway.methods if x not in ("groups.members.update", "groups.policy.update")]
    assert apply(m, home).code == 0  # an older gateway can still create a room with the default policy
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}])
    run = apply(m, home)
    assert run.code == 1 and "groups.members.update" in run.text
    assert members(only_room(gateway)) == ["alice", "bob"]


def test_disband_only_with_prune_and_only_owned(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    # A Desktop room with a name of its own and one with the same name as ours: never touched.
    with gateway.lock:
        gateway.dispatch(
            "groups.create",
            {
                "room_id": "r-desktop1",
                "name": "Chat",
                "members": [
                    {"member_id": "a", "profile": "alice", "handle": "alice"},
                    {"member_id": "b", "profile": "bob", "handle": "bob"},
                ],
            },
        )
    m = fleet(manifests, [])
    change = room_change(home, m, "Ops")
    assert change["action"] == "orphan"
    assert apply(m, home).code == 0
    assert len(gateway.live()) == 2
    run = apply(m, home, "--prune")
    assert run.code == 0, run.text
    assert list(gateway.live()) == ["r-desktop1"]
    assert gateway.writes.count("groups.disband") == 1
    assert groups(home, "alice") == ([], None)
    # Recreating it later gets a fresh id (disbanded ids are never reusable).
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    ids = sorted(gateway.live())
    assert ids == sorted(["r-desktop1", rooms_mod.base_room_id("acme", "Ops") + "-2"])


def test_same_named_foreign_room_needs_adopt(home: Path, manifests: Path, gateway: FakeGateway):
    assert apply(fleet(manifests, []), home).code == 0  # profiles exist
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}], bots=BOTS)
    with gateway.lock:
        gateway.dispatch(
            "groups.create",
            {
                "room_id": "r-desk",
                "name": "Ops",
                "members": [
                    {"member_id": "a", "profile": "alice", "handle": "alice"},
                    {"member_id": "c", "profile": "carol", "handle": "carol"},
                ],
            },
        )
    run = apply(m, home)
    assert run.code == 3 and "--adopt" in run.text
    assert apply(m, home, "--adopt").code == 0
    room = only_room(gateway)
    assert room["room_id"] == "r-desk" and members(room) == ["alice", "bob"]
    assert groups(home, "bob") == (["Ops"], "Ops")


def test_refusals_are_reported_with_their_reason(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    gateway.refuse["groups.create"] = (4110, "room_id already belongs to a different authority", "authority_conflict")
    run = apply(m, home)
    assert run.code == 1 and "authority_conflict" in run.text
    gateway.driver = False
    run = plan(m, home)
    assert run.code == 1 and "driver: false" in run.text


def test_explicit_gateway_url_and_token_env_never_printed(
    home: Path, manifests: Path, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
):
    gateway.stop_control()  # no discovery: only the explicit URL and its token
    gateway.tokens.add(TOKEN)
    monkeypatch.setenv("FLEET_GW_TOKEN", TOKEN)
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    flags = ("--gateway", gateway.origin, "--gateway-token-env", "FLEET_GW_TOKEN")
    run = hermes_fleet("--debug", "apply", "-f", m, "--home", home, *flags)
    assert run.code == 0, run.text
    assert TOKEN not in run.text
    assert len(gateway.live()) == 1
    monkeypatch.setenv("FLEET_GW_TOKEN", "wrong-" + TOKEN)
    run = plan(m, home, *flags, "-o", "json")
    assert TOKEN not in run.text and "refused the credential" in run.text
    run = hermes_fleet("status", "--home", home, *flags)
    assert TOKEN not in run.text
    # Without discovery or URL: pending, with a hint to start the gateway.
    run = plan(m, home)
    assert run.code == 1 and "no gateway is running" in run.text


def test_peer_member_needs_an_operator(home: Path, manifests: Path, gateway: FakeGateway):
    doc = write_fleet(
        manifests,
        BOTS,
        rooms=[{"name": "Mixed", "members": ["alice", "spark/reviewer"]}],
        peers=[{"name": "spark", "url": "http://10.0.0.2:8642"}],
    )
    run = plan(doc, home)
    assert run.code == 1 and "spark/reviewer" in run.text and "operator" in run.text
    assert gateway.writes == []
