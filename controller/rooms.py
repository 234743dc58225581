"""Rooms: gateway-owned group chats converged over the gateway's `groups.*` JSON-RPC.

observe (read-only: capabilities, list) -> plan (ObjectChange kind "room") -> apply (create,
rename, members.update, policy.update, disband), then each local member's Bot Mode
`ui_meta['hermes-bots'].groups` mirrors its rooms by NAME (bot-mode-state.md section 3).

Identity: a room this fleet creates gets a stable id derived from fleet + room name
(`hf-<fleet hash>-<name hash>`, `-2`, `-3`… once an id is retired by a disband), so a create
whose reply was lost is found again by id, never made twice (`groups.create` is idempotent on
room_id). The inventory keeps `room/<name>` -> room_id, the last-applied fields and member ids.
Rules and contract points: docs/rooms.md; the wire contract: gateway-groups-contract.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import inventory as inv
from controller.adapters import fsio, profilemeta
from controller.adapters import gateway as gw
from controller.adapters.home import profile_dir
from controller.errors import ControllerError
from controller.planning import Action, FieldChange, ObjectChange

KIND = "room"
REQUIRED_METHODS = ("groups.list", "groups.state", "groups.create", "groups.rename", "groups.disband")
MEMBERS_METHOD = "groups.members.update"
POLICY_METHOD = "groups.policy.update"
DEFAULT_POLICY = {"mode": "legacy_bounded", "default_responder": "all", "leader_member_id": None,
                  "max_turns_per_window": 10, "window_seconds": 60}
PRUNE_CANCEL_ID = "hermes-fleet-prune"
LIST_LIMIT = 500


def room_key(name: str) -> str:
    return f"{KIND}/{name}"


def base_room_id(fleet: str, name: str) -> str:
    """Stable, per fleet and name; `hf-` + 8 hex of the fleet + 16 hex of fleet/name."""
    f = hashlib.sha256(fleet.encode()).hexdigest()[:8]
    n = hashlib.sha256(f"{fleet}/{name}".encode()).hexdigest()[:16]
    return f"hf-{f}-{n}"


def fleet_prefix(fleet: str) -> str:
    return f"hf-{hashlib.sha256(fleet.encode()).hexdigest()[:8]}-"


def _family(base: str, room_id: str) -> bool:
    return room_id == base or bool(re.fullmatch(re.escape(base) + r"-\d+", room_id))


def next_room_id(base: str, known: dict[str, dict[str, Any]]) -> str:
    """The first id of this family that no room (live or disbanded) uses: ids are never reusable."""
    if base not in known:
        return base
    n = 2
    while f"{base}-{n}" in known:
        n += 1
    return f"{base}-{n}"


# --- observing ------------------------------------------------------------------------------------


@dataclass
class Observed:
    """What the gateway said (read-only), or why it could not be asked."""

    error: str = ""  # non-empty: every room is pending with this reason
    origin: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)
    rooms: dict[str, dict[str, Any]] = field(default_factory=dict)  # room_id -> room (disbanded too)

    @property
    def methods(self) -> set[str]:
        return set(self.capabilities.get("methods") or [])

    @property
    def driver(self) -> bool:
        return self.capabilities.get("driver") is True


def needed(state: Any, inventory: inv.Inventory) -> bool:
    return bool(state.rooms) or any(k.startswith(f"{KIND}/") for k in inventory.objects)


def observe(root: Path, options: gw.GatewayOptions | None) -> Observed:
    """groups.capabilities, then every room (disbanded included). Never writes."""
    options = options or gw.GatewayOptions()
    try:
        with gw.open_session(root, options, writes=False) as session:
            caps = session.call("groups.capabilities")
            rooms: dict[str, dict[str, Any]] = {}
            offset: int | None = 0
            while offset is not None:
                page = session.call("groups.list", {"include_disbanded": True, "limit": LIST_LIMIT,
                                                    "offset": offset})
                for room in page.get("rooms") or []:
                    if isinstance(room, dict) and isinstance(room.get("room_id"), str):
                        rooms[room["room_id"]] = room
                nxt = page.get("next_offset")
                offset = nxt if isinstance(nxt, int) and not isinstance(nxt, bool) and nxt > offset else None
            return Observed(origin=session.label, capabilities=caps, rooms=rooms)
    except gw.GatewayIncompatible as exc:
        if exc.code == -32601 and exc.method == "groups.capabilities":
            return Observed(error="gateway too old: it has no groups.capabilities (Hermes 0.19 or older); update "
                            "Hermes on the machine that runs this home's gateway (`hermes update`), then restart "
                            "the gateway (`hermes gateway restart`)")
        return Observed(error=f"pending: gateway unusable: {exc}")
    except gw.GatewayError as exc:
        return Observed(error=f"pending: gateway unreachable: {exc}")


def capability_problem(obs: Observed) -> str:
    """Why this gateway cannot own rooms at all ("" when it can)."""
    missing = [m for m in REQUIRED_METHODS if m not in obs.methods]
    if missing:
        return (f"the gateway at {obs.origin} cannot own rooms: it does not offer {', '.join(missing)}; update "
                "Hermes on that machine (`hermes update`) and restart its gateway")
    return ""


# --- reading live rooms ---------------------------------------------------------------------------


def local_members(room: dict[str, Any]) -> dict[str, str]:
    """profile -> member_id, for a live room's local members."""
    out = {}
    for m in room.get("members") or []:
        target = m.get("target") or {}
        if target.get("kind", "local") == "local" and isinstance(m.get("profile"), str):
            out[m["profile"]] = str(m.get("member_id"))
    return out


