"""Applying rooms over the gateway's `groups.*` JSON-RPC, then mirroring them on member bots.

create, rename, members.update, policy.update, disband; every write is revision-fenced and
carries a deterministic event id, and a lost reply is settled by reading the room, never by
sending the write again (docs/hermes/gateway.md, docs/rooms.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from controller.adapters import fsio, home, profilemeta
from controller.adapters import gateway as gw
from controller.adapters import inventory as inventory_file
from controller.core.inventory import room_key
from controller.core.rooms import (
    MEMBERS_METHOD,
    POLICY_METHOD,
    PRUNE_CANCEL_ID,
    GroupEdit,
    desired_policy,
    event_id,
    groups_of,
    live_who_answers,
    local_members,
    member,
)
from controller.core.types import Action, Inputs, ObjectChange
from controller.errors import ControllerError, RoomApplyError
from controller.manifests.models import Room

Report = Callable[[ObjectChange, bool, str], None]


def apply_rooms(
    root: Path,
    changes: list[ObjectChange],
    inputs: Inputs,
    options: gw.GatewayOptions | None,
    failed_bots: set[str],
    report: Report,
) -> None:
    """Carry out the room changes, in plan order; `report(change, ok, error)` records each outcome."""
    if not changes:
        return
    options = options or gw.GatewayOptions()
    session: gw.Session | None = None
    try:
        for change in changes:
            room = inputs.state.rooms.get(change.name)
            waiting = sorted(m for m in (room.members if room is not None else ()) if m in failed_bots)
            if waiting:
                report(change, False, "not applied: " + ", ".join(f"bot/{m}" for m in waiting) + " was not converged")
                continue
            try:
                if session is None and change.action is not Action.RELEASE:
                    session = gw.open_session(root, options, writes=True)
                _apply_room(root, change, inputs, session)
                report(change, True, "")
            except gw.GatewayOutcomeUnknown as exc:
                report(change, False, f"{exc}; not retried: the next plan reads the room and finishes the job")
            except ControllerError as exc:  # the adapters map every OSError onto the error tree
                report(change, False, str(exc))
    finally:
        if session is not None:
            session.close()


def write_groups(root: Path, edit: GroupEdit, retries: int = 3) -> None:
    """Read-modify-write the bot's profile.yaml: only `groups`/`group` change, revision bumped."""
    path = home.check_profile(root, edit.bot)  # containment: profile.yaml stays in the bot's profile
    if not path.is_dir():
        return
    target = path / "profile.yaml"

    def write() -> None:
        meta = profilemeta.ProfileMeta.load(target)
        record = dict(meta.bot_record() or {})
        before = groups_of(record)
        after = edit.applied_to(before)
        if after == before and isinstance(record.get("groups"), list):
            return
        record["groups"] = after
        record["group"] = after[0] if after else None
        meta.set_bot_record(record)
        meta.save(target)

    fsio.retrying(write, attempts=retries)


def _apply_room(root: Path, change: ObjectChange, inputs: Inputs, session: gw.Session | None) -> None:
    inventory = inputs.inventory
    name = change.name
    if change.action in (Action.DELETE, Action.RELEASE):
        entry = inventory.objects.get(room_key(name), {})
        if change.action is Action.DELETE:
            assert session is not None
            _disband(session, change.ref)
        for bot in entry.get("applied", {}).get("members") or []:
            write_groups(root, GroupEdit(bot, remove=(name,)))
        inventory.objects.pop(room_key(name), None)
        return
    assert session is not None
    room = inputs.state.rooms[name]
    old_entry = (
        inventory.objects.get(room_key(name))
        or (inventory.objects.get(room_key(room.renamed_from)) if room.renamed_from else None)
        or {}
    )
    live = _create_room(session, change.ref, room) if change.action is Action.CREATE else _read(session, change.ref)
    live = _converge(session, live, room)
    # Mirror the room on its member bots: the new name in, old names (renames, removed members) out.
    old_names = tuple(
        n
        for n in {
            old_entry.get("applied", {}).get("name"),
            *(str(f.old) for f in change.fields if f.field == "room:name" and f.old),
        }
        if n and n != name
    )
    for bot in room.members:
        write_groups(root, GroupEdit(bot, add=name, rename=(old_names[0], name) if old_names else None))
    previous = set(old_entry.get("applied", {}).get("members") or []) | {
        m for f in change.fields if f.field == "room:members" and f.old for m in f.old
    }
    for bot in sorted(previous - set(room.members)):
        write_groups(root, GroupEdit(bot, remove=(name, *old_names)))
    if room.renamed_from:
        inventory.objects.pop(room_key(room.renamed_from), None)
    entry = inventory.objects.setdefault(room_key(name), {})
    entry["room_id"] = live["room_id"]
    entry["applied"] = {"name": room.name, "members": sorted(room.members), "who_answers": room.who_answers}
    entry["member_ids"] = local_members(live)
    verb = {Action.CREATE: "created", Action.ADOPT: "adopted"}.get(change.action, "updated")
    entry.setdefault(f"{verb}_at", inventory_file.now_iso())
    entry["updated_at"] = inventory_file.now_iso()


