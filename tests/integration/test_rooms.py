"""Rooms converge onto a gateway over `groups.*` JSON-RPC (docs/rooms.md).

A real loopback gateway (tests/integration/fake_gateway.py: a WebSocket server and an AF_UNIX
control socket in the test process) holds the rooms; the CLI runs in-process against a real
Hermes home in a temporary folder. Nothing of the controller is mocked.
"""

from __future__ import annotations

import json
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
    base = rooms_mod.base_room_id("acme", "Ops")
    assert rooms_mod.in_family(base, room["room_id"]) and room["room_id"] != base  # random suffix
    first_id = room["room_id"]
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
    assert room["room_id"] == first_id  # same room, renamed in place
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
    (new_id,) = sorted(set(gateway.live()) - {"r-desktop1"})
    assert rooms_mod.in_family(rooms_mod.base_room_id("acme", "Ops"), new_id)
    assert gateway.retired and new_id not in gateway.retired


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


def test_explicit_gateway_url_with_a_single_use_ticket(
    home: Path, manifests: Path, gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch
):
    """A ticket minted on that machine (`hermes gateway ticket`) opens ONE connection: the whole run
    (observe, plan again under the lock, apply) shares it; a second run needs a fresh ticket."""
    gateway.stop_control()  # no discovery: only the explicit URL and its ticket
    ticket = gateway.mint_ticket()
    monkeypatch.setenv("FLEET_GW_TOKEN", ticket)
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    flags = ("--gateway", gateway.origin, "--gateway-token-env", "FLEET_GW_TOKEN")
    run = hermes_fleet("--debug", "apply", "-f", m, "--home", home, *flags)
    assert run.code == 0, run.text
    assert ticket not in run.text
    assert len(gateway.live()) == 1 and len(gateway.handshakes) == 1
    # The same ticket again: the gateway refuses it (single use), and the message says what to do.
    run = plan(m, home, *flags, "-o", "json")
    assert run.code == 1 and ticket not in run.text
    room = next(o for o in run.json()["objects"] if o["kind"] == "room")
    assert "refused the credential" in room["reason"] and "hermes gateway ticket" in room["reason"]
    monkeypatch.setenv("FLEET_GW_TOKEN", gateway.mint_ticket())
    run = hermes_fleet("status", "--home", home, *flags)
    assert run.code == 0 and "could not be checked" not in run.out, run.text
    # Without discovery or URL: pending, with a hint to start the gateway.
    run = plan(m, home)
    assert run.code == 1 and "no gateway is running" in run.text


def test_members_on_other_machines_need_https_a_key_and_everyone(home: Path, manifests: Path, gateway: FakeGateway):
    """What RoomLink cannot do is refused by validate, with the way out."""
    doc = write_fleet(
        manifests,
        BOTS,
        rooms=[{"name": "Mixed", "members": ["alice", "spark/reviewer"], "who_answers": "lead:alice"}],
        peers=[{"name": "spark", "url": "http://10.0.0.2:8642"}],
    )
    run = hermes_fleet("validate", "-f", doc)
    assert run.code == 2
    assert "[remote_policy]" in run.text or "remote_policy" in hermes_fleet("validate", "-f", doc, "-o", "json").out
    codes = {d["code"] for d in hermes_fleet("validate", "-f", doc, "-o", "json").json()["diagnostics"]}
    assert codes == {"remote_policy", "url", "reference"}  # the policy, plain http, no key
    assert plan(doc, home).code == 2 and gateway.writes == []


# --- the gateway's stricter rules ---------------------------------------------------------------