def peer_members(room: dict[str, Any]) -> list[str]:
    return [str(m.get("profile")) for m in room.get("members") or [] if (m.get("target") or {}).get("kind") == "peer"]


def live_who_answers(room: dict[str, Any]) -> str:
    policy = room.get("responder_policy") or {}
    responder = policy.get("default_responder", "all")
    if responder == "leader":
        by_id = {v: k for k, v in local_members(room).items()}
        return f"lead:{by_id.get(policy.get('leader_member_id'), '?')}"
    return {"all": "everyone", "mentions_only": "auto"}.get(responder, f"({responder})")


def desired_policy(who: str, member_ids: dict[str, str], live: dict[str, Any] | None) -> dict[str, Any]:
    """The four-key responder policy; mode and rate limits are kept from the live room."""
    policy = {**DEFAULT_POLICY, **{k: v for k, v in (live or {}).items() if k in DEFAULT_POLICY}}
    if who == "everyone":
        policy.update(default_responder="all", leader_member_id=None)
    elif who == "auto":  # Desktop's "pick automatically" has no wire form; the contract's closest is mentions_only
        policy.update(default_responder="mentions_only", leader_member_id=None)
    else:
        policy.update(default_responder="leader", leader_member_id=member_ids[who.split(":", 1)[1]])
    return policy


# --- member bots' `groups` (Bot Mode metadata) ----------------------------------------------------


def groups_of(record: dict[str, Any] | None) -> list[str]:
    record = record or {}
    groups = record.get("groups")
    if isinstance(groups, list):
        return [str(g) for g in groups]
    legacy = record.get("group")
    return [str(legacy)] if isinstance(legacy, str) and legacy else []


def edit_groups(groups: list[str], *, add: str | None = None, remove: tuple[str, ...] = (),
                rename: tuple[str, str] | None = None) -> list[str]:
    """Only the names given are touched; order and every other name are kept."""
    out = list(groups)
    if rename and rename[0] in out and rename[1] not in out:
        out[out.index(rename[0])] = rename[1]
    out = [g for g in out if g not in remove]
    if add and add not in out:
        out.append(add)
    seen: set[str] = set()
    return [g for g in out if not (g in seen or seen.add(g))]


@dataclass(frozen=True)
class GroupEdit:
    bot: str
    add: str | None = None
    remove: tuple[str, ...] = ()
    rename: tuple[str, str] | None = None