def _read(session: gw.Session, room_id: str, *, include_disbanded: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"room_id": room_id}
    if include_disbanded:
        params["include_disbanded"] = True
    room = session.call("groups.state", params).get("room")
    if not isinstance(room, dict):
        raise RoomApplyError(f"groups.state {room_id}: no room in the reply")
    return room


def _try_read(session: gw.Session, room_id: str, **kw: Any) -> dict[str, Any] | None:
    try:
        return _read(session, room_id, **kw)
    except gw.GatewayRefused as exc:
        if exc.code == 4114:
            return None
        raise


def _create_room(session: gw.Session, room_id: str, room: Room) -> dict[str, Any]:
    members = [member(p, p) for p in room.members]
    try:
        result = session.call("groups.create", {"room_id": room_id, "name": room.name, "members": members})
    except gw.GatewayOutcomeUnknown as lost:
        # Resolve by reading state (a fresh connection), never by sending the create again.
        live = _try_read(session, room_id)
        if live is not None and live.get("name") == room.name and set(local_members(live)) == set(room.members):
            return live
        raise gw.GatewayOutcomeUnknown(
            f"groups.create {room_id}: the reply was lost and the room is {'different' if live else 'not there'} on a re-read"
        ) from lost
    live = result.get("room")
    if not isinstance(live, dict):
        raise RoomApplyError(f"groups.create {room_id}: no room in the reply")
    return live


def _write(
    session: gw.Session, method: str, params: dict[str, Any], room_id: str, done: Callable[[Mapping[str, Any]], bool]
) -> dict[str, Any]:
    """One revision-fenced write; a lost reply is resolved by re-reading the room (`done(room)`)."""
    try:
        room = session.call(method, params).get("room")
    except gw.GatewayOutcomeUnknown as lost:
        room = _read(session, room_id)
        if done(room):
            return room
        raise gw.GatewayOutcomeUnknown(
            f"{method} {room_id}: the reply was lost and a re-read shows the change was not made"
        ) from lost
    if not isinstance(room, dict):
        raise RoomApplyError(f"{method} {room_id}: no room in the reply")
    return room


def _converge(session: gw.Session, live: dict[str, Any], room: Room) -> dict[str, Any]:
    """rename, then who-answers / members in the order the gateway accepts (a leader is never removed first)."""
    room_id = live["room_id"]
    if live.get("name") != room.name:
        payload = {
            "room_id": room_id,
            "name": room.name,
            "expected_revision": live["revision"],
            "event_id": event_id("rename", room_id, live["revision"], room.name),
        }
        live = _write(session, "groups.rename", payload, room_id, lambda r: r.get("name") == room.name)
    want = set(room.members)
    have = local_members(live)
    policy = live.get("responder_policy") or {}
    leader = policy.get("leader_member_id") if policy.get("default_responder") == "leader" else None
    lead_profile = {v: k for k, v in have.items()}.get(leader) if leader else None
    if set(have) != want:
        if lead_profile and lead_profile not in want:
            # "Change responder policy before removing its leader": go through a policy the new roster allows.
            target = room.who_answers if room.who_answers.split(":", 1)[-1] in have else "everyone"
            live = _set_policy(session, live, target, have)
        live = _set_members(session, live, room)
    if live_who_answers(live) != room.who_answers:
        live = _set_policy(session, live, room.who_answers, local_members(live))
    return live


def _set_members(session: gw.Session, live: dict[str, Any], room: Room) -> dict[str, Any]:
    room_id = live["room_id"]
    have = local_members(live)
    used = set(have.values()) | {str(m.get("member_id")) for m in live.get("retired_members") or [] if isinstance(m, dict)}
    members = []
    for profile in room.members:
        member_id = have.get(profile)
        if member_id is None:
            member_id, n = profile, 2
            while member_id in used:  # retired member ids cannot be reused
                member_id, n = f"{profile}-{n}", n + 1
            used.add(member_id)
        members.append(member(profile, member_id))
    payload = {
        "room_id": room_id,
        "expected_revision": live["revision"],
        "members": members,
        "event_id": event_id("members", room_id, live["revision"], members),
    }
    want = set(room.members)
    return _write(session, MEMBERS_METHOD, payload, room_id, lambda r: set(local_members(r)) == want)


def _set_policy(session: gw.Session, live: dict[str, Any], who: str, member_ids: Mapping[str, str]) -> dict[str, Any]:
    room_id = live["room_id"]
    policy = desired_policy(who, member_ids, live.get("responder_policy"))
    params = {
        "room_id": room_id,
        "event_id": event_id("policy", room_id, live["revision"], policy),
        "expected_revision": live["revision"],
        "policy": policy,
    }
    return _write(session, POLICY_METHOD, params, room_id, lambda r: live_who_answers(r) == who)


def _disband(session: gw.Session, room_id: str) -> None:
    try:
        session.call("groups.disband", {"room_id": room_id, "cancel_id": PRUNE_CANCEL_ID})
    except gw.GatewayOutcomeUnknown as lost:
        room = _try_read(session, room_id, include_disbanded=True)
        if room is None or room.get("disbanded_at"):
            return
        raise gw.GatewayOutcomeUnknown(
            f"groups.disband {room_id}: the reply was lost and the room is still live on a re-read"
        ) from lost