def test_purged_tombstones_never_block_a_new_room(home: Path, manifests: Path, gateway: FakeGateway):
    """After 90 days the gateway purges a disbanded room (gone from groups.list), yet its id stays
    retired forever: a new room needs an id that cannot collide, and a refused one is replaced."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    old_id = only_room(gateway)["room_id"]
    assert apply(fleet(manifests, []), home, "--prune").code == 0
    gateway.age(days=91)
    assert old_id not in gateway.rooms and old_id in gateway.retired  # purged, still retired
    with gateway.lock:
        listed = gateway.dispatch("groups.list", {"include_disbanded": True})["rooms"]
        assert [r["room_id"] for r in listed] == []
    gateway.retire_next_creates = 1  # the next id tried turns out to be a purged tombstone
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 0, run.text
    assert gateway.writes.count("groups.create") == 3  # the first room, the refused id, its replacement
    new_id = only_room(gateway)["room_id"]
    assert new_id != old_id and rooms_mod.in_family(rooms_mod.base_room_id("acme", "Ops"), new_id)
    assert plan(m, home, "--detailed-exitcode").code == 0


def desktop_room(gateway: FakeGateway, room_id: str, name: str, members: list[dict[str, Any]]) -> None:
    with gateway.lock:
        gateway.dispatch("groups.create", {"room_id": room_id, "name": name, "members": members})


def test_adopted_members_keep_their_identity(home: Path, manifests: Path, gateway: FakeGateway):
    """A Desktop room's members carry display names and custom handles; the gateway refuses any
    change to a kept member's identity, so kept members go back exactly as the gateway has them."""
    assert apply(fleet(manifests, []), home).code == 0
    desktop_room(
        gateway,
        "r-desk",
        "Ops",
        [
            {"member_id": "m-a", "profile": "alice", "handle": "al", "display_name": "Alice A."},
            {"member_id": "m-b", "profile": "bob", "handle": "bobby", "display_name": "Bob B."},
        ],
    )
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}])
    run = apply(m, home, "--adopt")
    assert run.code == 0, run.text
    room = only_room(gateway)
    by_profile = {x["profile"]: x for x in room["members"]}
    assert by_profile["alice"] == {
        "member_id": "m-a", "profile": "alice", "handle": "al", "display_name": "Alice A.",
        "target": {"kind": "local", "profile": "alice"},
    }  # fmt: skip
    assert by_profile["carol"]["member_id"] == "carol" and by_profile["carol"]["handle"] == "carol"
    # Later membership changes of the adopted room keep working.
    m = fleet(manifests, [{"name": "Ops", "members": ["bob", "carol"]}])
    assert apply(m, home).code == 0
    assert members(only_room(gateway)) == ["bob", "carol"]
    assert only_room(gateway)["members"][0]["display_name"] == "Bob B."
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_the_leader_is_moved_before_it_is_removed_in_every_mode(home: Path, manifests: Path, gateway: FakeGateway):
    """A policy can name a leader with default_responder `all`; the gateway still refuses to remove it."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}])
    assert apply(m, home).code == 0
    rid = only_room(gateway)["room_id"]
    carol = next(x["member_id"] for x in gateway.rooms[rid]["members"] if x["profile"] == "carol")
    gateway.edit(rid, responder_policy={**rooms_mod.DEFAULT_POLICY, "leader_member_id": carol})  # mode all, leader set
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 0, run.text
    room = only_room(gateway)
    assert members(room) == ["alice", "bob"] and room["responder_policy"]["leader_member_id"] is None
    assert gateway.writes[-2:] == ["groups.policy.update", "groups.members.update"]


def test_padded_room_names_are_refused_before_anything_runs(home: Path, manifests: Path, gateway: FakeGateway):
    """The gateway strips room names; a padded name could never match, so validate refuses it."""
    m = fleet(manifests, [{"name": " Ops ", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 2 and "whitespace" in run.text
    assert gateway.writes == []
    assert apply(fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}]), home).code == 0
    rid = only_room(gateway)["room_id"]
    with gateway.lock:  # the gateway does strip
        gateway.dispatch("groups.rename", {"room_id": rid, "event_id": "e1", "name": "  Spaced  "})
    assert only_room(gateway)["name"] == "Spaced"


def test_a_busy_room_and_work_still_stopping_say_what_to_do(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    rid = only_room(gateway)["room_id"]
    gateway.busy.add(rid)
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}])
    run = apply(m, home)
    assert run.code == 1 and "room_membership_busy" in run.text and "stop it in the Desktop" in run.text
    gateway.busy.clear()
    assert apply(m, home).code == 0 and members(only_room(gateway)) == ["alice", "bob", "carol"]
    # Disbanding while its work is still stopping: 5114, then it goes through.
    gateway.stopping.add(rid)
    run = apply(fleet(manifests, []), home, "--prune")
    assert run.code == 1 and "5114" in run.text and "apply --prune` again" in run.text
    assert rid in gateway.live()
    gateway.stopping.clear()
    assert apply(fleet(manifests, []), home, "--prune").code == 0
    assert gateway.live() == {}


def test_latest_seq_follows_the_room_log(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    create = next(p for meth, p in gateway.calls if meth == "groups.create")
    assert create["room_id"] in gateway.live()
    rid = only_room(gateway)["room_id"]
    with gateway.lock:
        assert gateway.dispatch("groups.state", {"room_id": rid})["room"]["latest_seq"] == 0  # create appends none
    assert apply(fleet(manifests, [{"name": "Ops2", "renamed_from": "Ops", "members": ["alice", "bob"]}]), home).code == 0
    with gateway.lock:
        assert gateway.dispatch("groups.state", {"room_id": rid})["room"]["latest_seq"] == 1


def test_a_concurrent_edit_is_re_read_re_planned_and_converged(home: Path, manifests: Path, gateway: FakeGateway):
    """A Desktop edit between our read and our write: the gateway refuses the write (revision
    changed); apply re-reads the room, plans it again and finishes."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    rid = only_room(gateway)["room_id"]
    gateway.interfere["groups.members.update"] = lambda: (
        gateway.interfere.pop("groups.members.update"),
        gateway.edit(rid, name="Ops (Desktop)"),
    )
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}])
    run = apply(m, home)
    assert run.code == 0, run.text
    room = only_room(gateway)
    assert room["name"] == "Ops" and members(room) == ["alice", "bob", "carol"]
    assert gateway.writes.count("groups.members.update") == 2 and gateway.writes.count("groups.rename") == 1
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_a_room_that_keeps_changing_is_a_conflict_with_what_changed(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    rid = only_room(gateway)["room_id"]
    gateway.interfere["groups.rename"] = lambda: gateway.edit(rid, name=f"Desk {gateway.clock}")
    m = fleet(manifests, [{"name": "Ops2", "renamed_from": "Ops", "members": ["alice", "bob"]}])
    run = apply(m, home)
    assert run.code == 3, run.text
    assert "kept changing" in run.text and "revision" in run.text and "name" in run.text
    assert gateway.writes.count("groups.rename") == 3
    # Disbanded meanwhile: a conflict too, and the next apply creates it anew.
    gateway.interfere["groups.rename"] = lambda: (gateway.interfere.clear(), gateway.dispatch("groups.disband", {"room_id": rid}))
    run = apply(m, home)
    assert run.code == 3 and "disbanded" in run.text, run.text
    assert apply(m, home).code == 0 and only_room(gateway)["name"] == "Ops2"


def test_dot_folders_in_profiles_break_rosters_and_the_plan_says_why(home: Path, manifests: Path, gateway: FakeGateway):
    """The gateway at c326c5d reads every folder under profiles/ as a profile; `.deleted` is no profile name."""
    assert apply(fleet(manifests, []), home).code == 0
    (home / "profiles" / ".deleted").mkdir()
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    data = plan_json(m, home)
    assert any(".deleted" in n for n in data.get("notes", [])) or ".deleted" in plan(m, home).out
    run = apply(m, home)
    assert run.code == 1 and "5111" in run.text and "move them out of profiles/" in run.text
    (home / "profiles" / ".deleted").rmdir()
    assert apply(m, home).code == 0


def test_status_never_reports_drift_it_cannot_know(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    gateway.stop()  # a stale socket file may remain: nothing answers
    data = hermes_fleet("status", "--home", home, "-o", "json").json()
    fleet_report = data["fleets"][0]
    assert fleet_report["drifted"] == 0 and fleet_report["unknown"] == 1
    text = hermes_fleet("status", "--home", home).out
    assert "0 object(s) differ" in text and "could not be checked" in text


def test_no_rooms_leaves_rooms_out_for_a_host_without_a_gateway(home: Path, manifests: Path, gateway: FakeGateway):
    gateway.stop()
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 1  # without the flag an unreachable gateway stays an error
    run = apply(m, home, "--no-rooms")
    assert run.code == 0, run.text
    assert plan(m, home, "--no-rooms", "--detailed-exitcode").code == 0
    data = plan_json(m, home, "--no-rooms")
    assert [o for o in data["objects"] if o["kind"] == "room"] == []
    assert plan(m, home, "--detailed-exitcode").code == 1


def test_watch_converges_rooms_and_no_rooms_leaves_them_out(home: Path, manifests: Path, gateway: FakeGateway):
    """The reconciler plans rooms like apply (the gateway found through the home's control socket);
    on a machine without a gateway, `watch --no-rooms` converges the rest instead of ending every
    pass partial."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    once = ("watch", "--once", "-f", m, "--home", home, "--log-format", "json")
    run = hermes_fleet(*once)
    assert run.code == 0, run.text
    assert members(only_room(gateway)) == ["alice", "bob"]
    assert json.loads(hermes_fleet(*once).out)["result"] == "in-sync"

    gateway.stop()
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"]}], bots=[*BOTS, {"name": "dave"}])
    run = hermes_fleet(*once)
    assert run.code == 1, run.text  # partial: the room is pending, the gateway unreachable
    assert "gateway unreachable" in run.text
    assert profile(home, "dave").is_dir()  # the rest converged
    run = hermes_fleet(*once, "--no-rooms")
    assert run.code == 0, run.text
    assert [(e["event"], e["result"]) for e in map(json.loads, run.out.splitlines())] == [("reconciled", "in-sync")]
    # Without the flag, a pass that only reports cannot check the room: partial, not in-sync.
    run = hermes_fleet(*once)
    assert run.code == 1 and json.loads(run.out)["result"] == "partial" and "room/Ops" in json.loads(run.out)["message"]


def test_a_gateway_restarted_on_another_port_is_reached_in_the_same_run(home: Path, manifests: Path, gateway: FakeGateway):
    """The create is applied, its reply lost, and the gateway comes back elsewhere: the read-back
    that settles the create finds it again through the control socket (new instance, new port)."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    before = gateway.port
    gateway.restart_after.add("groups.create")
    run = apply(m, home)
    assert run.code == 0, run.text
    assert gateway.port != before and gateway.writes.count("groups.create") == 1
    assert members(only_room(gateway)) == ["alice", "bob"]
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_a_rename_is_never_sent_to_a_gateway_that_does_not_fence_it(home: Path, manifests: Path, gateway: FakeGateway):
    """An older gateway (no `rename_revision`) ignores expected_revision: a rename there could
    overwrite a Desktop rename, so it is refused with the upgrade to make, and nothing is sent."""
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])
    assert apply(m, home).code == 0
    gateway.features.remove("rename_revision")
    renamed = fleet(manifests, [{"name": "Ops2", "renamed_from": "Ops", "members": ["alice", "bob"]}])
    change = room_change(home, renamed, "Ops2")
    assert (change["action"], change["reason_code"]) == ("error", "gateway-unsupported")
    assert "rename_revision" in change["reason"] and "groups protocol 2" in change["reason"]
    assert "hermes update" in change["reason"] and "not sent" in change["reason"]
    run = apply(renamed, home)
    assert run.code == 1 and "rename_revision" in run.text
    assert "groups.rename" not in gateway.writes and only_room(gateway)["name"] == "Ops"
    gateway.features.append("rename_revision")  # updated: the rename goes through, fenced
    assert apply(renamed, home).code == 0
    assert [p for m_, p in gateway.calls if m_ == "groups.rename"][-1]["expected_revision"] == 1