def _group_fields(inputs: Any, edits: list[GroupEdit]) -> list[FieldChange]:
    out = []
    for edit in edits:
        live = inputs.live.get(edit.bot)
        record = live.meta.bot_record() if live is not None and live.meta is not None else None
        before = groups_of(record)
        after = edit_groups(before, add=edit.add, remove=edit.remove, rename=edit.rename)
        if after != before:
            out.append(FieldChange(f"groups:{edit.bot}", "change", before, after))
    return out


def write_groups(root: Path, edit: GroupEdit, retries: int = 3) -> None:
    """Read-modify-write the bot's profile.yaml: only `groups`/`group` change, revision bumped."""
    path = profile_dir(root, edit.bot)
    if not path.is_dir():
        return
    target = path / "profile.yaml"

    def write() -> None:
        meta = profilemeta.ProfileMeta.load(target)
        record = dict(meta.bot_record() or {})
        before = groups_of(record)
        after = edit_groups(before, add=edit.add, remove=edit.remove, rename=edit.rename)
        if after == before and isinstance(record.get("groups"), list):
            return
        record["groups"] = after
        record["group"] = after[0] if after else None
        meta.set_bot_record(record)
        meta.save(target)

    fsio.retrying(write, attempts=retries)


# --- planning -------------------------------------------------------------------------------------


def plan_rooms(inputs: Any, bot_actions: dict[str, Action]) -> tuple[list[ObjectChange], list[str]]:
    state = inputs.state
    obs: Observed | None = getattr(inputs, "rooms", None)
    changes: list[ObjectChange] = []
    notes: list[str] = []
    if obs is None and not needed(state, inputs.inventory):
        return changes, notes
    obs = obs or Observed(error="pending: gateway not consulted")
    problem = obs.error or capability_problem(obs)
    sources = {r.renamed_from: r.name for r in state.rooms.values() if r.renamed_from}
    for room in state.rooms.values():
        change = _plan_room(inputs, room, bot_actions, obs, problem)
        changes.append(change)
        if room.picture:
            notes.append(f"room {room.name!r}: picture not converged: the gateway has no room picture (Desktop keeps "
                         "it on each client)")
        if not room.detect_stop_directives:
            notes.append(f"room {room.name!r}: detect_stop_directives: false not converged: it is a Desktop room "
                         "setting, not a gateway one (the gateway always reads stop/halt/pause next to an @mention)")
    for key in sorted(k for k in inputs.inventory.objects if k.startswith(f"{KIND}/")):
        name = key.split("/", 1)[1]
        if name in state.rooms or (name in sources and room_key(sources[name]) not in inputs.inventory.objects):
            continue
        changes.append(_plan_orphan(inputs, name, obs, problem))
    return changes, notes


def _err(name: str, reason: str, origin: str = "", ref: str = "") -> ObjectChange:
    return ObjectChange(KIND, name, Action.ERROR, reason, origin=origin, ref=ref)


