"""Planning rooms: gateway-owned group chats against the manifests (pure).

Reads only what observing asked the gateway (a GatewayView); a gateway that could not be asked
makes every room pending, never assumed. Member bots' Bot Mode `groups` lists are planned with
the room (`groups:<bot>` fields); members on other machines with their seats (`seat:<peer/bot>`
fields). A bot of this machine seated in another machine's room is planned here too, as that
room's `remote-seat`: this machine only checks that its own gateway can serve the seat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from controller.core import drift
from controller.core.inventory import room_key, split_key
from controller.core.rooms import (
    GRANT_FINGERPRINTS,
    MEMBERS_METHOD,
    POLICY_METHOD,
    REGISTER_METHOD,
    RENAME_FENCE,
    RENAME_METHOD,
    RENEW_BEFORE,
    GroupEdit,
    base_room_id,
    capability_problem,
    converge_steps,
    fleet_prefix,
    groups_of,
    in_family,
    live_fields,
    local_members,
    missing_feature,
    needed,
    remote_members,
    seat_routes,
)
from controller.core.types import Action, FieldChange, GatewayView, Inputs, Kind, ObjectChange, Op, Reason
from controller.hermes.naming import peer_env_key
from controller.manifests.desired import Seat
from controller.manifests.models import Room


def plan_rooms(inputs: Inputs, bot_actions: Mapping[str, Action]) -> tuple[list[ObjectChange], list[str]]:
    state = inputs.state
    changes: list[ObjectChange] = []
    notes: list[str] = []
    if not inputs.options.rooms:
        if needed(state, inputs.inventory):
            notes.append("rooms were left out (--no-rooms): the gateway was not asked and no room is changed")
        return changes, notes
    view = inputs.observed.rooms
    if view is None and not needed(state, inputs.inventory):
        return changes, notes
    view = view or GatewayView(error="pending: gateway not consulted")
    problem = gateway_problem(view)
    sources = {r.renamed_from: r.name for r in state.rooms.values() if r.renamed_from}
    for room in state.rooms.values():
        changes.append(plan_room(inputs, room, bot_actions, view, problem))
        if room.picture:
            notes.append(
                f"room {room.name!r}: picture not converged: the gateway has no room picture (Desktop keeps it on each client)"
            )
        if not room.detect_stop_directives:
            notes.append(
                f"room {room.name!r}: detect_stop_directives: false not converged: it is a Desktop room "
                "setting, not a gateway one (the gateway always reads stop/halt/pause next to an @mention)"
            )
    for seat in state.seats:
        changes.append(_plan_seat(seat, bot_actions, view, problem))
    for key in inputs.inventory.keys_of("room"):
        name = split_key(key)[1]
        if name in state.rooms or (name in sources and room_key(sources[name]) not in inputs.inventory.objects):
            continue
        changes.append(_plan_orphan(inputs, name, view, problem))
    roster_changes = [c for c in changes if c.action in (Action.CREATE, Action.UPDATE, Action.ADOPT) and c.kind is Kind.ROOM]
    if view.stray_profiles and any(f.field == "room:members" for c in roster_changes for f in c.fields):
        notes.append(
            f"profiles/ holds folders that are not profile names ({', '.join(view.stray_profiles)}): some gateway "
            "versions read every folder there as a profile and refuse every room roster while one exists; if a "
            "room create or member change fails, move them out of profiles/"
        )
    return changes, notes


def _err(name: str, code: Reason, reason: str, ref: str = "") -> ObjectChange:
    return ObjectChange(kind=Kind.ROOM, name=name, action=Action.ERROR, code=code, reason=reason, ref=ref)


@dataclass(frozen=True)
class Blocked:
    """Why no room can be planned against this gateway: its code and the reason shown."""

    code: Reason  # GATEWAY_PENDING (it could not be asked) or GATEWAY_UNSUPPORTED (it cannot own rooms)
    reason: str


def gateway_problem(view: GatewayView) -> Blocked | None:
    """What keeps every room from being planned: the gateway could not be asked, or cannot own rooms."""
    if view.error:
        return Blocked(view.error_code, view.error)
    missing = capability_problem(view)
    return Blocked(Reason.GATEWAY_UNSUPPORTED, f"pending: {missing}") if missing else None


def _pending(name: str, problem: Blocked, ref: str = "") -> ObjectChange:
    return _err(name, problem.code, problem.reason, ref)


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


def _peers(room: Room) -> list[str]:
    return [m for m in room.members if "/" in m]


def _peer_problem(inputs: Inputs, room: Room, view: GatewayView) -> ObjectChange | None:
    """Why the members on other machines cannot be seated from here (None when they can)."""
    peers = _peers(room)
    if not peers:
        return None
    keys = inputs.observed.env_values.get("", {})
    for member in peers:
        peer = member.partition("/")[0]
        if peer_env_key(peer) not in keys:
            missing = inputs.observed.secret_errors.get("", "")
            return _err(
                room.name,
                Reason.SECRET_UNAVAILABLE,
                f"remote member {member}: the key of peer {peer!r} is not available on this machine, and seating "
                f"the member needs it to ask that machine for an invitation{': ' + missing if missing else ''}",
            )
    if REGISTER_METHOD not in view.methods:
        return _err(
            room.name,
            Reason.REMOTE_MEMBERS,
            f"remote member(s) {', '.join(peers)}: the gateway at {view.origin} has no {REGISTER_METHOD}, so it "
            "cannot seat bots from other machines; update Hermes on this machine (`hermes update`) and restart its gateway",
        )
    return None


def plan_room(
    inputs: Inputs, room: Room, bot_actions: Mapping[str, Action], view: GatewayView, problem: Blocked | None
) -> ObjectChange:
    """One room of the manifests against the gateway (also used to re-plan a room mid-apply)."""
    fleet = inputs.state.fleet
    name = room.name
    key = room_key(name)
    foreign = inputs.observed.foreign
    if key in foreign:
        return ObjectChange(
            kind=Kind.ROOM,
            name=name,
            action=Action.CONFLICT,
            code=Reason.FOREIGN_OWNER,
            reason=f"room {name!r} is owned by fleet {foreign[key]!r}; two fleets never manage one object",
        )
    waiting = [m for m in room.members if bot_actions.get(m) in (Action.CONFLICT, Action.ERROR)]
    if waiting:
        return _err(name, Reason.WAITS_FOR_BOT, "waits for " + ", ".join(f"bot/{m}" for m in waiting))
    if problem:
        return _pending(name, problem)
    seat_problem = _peer_problem(inputs, room, view)
    if seat_problem is not None:
        return seat_problem
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
        return _update(
            inputs,
            room,
            live=live,
            entry=entry,
            action=Action.UPDATE,
            code=code,
            reason=reason,
            room_id=live["room_id"],
            view=view,
        )
    if entry is not None:
        gone = "disbanded" if live else "gone from the gateway"
        return _create(
            inputs,
            room,
            base=base,
            view=view,
            code=Reason.RECREATED,
            reason=f"room was {gone} outside hermes-fleet; creating a new one (room ids are never reused)",
            drifted=True,
            old_name=applied.get("name"),
        )
    bases = [base] + ([base_room_id(fleet, room.renamed_from)] if room.renamed_from else [])
    ours = sorted(
        (
            r
            for rid, r in view.rooms.items()
            if not r.get("disbanded_at")
            and (any(in_family(b, rid) for b in bases) or (rid.startswith(fleet_prefix(fleet)) and r.get("name") == name))
        ),
        key=lambda r: (float(r.get("created_at") or 0), str(r.get("room_id"))),
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
        live = ours[-1]
        return _update(
            inputs,
            room,
            live=live,
            entry={},
            action=Action.ADOPT,
            code=Reason.ID_EXISTS,
            reason="this fleet's room id already exists (an earlier create's reply was lost, or the inventory was reset)",
            room_id=live["room_id"],
            view=view,
        )
    if others and not inputs.options.adopt:
        return ObjectChange(
            kind=Kind.ROOM,
            name=name,
            action=Action.CONFLICT,
            code=Reason.UNMANAGED,
            reason=f"a room named {name!r} exists on the "
            f"gateway ({', '.join(others)}) that this fleet does not own; re-run with --adopt to take "
            "it over",
            ref=others[0],
        )
    if len(others) > 1:
        return ObjectChange(
            kind=Kind.ROOM,
            name=name,
            action=Action.CONFLICT,
            code=Reason.AMBIGUOUS,
            reason=f"{len(others)} rooms are named "
            f"{name!r} ({', '.join(others)}); --adopt cannot choose one: rename or disband the others",
        )
    if others:
        return _update(
            inputs,
            room,
            live=view.rooms[others[0]],
            entry={},
            action=Action.ADOPT,
            code=Reason.ADOPTED,
            reason="existing room taken over (--adopt)",
            room_id=others[0],
            view=view,
        )
    return _create(inputs, room, base=base, view=view, code=Reason.NEW, reason="new room")


def _group_fields(inputs: Inputs, edits: list[GroupEdit]) -> list[FieldChange]:
    out = []
    for edit in edits:
        live = inputs.observed.live.get(edit.bot)
        before = groups_of(live.meta if live is not None else None)
        after = edit.applied_to(before)
        if after != before:
            out.append(FieldChange(field=f"groups:{edit.bot}", op=Op.CHANGE, old=before, new=after))
    return out


def _create(
    inputs: Inputs,
    room: Room,
    *,
    base: str,
    view: GatewayView,
    code: Reason,
    reason: str,
    drifted: bool = False,
    old_name: str | None = None,
) -> ObjectChange:
    if not view.driver:
        return _no_driver(view, room.name, ", so it cannot create rooms")
    if room.who_answers != "everyone" and POLICY_METHOD not in view.methods:
        return _too_old(view, room.name, POLICY_METHOD, "who_answers")
    if _peers(room) and (blind := missing_feature(view, GRANT_FINGERPRINTS)):
        return _err(room.name, Reason.GATEWAY_UNSUPPORTED, f"remote members must be seated, but {blind}")
    # In the order apply writes: create, register each seat, then the policy.
    fields = [
        FieldChange(field="room:name", op=Op.ADD, old=None, new=room.name),
        FieldChange(field="room:members", op=Op.ADD, old=None, new=list(room.members)),
    ]
    fields += [FieldChange(field=f"seat:{m}", op=Op.ADD, old=None, new="invited and registered") for m in _peers(room)]
    if room.who_answers != "everyone":
        fields.append(FieldChange(field="room:who_answers", op=Op.ADD, old=None, new=room.who_answers))
    rename = (old_name, room.name) if old_name and old_name != room.name else None
    local = [m for m in room.members if "/" not in m]
    fields += _group_fields(inputs, [GroupEdit(m, add=room.name, rename=rename) for m in local])
    return ObjectChange(
        kind=Kind.ROOM,
        name=room.name,
        action=Action.CREATE,
        code=code,
        reason=f"{reason}; room id {base}-<random>",
        fields=tuple(fields),
        drift=drifted,
        ref=base,  # the id family: applying picks the random suffix
    )


def _seat_fields(
    inputs: Inputs, room: Room, live: Mapping[str, Any], entry: Mapping[str, Any], view: GatewayView
) -> tuple[list[FieldChange], list[str]]:
    """Seats of kept peer members that need a (new) grant: no route, a route that needs
    reauthorization, or this fleet's grant close to its hard expiry. A seat the room's gateway
    refused is retried after its pause (`retry_after`, recorded by apply); until then it is
    listed as waiting, with the refusal."""
    if live["room_id"] not in view.routes:
        return [], []  # the gateway said nothing about routes (no worker): nothing to judge
    routes = seat_routes(view.routes[live["room_id"]], live)
    recorded = entry.get("seats") or {}
    now = inputs.now.timestamp()
    out: list[FieldChange] = []
    waiting: list[str] = []
    for key in sorted(remote_members(live)):
        if key not in room.members:
            continue
        need = _seat_need(routes.get(key), recorded.get(key) or {}, now)
        if need is None:
            continue
        mine = recorded.get(key) or {}
        retry = mine.get("retry_after")
        if mine.get("pending") and isinstance(retry, int | float) and now < retry:
            when = datetime.fromtimestamp(retry, UTC).strftime("%Y-%m-%d %H:%M UTC")
            waiting.append(f"remote member {key} is not seated ({mine['pending']}); tried again after {when}")
            continue
        out.append(
            FieldChange(
                field=f"seat:{key}",
                op=Op.CHANGE,
                old=need,
                new="renewed" if need.startswith("grant ends") else "invited and registered",
            )
        )
    return out, waiting


def _seat_need(route: Mapping[str, Any] | None, mine: Mapping[str, Any], now: float) -> str | None:
    """Why a seat needs a new grant (None when its route is fine)."""
    if route is None:
        return "not registered"
    if route.get("status") == "needs_reauthorization":
        return "needs reauthorization"
    ends_at = mine.get("status_expires_at")
    if (
        mine.get("grant_sha256") == route.get("grant_sha256")
        and isinstance(ends_at, int | float)
        and now >= ends_at - RENEW_BEFORE
    ):
        return f"grant ends {datetime.fromtimestamp(ends_at, UTC).strftime('%Y-%m-%d')}"
    return None


def _update(
    inputs: Inputs,
    room: Room,
    *,
    live: Mapping[str, Any],
    entry: Mapping[str, Any],
    action: Action,
    code: Reason,
    reason: str,
    room_id: str,
    view: GatewayView,
) -> ObjectChange:
    applied = entry.get("applied", {})
    fields: list[FieldChange] = []
    have = live_fields(live)
    # Exactly the writes apply sends, in its order (core.rooms.converge_steps), each as one field.
    steps = converge_steps(live, room.name, room.members, room.who_answers)
    for step in steps:
        key = step.field.partition(":")[2]
        drifted = key in have and drift.room_field_drifted(applied.get(key), have[key])
        fields.append(FieldChange(field=step.field, op=Op.CHANGE, old=step.old, new=step.new, drift=drifted))
    changed = {
        "room:name" if s.method == RENAME_METHOD else "room:members" if s.method == MEMBERS_METHOD else "room:who_answers"
        for s in steps
    }
    peers = sorted(remote_members(live)) or _peers(room)
    if changed & {"room:members", "room:who_answers"} and peers:
        what = "members" if "room:members" in changed else "who_answers"
        return _err(
            room.name,
            Reason.PEER_MEMBERS,
            f"the room's {what} must change, but it has members on other machines ({', '.join(peers)}) and the "
            "gateway refuses member and who-answers changes of such rooms (groups.members.update: "
            "room_membership_peer_unsupported; groups.policy.update: peer responder policy replication is "
            "unsupported); to get there, disband it in the Desktop (apply then creates it anew, as drift), or give "
            "it a new name without renamed_from and run `apply --prune` (a new room is made, the old one disbanded)",
            ref=room_id,
        )
    if "room:members" in changed and MEMBERS_METHOD not in view.methods:
        return _too_old(view, room.name, MEMBERS_METHOD, "the member list", ref=room_id)
    if "room:who_answers" in changed and POLICY_METHOD not in view.methods:
        return _too_old(view, room.name, POLICY_METHOD, "who_answers", ref=room_id)
    if "room:name" in changed and (unfenced := missing_feature(view, RENAME_FENCE)):
        return _err(room.name, Reason.GATEWAY_UNSUPPORTED, f"the room must be renamed, but {unfenced}", room_id)
    seats, waiting = _seat_fields(inputs, room, live, entry, view)
    if seats and (blind := missing_feature(view, GRANT_FINGERPRINTS)):
        return _err(room.name, Reason.GATEWAY_UNSUPPORTED, f"a remote member must be seated, but {blind}", room_id)
    if (changed & {"room:members", "room:who_answers"} or seats) and not view.driver:
        return _no_driver(view, room.name, "", ref=room_id)
    fields += seats
    old_names = tuple(n for n in {applied.get("name"), live.get("name")} if n and n != room.name)
    local = [m for m in room.members if "/" not in m]
    edits = [GroupEdit(m, add=room.name, rename=(old_names[0], room.name) if old_names else None) for m in local]
    gone = (set(applied.get("members") or []) | set(local_members(live))) - set(local)
    edits += [GroupEdit(m, remove=(room.name, *old_names)) for m in sorted(gone) if m in inputs.observed.live]
    fields += _group_fields(inputs, edits)
    if waiting and not fields:
        return _err(room.name, Reason.GATEWAY_PENDING, "pending: " + "; ".join(waiting), room_id)
    if not fields and action is Action.UPDATE:
        action = Action.NOOP
    return ObjectChange(
        kind=Kind.ROOM,
        name=room.name,
        action=action,
        code=code,
        reason=f"{reason}; room id {room_id}" + "".join(f"; {w}" for w in waiting),
        fields=tuple(fields),
        drift=any(f.drift for f in fields),
        ref=room_id,
    )


def replan(inputs: Inputs, room: Room, fresh: Mapping[str, Any]) -> ObjectChange:
    """The room planned again against one fresh read of it (after the gateway refused a write
    because the room's revision changed under us). Pure: the read comes in as a value."""
    view = inputs.observed.rooms or GatewayView()
    view = dataclasses.replace(view, rooms={**view.rooms, str(fresh.get("room_id")): fresh})
    return plan_room(inputs, room, {}, view, gateway_problem(view))


SEAT_FIXES = {
    "durable_run_storage_required": (
        "this gateway keeps no durable run records, which RoomLink needs: enable its API server "
        "(API_SERVER_ENABLED, API_SERVER_KEY) and restart the gateway (`hermes gateway restart`)"
    ),
    "gateway_roomlink_secret_unavailable": (
        "this gateway cannot issue RoomLink grants for the bot: check that the gateway serves the profile, that its "
        "approvals.mode is manual or smart (remote work is refused with approvals off), and that the gateway can "
        "write <root>/.room-link-grant-secret; then restart the gateway (`hermes gateway restart`)"
    ),
}


def _plan_seat(seat: Seat, bot_actions: Mapping[str, Action], view: GatewayView, problem: Blocked | None) -> ObjectChange:
    """This machine's half of a seat: its gateway must be able to serve the bot over RoomLink."""
    where = f"bot/{seat.bot} is a member ({seat.peer}/{seat.bot}) of room {seat.room!r}, which the gateway of " + (
        f"host {seat.room_host!r}" if seat.room_host else "another machine"
    )
    if bot_actions.get(seat.bot) in (Action.CONFLICT, Action.ERROR):
        return _err(seat.room, Reason.WAITS_FOR_BOT, f"{where} owns; waits for bot/{seat.bot}")
    if bot_actions.get(seat.bot) is Action.CREATE:
        return ObjectChange(
            kind=Kind.ROOM,
            name=seat.room,
            action=Action.NOOP,
            code=Reason.REMOTE_SEAT,
            reason=f"{where} converges; bot/{seat.bot} is created by this apply, the next plan checks that this gateway "
            "serves it (a gateway picks up a new profile when it restarts: `hermes gateway restart`)",
        )
    if problem:
        return _pending(seat.room, problem)
    link = view.room_links.get(seat.bot) or {}
    endpoint = link.get("endpoint") or {}
    fix = ""
    if not link:
        fix = "the gateway said nothing about RoomLink for it; update Hermes on this machine (`hermes update`)"
    elif link.get("enabled") is not True:
        reason = str(link.get("reason") or "unknown")
        fix = f"RoomLink is off for it ({reason}): " + SEAT_FIXES.get(reason, "see the gateway's log")
    elif endpoint.get("available") is not True:
        why = str(endpoint.get("reason") or "unknown")
        fix = (
            f"the gateway advertises no RoomLink endpoint ({why}): set gateway.room_link_url in the config.yaml of "
            f"bot/{seat.bot} (or of the root) to this machine's API server as other machines reach it, https:// "
            "(plain http only for loopback), then restart the gateway"
        )
    if fix:
        return _err(seat.room, Reason.GATEWAY_UNSUPPORTED, f"{where} owns, cannot be served by this gateway: {fix}")
    return ObjectChange(
        kind=Kind.ROOM,
        name=seat.room,
        action=Action.NOOP,
        code=Reason.REMOTE_SEAT,
        reason=f"{where} converges; this gateway serves the bot at {endpoint.get('url')}",
    )


def _plan_orphan(inputs: Inputs, name: str, view: GatewayView, problem: Blocked | None) -> ObjectChange:
    entry = inputs.inventory.objects[room_key(name)]
    room_id = str(entry.get("room_id") or "")
    applied = entry.get("applied", {})
    if not inputs.options.prune:
        return ObjectChange(
            kind=Kind.ROOM,
            name=name,
            action=Action.ORPHAN,
            code=Reason.REMOVED,
            reason="removed from the manifests; `apply --prune` disbands it",
            ref=room_id,
        )
    if problem:
        return _pending(name, problem, ref=room_id)
    live = view.rooms.get(room_id)
    edits = [GroupEdit(m, remove=(name,)) for m in applied.get("members") or [] if m in inputs.observed.live]
    fields = tuple(_group_fields(inputs, edits))
    if live is None or live.get("disbanded_at"):
        return ObjectChange(
            kind=Kind.ROOM,
            name=name,
            action=Action.RELEASE,
            code=Reason.ALREADY_GONE,
            reason="removed from the manifests and already disbanded",
            fields=fields,
            ref=room_id,
        )
    if not view.driver:
        return _no_driver(view, name, ", so it cannot disband", ref=room_id)
    return ObjectChange(
        kind=Kind.ROOM,
        name=name,
        action=Action.DELETE,
        code=Reason.PRUNED,
        reason="removed from the manifests (--prune): disbanded on the gateway (history kept there; the id is never reused)",
        fields=fields,
        ref=room_id,
    )
