"""Planning rooms: gateway-owned group chats against the manifests (pure).

Reads only what observing asked the gateway (a GatewayView); a gateway that could not be asked
makes every room pending, never assumed. Member bots' Bot Mode `groups` lists are planned with
the room (`groups:<bot>` fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.core import drift
from controller.core.inventory import room_key, split_key
from controller.core.rooms import (
    MEMBERS_METHOD,
    POLICY_METHOD,
    GroupEdit,
    base_room_id,
    capability_problem,
    fleet_prefix,
    groups_of,
    in_family,
    live_who_answers,
    local_members,
    needed,
    next_room_id,
    peer_members,
)
from controller.core.types import Action, FieldChange, GatewayView, Inputs, Kind, ObjectChange, Op, Reason
from controller.manifests.models import Room


def plan_rooms(inputs: Inputs, bot_actions: Mapping[str, Action]) -> tuple[list[ObjectChange], list[str]]:
    state = inputs.state
    view = inputs.observed.rooms
    changes: list[ObjectChange] = []
    notes: list[str] = []
    if view is None and not needed(state, inputs.inventory):
        return changes, notes
    view = view or GatewayView(error="pending: gateway not consulted")
    problem = view.error or capability_problem(view)
    sources = {r.renamed_from: r.name for r in state.rooms.values() if r.renamed_from}
    for room in state.rooms.values():
        changes.append(_plan_room(inputs, room, bot_actions, view, problem))
        if room.picture:
            notes.append(
                f"room {room.name!r}: picture not converged: the gateway has no room picture (Desktop keeps it on each client)"
            )
        if not room.detect_stop_directives:
            notes.append(
                f"room {room.name!r}: detect_stop_directives: false not converged: it is a Desktop room "
                "setting, not a gateway one (the gateway always reads stop/halt/pause next to an @mention)"
            )
    for key in inputs.inventory.keys_of("room"):
        name = split_key(key)[1]
        if name in state.rooms or (name in sources and room_key(sources[name]) not in inputs.inventory.objects):
            continue
        changes.append(_plan_orphan(inputs, name, view, problem))
    return changes, notes


def _err(name: str, code: Reason, reason: str, ref: str = "") -> ObjectChange:
    return ObjectChange(Kind.ROOM, name, Action.ERROR, code, reason, ref=ref)


def _pending(name: str, problem: str, ref: str = "") -> ObjectChange:
    reason = problem if problem.startswith(("pending", "gateway too old")) else f"pending: {problem}"
    code = Reason.GATEWAY_PENDING if problem.startswith("pending") else Reason.GATEWAY_UNSUPPORTED
    return _err(name, code, reason, ref)


def _no_driver(view: GatewayView, name: str, what: str, ref: str = "") -> ObjectChange:
    return _err(
        name,
        Reason.GATEWAY_UNSUPPORTED,
        f"the gateway at {view.origin} has no Group Chat worker running "
        f"(driver: false){what}; restart the gateway on that machine (`hermes gateway restart`)",
        ref,
    )


def _too_old(view: GatewayView, name: str, method: str, what: str, ref: str = "") -> ObjectChange:
    return _err(
        name,
        Reason.GATEWAY_UNSUPPORTED,
        f"the gateway at {view.origin} has no {method}, so {what} cannot be "
        "changed there; update Hermes on that machine (`hermes update`) and restart its gateway",
        ref,
    )


def _plan_room(inputs: Inputs, room: Room, bot_actions: Mapping[str, Action], view: GatewayView, problem: str) -> ObjectChange:
    fleet = inputs.state.fleet
    name = room.name
    key = room_key(name)
    foreign = inputs.observed.foreign
    if key in foreign:
        return ObjectChange(
            Kind.ROOM,
            name,
            Action.CONFLICT,
            Reason.FOREIGN_OWNER,
            f"room {name!r} is owned by fleet {foreign[key]!r}; two fleets never manage one object",
        )
    peers = [m for m in room.members if "/" in m]
    if peers:
        return _err(
            name,
            Reason.REMOTE_MEMBERS,
            f"remote member(s) {', '.join(peers)}: seating a bot from another "
            "machine needs an operator there (its gateway must report room_link.enabled and mint a grant with "
            "groups.peer.invite, then this gateway registers it); hermes-fleet does not do that hand-off yet, "
            "see docs/rooms.md",
        )
    waiting = [m for m in room.members if bot_actions.get(m) in (Action.CONFLICT, Action.ERROR)]
    if waiting:
        return _err(name, Reason.WAITS_FOR_BOT, "waits for " + ", ".join(f"bot/{m}" for m in waiting))
    if problem:
        return _pending(name, problem)
    entry = inputs.inventory.objects.get(key)
    renamed = False
    if entry is None and room.renamed_from:
        entry = inputs.inventory.objects.get(room_key(room.renamed_from))
        renamed = entry is not None
    live = view.rooms.get(str(entry.get("room_id"))) if entry else None
    applied = (entry or {}).get("applied", {})
    base = base_room_id(fleet, name)
    if entry is not None and live is not None and not live.get("disbanded_at"):
        code, reason = (Reason.RENAMED, "renamed") if renamed else (Reason.MANAGED, "managed by this fleet")
        return _update(inputs, room, live, applied, Action.UPDATE, code, reason, live["room_id"], view)
    if entry is not None:
        gone = "disbanded" if live else "gone from the gateway"
        return _create(
            inputs,
            room,
            next_room_id(base, view.rooms),
            view,
            Reason.RECREATED,
            f"room was {gone} outside hermes-fleet; creating a new one (room ids are never reused)",
            drifted=True,
            old_name=applied.get("name"),
        )
    bases = [base] + ([base_room_id(fleet, room.renamed_from)] if room.renamed_from else [])
    ours = sorted(
        rid
        for rid, r in view.rooms.items()
        if not r.get("disbanded_at")
        and (any(in_family(b, rid) for b in bases) or (rid.startswith(fleet_prefix(fleet)) and r.get("name") == name))
    )
    others = sorted(
        rid
        for rid, r in view.rooms.items()
        if r.get("name") == name
        and not r.get("disbanded_at")
        and not rid.startswith(fleet_prefix(fleet))
        and not rid.startswith("hf-")
    )
    if ours:
        live = view.rooms[ours[-1]]
        return _update(
            inputs,
            room,
            live,
            applied,
            Action.ADOPT,
            Reason.ID_EXISTS,
            "this fleet's room id already exists (an earlier create's reply was lost, or the inventory was reset)",
            live["room_id"],
            view,
        )
    if others and not inputs.options.adopt:
        return ObjectChange(
            Kind.ROOM,
            name,
            Action.CONFLICT,
            Reason.UNMANAGED,
            f"a room named {name!r} exists on the "
            f"gateway ({', '.join(others)}) that this fleet does not own; re-run with --adopt to take "
            "it over",
            ref=others[0],
        )
    if len(others) > 1:
        return ObjectChange(
            Kind.ROOM,
            name,
            Action.CONFLICT,
            Reason.AMBIGUOUS,
            f"{len(others)} rooms are named "
            f"{name!r} ({', '.join(others)}); --adopt cannot choose one: rename or disband the others",
        )
    if others:
        return _update(
            inputs,
            room,
            view.rooms[others[0]],
            applied,
            Action.ADOPT,
            Reason.ADOPTED,
            "existing room taken over (--adopt)",
            others[0],
            view,
        )
    return _create(inputs, room, next_room_id(base, view.rooms), view, Reason.NEW, "new room")


def _group_fields(inputs: Inputs, edits: list[GroupEdit]) -> list[FieldChange]:
    out = []
    for edit in edits:
        live = inputs.observed.live.get(edit.bot)
        before = groups_of(live.meta if live is not None else None)
        after = edit.applied_to(before)
        if after != before:
            out.append(FieldChange(f"groups:{edit.bot}", Op.CHANGE, before, after))
    return out


def _create(
    inputs: Inputs,
    room: Room,
    room_id: str,
    view: GatewayView,
    code: Reason,
    reason: str,
    *,
    drifted: bool = False,
    old_name: str | None = None,
) -> ObjectChange:
    if not view.driver:
        return _no_driver(view, room.name, ", so it cannot create rooms")
    if room.who_answers != "everyone" and POLICY_METHOD not in view.methods:
        return _too_old(view, room.name, POLICY_METHOD, "who_answers")
    fields = [FieldChange("room:name", Op.ADD, None, room.name), FieldChange("room:members", Op.ADD, None, list(room.members))]
    if room.who_answers != "everyone":
        fields.append(FieldChange("room:who_answers", Op.ADD, None, room.who_answers))
    rename = (old_name, room.name) if old_name and old_name != room.name else None
    fields += _group_fields(inputs, [GroupEdit(m, add=room.name, rename=rename) for m in room.members])
    return ObjectChange(
        Kind.ROOM, room.name, Action.CREATE, code, f"{reason}; room id {room_id}", tuple(fields), drift=drifted, ref=room_id
    )


def _update(
    inputs: Inputs,
    room: Room,
    live: Mapping[str, Any],
    applied: Mapping[str, Any],
    action: Action,
    code: Reason,
    reason: str,
    room_id: str,
    view: GatewayView,
) -> ObjectChange:
    fields: list[FieldChange] = []
    live_members = sorted(local_members(live))

    def field(name: str, have: Any, want: Any) -> None:
        if have != want:
            drifted = drift.room_field_drifted(applied.get(name), have)
            fields.append(FieldChange(f"room:{name}", Op.CHANGE, have, want, drift=drifted))

    field("name", live.get("name"), room.name)
    field("members", live_members, sorted(room.members))
    field("who_answers", live_who_answers(live), room.who_answers)
    changed = {f.field for f in fields}
    if "room:members" in changed:
        if peer_members(live):
            return _err(
                room.name,
                Reason.PEER_MEMBERS,
                f"the live room has remote members "
                f"({', '.join(peer_members(live))}); the gateway refuses membership edits of rooms with "
                "peers: disband it and let apply create a new one",
                ref=room_id,
            )
        if MEMBERS_METHOD not in view.methods:
            return _too_old(view, room.name, MEMBERS_METHOD, "the member list", ref=room_id)
    if "room:who_answers" in changed and POLICY_METHOD not in view.methods:
        return _too_old(view, room.name, POLICY_METHOD, "who_answers", ref=room_id)
    if changed & {"room:members", "room:who_answers"} and not view.driver:
        return _no_driver(view, room.name, "", ref=room_id)
    old_names = tuple(n for n in {applied.get("name"), live.get("name")} if n and n != room.name)
    edits = [GroupEdit(m, add=room.name, rename=(old_names[0], room.name) if old_names else None) for m in room.members]
    gone = (set(applied.get("members") or []) | set(live_members)) - set(room.members)
    edits += [GroupEdit(m, remove=(room.name, *old_names)) for m in sorted(gone) if m in inputs.observed.live]
    fields += _group_fields(inputs, edits)
    if not fields and action is Action.UPDATE:
        action = Action.NOOP
    return ObjectChange(
        Kind.ROOM,
        room.name,
        action,
        code,
        f"{reason}; room id {room_id}",
        tuple(fields),
        drift=any(f.drift for f in fields),
        ref=room_id,
    )


def _plan_orphan(inputs: Inputs, name: str, view: GatewayView, problem: str) -> ObjectChange:
    entry = inputs.inventory.objects[room_key(name)]
    room_id = str(entry.get("room_id") or "")
    applied = entry.get("applied", {})
    if not inputs.options.prune:
        return ObjectChange(
            Kind.ROOM, name, Action.ORPHAN, Reason.REMOVED, "removed from the manifests; `apply --prune` disbands it", ref=room_id
        )
    if problem:
        return _pending(name, problem, ref=room_id)
    live = view.rooms.get(room_id)
    edits = [GroupEdit(m, remove=(name,)) for m in applied.get("members") or [] if m in inputs.observed.live]
    fields = tuple(_group_fields(inputs, edits))
    if live is None or live.get("disbanded_at"):
        return ObjectChange(
            Kind.ROOM,
            name,
            Action.RELEASE,
            Reason.ALREADY_GONE,
            "removed from the manifests and already disbanded",
            fields,
            ref=room_id,
        )
    if not view.driver:
        return _no_driver(view, name, ", so it cannot disband", ref=room_id)
    return ObjectChange(
        Kind.ROOM,
        name,
        Action.DELETE,
        Reason.PRUNED,
        "removed from the manifests (--prune): disbanded on the gateway (history kept there; the id is never reused)",
        fields,
        ref=room_id,
    )