def _plan_room(inputs: Any, room: Any, bot_actions: dict[str, Action], obs: Observed, problem: str) -> ObjectChange:
    fleet = inputs.state.fleet
    name = room.name
    key = room_key(name)
    if key in inputs.foreign:
        return ObjectChange(KIND, name, Action.CONFLICT, f"room {name!r} is owned by fleet {inputs.foreign[key]!r}; "
                            "two fleets never manage one object")
    peers = [m for m in room.members if "/" in m]
    if peers:
        return _err(name, f"remote member(s) {', '.join(peers)}: seating a bot from another machine needs an operator "
                    "there (its gateway must report room_link.enabled and mint a grant with groups.peer.invite, then "
                    "this gateway registers it); hermes-fleet does not do that hand-off yet, see docs/rooms.md")
    waiting = [m for m in room.members if bot_actions.get(m) in (Action.CONFLICT, Action.ERROR)]
    if waiting:
        return _err(name, "waits for " + ", ".join(f"bot/{m}" for m in waiting))
    if problem:
        return _err(name, problem if problem.startswith(("pending", "gateway too old")) else f"pending: {problem}")
    entry = inputs.inventory.objects.get(key)
    renamed = False
    if entry is None and room.renamed_from:
        entry = inputs.inventory.objects.get(room_key(room.renamed_from))
        renamed = entry is not None
    live = obs.rooms.get(str(entry.get("room_id"))) if entry else None
    applied = (entry or {}).get("applied", {})
    base = base_room_id(fleet, name)
    if entry is not None and live is not None and not live.get("disbanded_at"):
        action, reason, room_id = Action.UPDATE, "renamed" if renamed else "managed by this fleet", live["room_id"]
    elif entry is not None:
        gone = "disbanded" if live else "gone from the gateway"
        room_id = next_room_id(base, obs.rooms)
        return _create(inputs, room, room_id, obs, f"room was {gone} outside hermes-fleet; creating a new one "
                       f"(room ids are never reused)", drift=True, old_name=applied.get("name"))
    else:
        bases = [base] + ([base_room_id(fleet, room.renamed_from)] if room.renamed_from else [])
        ours = sorted(rid for rid, r in obs.rooms.items() if not r.get("disbanded_at") and (
            any(_family(b, rid) for b in bases) or (rid.startswith(fleet_prefix(fleet)) and r.get("name") == name)))
        others = sorted(rid for rid, r in obs.rooms.items() if r.get("name") == name and not r.get("disbanded_at")
                        and not rid.startswith(fleet_prefix(fleet)) and not rid.startswith("hf-"))
        if ours:
            live = obs.rooms[ours[-1]]
            action, reason, room_id = Action.ADOPT, "this fleet's room id already exists (an earlier create's reply " \
                "was lost, or the inventory was reset)", live["room_id"]
        elif others and not inputs.adopt:
            return ObjectChange(KIND, name, Action.CONFLICT, f"a room named {name!r} exists on the gateway "
                                f"({', '.join(others)}) that this fleet does not own; re-run with --adopt to take it "
                                "over", ref=others[0])
        elif len(others) > 1:
            return ObjectChange(KIND, name, Action.CONFLICT, f"{len(others)} rooms are named {name!r} "
                                f"({', '.join(others)}); --adopt cannot choose one: rename or disband the others")
        elif others:
            live = obs.rooms[others[0]]
            action, reason, room_id = Action.ADOPT, "existing room taken over (--adopt)", others[0]
        else:
            return _create(inputs, room, next_room_id(base, obs.rooms), obs, "new room")
    return _update(inputs, room, live, applied, action, reason, room_id, obs)


def _create(inputs: Any, room: Any, room_id: str, obs: Observed, reason: str, *, drift: bool = False,
            old_name: str | None = None) -> ObjectChange:
    if not obs.driver:
        return _err(room.name, f"the gateway at {obs.origin} has no Group Chat worker running (driver: false), so it "
                    "cannot create rooms; restart the gateway on that machine (`hermes gateway restart`)")
    if room.who_answers != "everyone" and POLICY_METHOD not in obs.methods:
        return _err(room.name, _too_old(obs, POLICY_METHOD, "who_answers"))
    fields = [FieldChange("room:name", "add", None, room.name), FieldChange("room:members", "add", None,
                                                                            list(room.members))]
    if room.who_answers != "everyone":
        fields.append(FieldChange("room:who_answers", "add", None, room.who_answers))
    rename = (old_name, room.name) if old_name and old_name != room.name else None
    edits = [GroupEdit(m, add=room.name, rename=rename) for m in room.members]
    fields += _group_fields(inputs, edits)
    return ObjectChange(KIND, room.name, Action.CREATE, f"{reason}; room id {room_id}", tuple(fields), drift=drift,
                        ref=room_id)


def _too_old(obs: Observed, method: str, what: str) -> str:
    return (f"the gateway at {obs.origin} has no {method}, so {what} cannot be changed there; update Hermes on that "
            "machine (`hermes update`) and restart its gateway")