def test_plan_and_apply_list_the_same_writes_in_the_same_order(home: Path, manifests: Path, gateway: FakeGateway):
    bots = [{"name": n} for n in ("alice", "bob", "carol", "dave")]
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob", "carol"], "who_answers": "lead:carol"}], bots)

    def planned() -> list[str]:
        change = room_change(home, m, "Ops")
        return rooms_mod.planned_writes(change["action"], [f["field"] for f in change["fields"]])

    def applied() -> list[str]:
        run = apply(m, home, "-o", "json")
        assert run.code == 0, run.text
        (result,) = [r for r in run.json()["results"] if r["object"] == "room/Ops"]
        return result["writes"]

    sent = len(gateway.writes)
    assert planned() == ["groups.create", "groups.policy.update"] == applied() == gateway.writes[sent:]
    # Rename, drop the leader, lead with a newcomer: the policy is cleared first (the leader
    # cannot be removed while named), then the roster, then the new lead. The plan shows all four.
    m = fleet(
        manifests,
        [{"name": "Ops 2", "renamed_from": "Ops", "members": ["alice", "bob", "dave"], "who_answers": "lead:dave"}],
        bots,
    )
    change = room_change(home, m, "Ops 2")
    room = [f for f in change["fields"] if f["field"].startswith("room:")]
    assert [(f["field"], f["new"]) for f in room] == [
        ("room:name", "Ops 2"),
        ("room:who_answers (before members)", "everyone"),
        ("room:members", ["alice", "bob", "dave"]),
        ("room:who_answers", "lead:dave"),
    ]
    want = ["groups.rename", "groups.policy.update", "groups.members.update", "groups.policy.update"]
    sent = len(gateway.writes)
    assert rooms_mod.planned_writes(change["action"], [f["field"] for f in change["fields"]]) == want
    run = apply(m, home, "-o", "json")
    assert run.code == 0, run.text
    assert [r["writes"] for r in run.json()["results"] if r["object"] == "room/Ops 2"] == [want]
    assert gateway.writes[sent:] == want
    assert plan(m, home, "--detailed-exitcode").code == 0