def _update(inputs: Any, room: Any, live: dict[str, Any], applied: dict[str, Any], action: Action, reason: str,
            room_id: str, obs: Observed) -> ObjectChange:
    fields: list[FieldChange] = []
    live_members = sorted(local_members(live))
    want_members = sorted(room.members)
    live_who = live_who_answers(live)

    def field(name: str, have: Any, want: Any) -> None:
        if have != want:
            was = applied.get(name)
            fields.append(FieldChange(f"room:{name}", "change", have, want, drift=was is not None and was != have))

    field("name", live.get("name"), room.name)
    field("members", live_members, want_members)
    field("who_answers", live_who, room.who_answers)
    changed = {f.field for f in fields}
    if "room:members" in changed:
        if peer_members(live):
            return _err(room.name, f"the live room has remote members ({', '.join(peer_members(live))}); the gateway "
                        "refuses membership edits of rooms with peers: disband it and let apply create a new one",
                        ref=room_id)
        if MEMBERS_METHOD not in obs.methods:
            return _err(room.name, _too_old(obs, MEMBERS_METHOD, "the member list"), ref=room_id)
    if "room:who_answers" in changed and POLICY_METHOD not in obs.methods:
        return _err(room.name, _too_old(obs, POLICY_METHOD, "who_answers"), ref=room_id)
    if changed & {"room:members", "room:who_answers"} and not obs.driver:
        return _err(room.name, f"the gateway at {obs.origin} has no Group Chat worker running (driver: false); restart "
                    "the gateway on that machine (`hermes gateway restart`)", ref=room_id)
    old_names = tuple(n for n in {applied.get("name"), live.get("name")} if n and n != room.name)
    edits = [GroupEdit(m, add=room.name, rename=(old_names[0], room.name) if old_names else None)
             for m in room.members]
    gone = (set(applied.get("members") or []) | set(live_members)) - set(room.members)
    edits += [GroupEdit(m, remove=(room.name, *old_names)) for m in sorted(gone) if m in inputs.live]
    fields += _group_fields(inputs, edits)
    drift = any(f.drift for f in fields)
    if not fields and action is Action.UPDATE:
        action = Action.NOOP
    return ObjectChange(KIND, room.name, action, f"{reason}; room id {room_id}", tuple(fields), drift=drift, ref=room_id)


def _plan_orphan(inputs: Any, name: str, obs: Observed, problem: str) -> ObjectChange:
    entry = inputs.inventory.objects[room_key(name)]
    room_id = str(entry.get("room_id") or "")
    applied = entry.get("applied", {})
    edits = [GroupEdit(m, remove=(name,)) for m in applied.get("members") or [] if m in inputs.live]
    if not inputs.prune:
        return ObjectChange(KIND, name, Action.ORPHAN, "removed from the manifests; `apply --prune` disbands it",
                            ref=room_id)
    if problem:
        return _err(name, problem if problem.startswith(("pending", "gateway too old")) else f"pending: {problem}",
                    ref=room_id)
    live = obs.rooms.get(room_id)
    fields = tuple(_group_fields(inputs, edits))
    if live is None or live.get("disbanded_at"):
        return ObjectChange(KIND, name, Action.RELEASE, "removed from the manifests and already disbanded", fields,
                            ref=room_id)
    if not obs.driver:
        return _err(name, f"the gateway at {obs.origin} has no Group Chat worker running (driver: false), so it cannot "
                    "disband; restart the gateway on that machine", ref=room_id)
    return ObjectChange(KIND, name, Action.DELETE, "removed from the manifests (--prune): disbanded on the gateway "
                        "(history kept there; the id is never reused)", fields, ref=room_id)


# --- applying -------------------------------------------------------------------------------------


class RoomApplyError(ControllerError):
    pass


def apply_rooms(root: Path, changes: list[ObjectChange], inputs: Any, failed_bots: set[str],
                report: Any) -> None:
    """Carry out the room changes, in plan order; `report(change, ok, error)` records each outcome."""
    if not changes:
        return
    options = getattr(inputs, "gateway", None) or gw.GatewayOptions()
    session: gw.Session | None = None
    try:
        for change in changes:
            members = _members_of(inputs, change)
            waiting = sorted(m for m in members if m in failed_bots)
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
            except (gw.GatewayError, ControllerError, OSError, ValueError) as exc:
                report(change, False, str(exc))
    finally:
        if session is not None:
            session.close()


def _members_of(inputs: Any, change: ObjectChange) -> list[str]:
    room = inputs.state.rooms.get(change.name)
    return list(room.members) if room is not None else []


def _apply_room(root: Path, change: ObjectChange, inputs: Any, session: gw.Session | None) -> None:
    inventory = inputs.inventory
    name = change.name
    if change.action in (Action.DELETE, Action.RELEASE):
        entry = inventory.objects.get(room_key(name), {})
        if change.action is Action.DELETE:
            assert session is not None
            _disband(session, change.ref)
        for member in entry.get("applied", {}).get("members") or []:
            write_groups(root, GroupEdit(member, remove=(name,)))
        inventory.objects.pop(room_key(name), None)
        return
    assert session is not None
    room = inputs.state.rooms[name]
    old_entry = inventory.objects.get(room_key(name)) or (
        inventory.objects.get(room_key(room.renamed_from)) if room.renamed_from else None) or {}
    live = _create_room(session, change.ref, room) if change.action is Action.CREATE else _read(session, change.ref)
    live = _converge(session, live, room)
    # Mirror the room on its member bots: the new name in, old names (renames, removed members) out.
    old_names = tuple(n for n in {old_entry.get("applied", {}).get("name"), *(
        str(f.old) for f in change.fields if f.field == "room:name" and f.old)} if n and n != name)
    for member in room.members:
        write_groups(root, GroupEdit(member, add=name, rename=(old_names[0], name) if old_names else None))
    previous = set(old_entry.get("applied", {}).get("members") or []) | {
        m for f in change.fields if f.field == "room:members" and f.old for m in f.old}
    for member in sorted(previous - set(room.members)):
        write_groups(root, GroupEdit(member, remove=(name, *old_names)))
    if room.renamed_from:
        inventory.objects.pop(room_key(room.renamed_from), None)
    entry = inventory.objects.setdefault(room_key(name), {})
    entry["room_id"] = live["room_id"]
    entry["applied"] = {"name": room.name, "members": sorted(room.members), "who_answers": room.who_answers}
    entry["member_ids"] = local_members(live)
    verb = {Action.CREATE: "created", Action.ADOPT: "adopted"}.get(change.action, "updated")
    entry.setdefault(f"{verb}_at", inv.now_iso())
    entry["updated_at"] = inv.now_iso()


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


def _member(profile: str, member_id: str) -> dict[str, Any]:
    return {"member_id": member_id, "profile": profile, "handle": profile,
            "target": {"kind": "local", "profile": profile}}


def _create_room(session: gw.Session, room_id: str, room: Any) -> dict[str, Any]:
    members = [_member(p, p) for p in room.members]
    try:
        result = session.call("groups.create", {"room_id": room_id, "name": room.name, "members": members})
    except gw.GatewayOutcomeUnknown as lost:
        # Resolve by reading state (a fresh connection), never by sending the create again.
        live = _try_read(session, room_id)
        if live is not None and live.get("name") == room.name and set(local_members(live)) == set(room.members):
            return live
        raise gw.GatewayOutcomeUnknown(f"groups.create {room_id}: the reply was lost and the room is "
                                       f"{'different' if live else 'not there'} on a re-read") from lost
    live = result.get("room")
    if not isinstance(live, dict):
        raise RoomApplyError(f"groups.create {room_id}: no room in the reply")
    return live