def test_failures_are_classed_as_the_docs_say(home: Path, manifests: Path, gateway: FakeGateway):
    m = fleet(manifests, [{"name": "Ops", "members": ["alice", "bob"]}])

    def unreachable_from_now() -> None:
        gateway.http_status = 503

    # The gateway answered the plan's reads (apply reads twice: before and under its lock), then
    # failed the apply's own connection: pending, not failed.
    lists = iter([None, unreachable_from_now])
    gateway.interfere["groups.list"] = lambda: (next(lists, None) or (lambda: None))()
    run = apply(m, home)
    gateway.interfere.clear()
    assert run.code == 1, run.text
    assert "room/Ops: pending: gateway unreachable" in run.text and "HTTP 503" in run.text
    assert "room/Ops: failed" not in run.text and gateway.live() == {}
    # The create lands, its reply is lost, and the read-back cannot connect: an unknown outcome that
    # says the room may already exist; the next run finds it by its id family (no second room).
    gateway.http_status = None
    gateway.lose_reply.add("groups.create")
    gateway.interfere["groups.create"] = unreachable_from_now
    run = apply(m, home)
    gateway.interfere.clear()
    assert run.code == 1 and "may already exist" in run.text and "not retried" in run.text
    gateway.http_status = None
    assert apply(m, home).code == 0
    assert len(gateway.live()) == 1 and gateway.writes.count("groups.create") == 1