def _event_id(op: str, room_id: str, revision: int, payload: Any) -> str:
    """Deterministic per (room, revision, payload): a retry of the same write replays, never doubles."""
    digest = hashlib.sha256(json.dumps([room_id, revision, payload], sort_keys=True).encode()).hexdigest()[:24]
    return f"hf-{op}-{digest}"


def _write(session: gw.Session, method: str, params: dict[str, Any], room_id: str,
           done: Any) -> dict[str, Any]:
    """One revision-fenced write; a lost reply is resolved by re-reading the room (`done(room)`)."""
    try:
        room = session.call(method, params).get("room")
    except gw.GatewayOutcomeUnknown as lost:
        room = _read(session, room_id)
        if done(room):
            return room
        raise gw.GatewayOutcomeUnknown(f"{method} {room_id}: the reply was lost and a re-read shows the change was "
                                       "not made") from lost
    if not isinstance(room, dict):
        raise RoomApplyError(f"{method} {room_id}: no room in the reply")
    return room


def _converge(session: gw.Session, live: dict[str, Any], room: Any) -> dict[str, Any]:
    """rename, then who-answers / members in the order the gateway accepts (a leader is never removed first)."""
    room_id = live["room_id"]
    if live.get("name") != room.name:
        payload = {"room_id": room_id, "name": room.name, "expected_revision": live["revision"]}
        payload["event_id"] = _event_id("rename", room_id, live["revision"], room.name)
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


def _set_members(session: gw.Session, live: dict[str, Any], room: Any) -> dict[str, Any]:
    room_id = live["room_id"]
    have = local_members(live)
    used = set(have.values()) | {str(m.get("member_id")) for m in live.get("retired_members") or []
                                 if isinstance(m, dict)}
    members = []
    for profile in room.members:
        member_id = have.get(profile)
        if member_id is None:
            member_id, n = profile, 2
            while member_id in used:  # retired member ids cannot be reused
                member_id, n = f"{profile}-{n}", n + 1
            used.add(member_id)
        members.append(_member(profile, member_id))
    payload = {"room_id": room_id, "expected_revision": live["revision"], "members": members,
               "event_id": _event_id("members", room_id, live["revision"], members)}
    want = set(room.members)
    return _write(session, MEMBERS_METHOD, payload, room_id, lambda r: set(local_members(r)) == want)


def _set_policy(session: gw.Session, live: dict[str, Any], who: str, member_ids: dict[str, str]) -> dict[str, Any]:
    room_id = live["room_id"]
    policy = desired_policy(who, member_ids, live.get("responder_policy"))
    params = {"room_id": room_id, "event_id": _event_id("policy", room_id, live["revision"], policy),
              "expected_revision": live["revision"], "policy": policy}
    return _write(session, POLICY_METHOD, params, room_id, lambda r: live_who_answers(r) == who)


def _disband(session: gw.Session, room_id: str) -> None:
    try:
        session.call("groups.disband", {"room_id": room_id, "cancel_id": PRUNE_CANCEL_ID})
    except gw.GatewayOutcomeUnknown as lost:
        room = _try_read(session, room_id, include_disbanded=True)
        if room is None or room.get("disbanded_at"):
            return
        raise gw.GatewayOutcomeUnknown(f"groups.disband {room_id}: the reply was lost and the room is still live "
                                       "on a re-read") from lost


# --- status ---------------------------------------------------------------------------------------


def status_drift(entry: dict[str, Any], obs: Observed | None) -> list[str] | str:
    """Which managed room fields differ live from the last apply (or why that is unknown)."""
    if obs is None or obs.error:
        return (obs.error if obs else "pending: gateway not consulted")
    live = obs.rooms.get(str(entry.get("room_id")))
    if live is None or live.get("disbanded_at"):
        return "missing (disbanded or gone from the gateway)"
    applied = entry.get("applied", {})
    now = {"name": live.get("name"), "members": sorted(local_members(live)), "who_answers": live_who_answers(live)}
    return [k for k, v in applied.items() if now.get(k) != v]
