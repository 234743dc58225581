"""Applying rooms over the gateway's `groups.*` JSON-RPC, then mirroring them on member bots.

create, rename, members.update, policy.update, disband, and for members on other machines their
seats (an invitation from the member's gateway, then `groups.peer.register`). Every write is
revision-fenced and carries a deterministic event id; a lost reply is settled by reading the room,
never by sending the write again. A write refused because the room's revision moved (someone
edited it meanwhile) re-reads the room, plans it again and goes on, a bounded number of times;
then the room is reported as a conflict (exit 3) with what changed (docs/hermes/gateway.md,
docs/rooms.md).
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from controller.adapters import fsio, home, profilemeta, roomlink
from controller.adapters import gateway as gw
from controller.adapters import inventory as inventory_file
from controller.core.inventory import room_key
from controller.core.planning.rooms import replan
from controller.core.rooms import (
    MEMBERS_METHOD,
    POLICY_METHOD,
    PRUNE_CANCEL_ID,
    RENAME_FENCE,
    RENAME_METHOD,
    SEAT_STATUS_TTL,
    SEAT_TTL,
    GroupEdit,
    converge_steps,
    desired_policy,
    event_id,
    free_handle,
    free_id,
    groups_of,
    live_fields,
    live_who_answers,
    local_members,
    member,
    member_names,
    missing_feature,
    new_room_id,
    peer_member,
    remote_members,
    seat_member_id,
    seat_retry_after,
    seat_routes,
)
from controller.core.types import Action, GatewayView, Inputs, ObjectChange
from controller.engine.ledger import Ledger
from controller.errors import (
    ControllerError,
    GatewayError,
    GatewayIncompatible,
    GatewayOutcomeUnknown,
    GatewayRefused,
    GatewayUnavailable,
    RoomApplyError,
    RoomChanged,
    RoomLinkError,
)
from controller.hermes.naming import peer_env_key
from controller.manifests.models import Room

Report = Callable[..., None]  # (change, ok, error, conflict=False, pending=False, writes=())

REVISION_CODES = (4117, 4124)  # the room codes of rename and of members/policy updates
ROSTER_CODES = (5111, 5120)  # the generic codes a refused roster comes back with
ATTEMPTS = 3  # converging one room: the first try and two re-plans after a revision change
CREATE_ATTEMPTS = 3  # fresh ids to try when an id turns out to be retired

_T = TypeVar("_T")


class _Stale(Exception):
    """A fenced write was refused; the caller re-reads to learn whether the revision moved."""

    def __init__(self, error: GatewayRefused, revision: int) -> None:
        super().__init__(str(error))
        self.error, self.revision = error, revision


def apply_rooms(
    root: Path,
    changes: list[ObjectChange],
    inputs: Inputs,
    *,
    ledger: Ledger,
    options: gw.GatewayOptions | None,
    failed_bots: set[str],
    report: Report,
) -> None:
    """Carry out the room changes, in plan order; `report(change, ok, error, conflict, pending)` records each outcome."""
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
            mark = len(session.sent) if session is not None else 0
            waits = False  # nothing answered, or a seat waits: the next run tries again
            try:
                if session is None and change.action is not Action.RELEASE:
                    session = gw.open_session(root, options, writes=True)
                pending = _apply_room(root, change, inputs, ledger, session, options)
            except RoomChanged as exc:
                ok, error, conflict = False, f"conflict: {exc}", True
            except GatewayOutcomeUnknown as exc:
                ok, error, conflict = False, f"{exc}; not retried: the next plan reads the room and finishes the job", False
            except GatewayRefused as exc:
                ok, error, conflict = False, explain(exc, inputs.observed.rooms), False
            except ControllerError as exc:  # the adapters map every OSError onto the error tree
                (error, waits), ok, conflict = failure(exc), False, False
            else:  # reported outside the try: an error while recording it is not this room's failure too
                ok, error, conflict = not pending, "pending: " + "; ".join(pending) if pending else "", False
                waits = bool(pending)
            report(change, ok, error, conflict, pending=waits, writes=tuple(session.sent[mark:]) if session else ())
    finally:
        if session is not None:
            session.close()


def failure(exc: ControllerError) -> tuple[str, bool]:
    """A failure as the docs class it, and whether it is pending: nothing answered (try again later)."""
    if isinstance(exc, GatewayUnavailable):
        return f"pending: gateway unreachable: {exc}", True
    if isinstance(exc, RoomLinkError) and exc.transient:
        return f"pending: {exc}", True
    return str(exc), False


def explain(exc: GatewayRefused, view: GatewayView | None) -> str:
    """The gateway's refusal as it said it, plus the fix where its code (never its text) tells one."""
    text = str(exc)
    if exc.code in ROSTER_CODES and view is not None and view.stray_profiles:
        text += (
            f"; profiles/ holds folders that are not profile names ({', '.join(view.stray_profiles)}), and this "
            "gateway reads every folder there as a profile: move them out of profiles/ and run apply again"
        )
    elif exc.reason == "room_membership_busy":
        text += "; the room has work queued or running: stop it in the Desktop (or let it finish) and run apply again"
    elif exc.code == 5114:
        text += (
            "; the gateway could not finish stopping the room's work or revoking a peer member's grant: run "
            "`apply --prune` again once the work has stopped and the other machine is reachable"
        )
    return text


def write_groups(root: Path, edit: GroupEdit, retries: int = 3) -> None:
    """Read-modify-write the bot's profile.yaml: only `groups`/`group` change, revision bumped."""
    if "/" in edit.bot:
        return  # a member on another machine: its own machine's Bot Mode is not ours to write
    path = home.check_profile(root, edit.bot)  # containment: profile.yaml stays in the bot's profile
    if not path.is_dir():
        return
    target = home.ProfileLayout(path).meta

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


def _apply_room(
    root: Path,
    change: ObjectChange,
    inputs: Inputs,
    ledger: Ledger,
    session: gw.Session | None,
    options: gw.GatewayOptions,
) -> list[str]:
    """Converge one room; returns why its remote seats are not seated yet (empty: all done)."""
    name = change.name
    if change.action in (Action.DELETE, Action.RELEASE):
        entry = ledger.get(room_key(name)) or {}
        if change.action is Action.DELETE:
            assert session is not None
            _disband(session, change.ref)
        for bot in entry.get("applied", {}).get("members") or []:
            write_groups(root, GroupEdit(bot, remove=(name,)))
        ledger.drop(room_key(name))
        return []
    assert session is not None
    room = inputs.state.rooms[name]
    old_entry = ledger.get(room_key(name)) or (ledger.get(room_key(room.renamed_from)) if room.renamed_from else None) or {}
    seats: dict[str, dict[str, Any]] = dict(old_entry.get("seats") or {})
    seating = _Seating(inputs, options, seats)
    live = _create_room(session, change.ref, room, seating) if change.action is Action.CREATE else _read(session, change.ref)
    live = _converge_retrying(session, live, room, inputs)
    renew = [f.field.partition(":")[2] for f in change.fields if f.field.startswith("seat:")]
    if change.action is not Action.CREATE and renew:
        live = _reseat(session, live, renew, seating)
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
        ledger.drop(room_key(room.renamed_from))
    entry = ledger.entry(room_key(name))
    entry["room_id"] = live["room_id"]
    entry["applied"] = {"name": room.name, "members": sorted(room.members), "who_answers": room.who_answers}
    entry["member_ids"] = local_members(live)
    remote = remote_members(live)
    if remote:
        entry["seats"] = {key: seat for key, seat in seats.items() if key in remote}
    else:
        entry.pop("seats", None)
    verb = {Action.CREATE: "created", Action.ADOPT: "adopted"}.get(change.action, "updated")
    entry.setdefault(f"{verb}_at", inventory_file.now_iso())
    entry["updated_at"] = inventory_file.now_iso()
    return seating.pending


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
    except GatewayRefused as exc:
        if exc.code == 4114:
            return None
        raise


def _retired(session: gw.Session, room_id: str) -> bool:
    """Whether the gateway retired this id: a tombstone, or (purged) `room_history_expired`."""
    try:
        room = _read(session, room_id, include_disbanded=True)
    except GatewayRefused as exc:
        return exc.code == 4114 and exc.reason == "room_history_expired"
    return bool(room.get("disbanded_at"))


# --- create, with the seats of members on other machines ------------------------------------------


def _identities(room: Room) -> dict[str, tuple[str, str]]:
    """Member id and handle of each member of a new room; local bots keep their natural handles."""
    ids: set[str] = set()
    handles: set[str] = set()
    out: dict[str, tuple[str, str]] = {}
    for name in room.members:
        if "/" not in name:
            out[name] = (free_id(name, ids), free_handle(name, handles))
    for name in room.members:
        if "/" in name:
            peer, _, profile = name.partition("/")
            out[name] = (free_id(seat_member_id(peer, profile), ids), free_handle(profile, handles, f"{peer}-{profile}"))
    return out


def _create_room(session: gw.Session, base: str, room: Room, seating: _Seating) -> dict[str, Any]:
    """Create the room under a fresh id of its family; an id the gateway retired long ago (purged from
    its lists, so no plan could see it) is replaced by another one."""
    identities = _identities(room)
    for _ in range(CREATE_ATTEMPTS):
        room_id = new_room_id(base, secrets.token_hex(4))
        invites = {
            name: seating.invite(name, room_id, epoch=1, member_id=identities[name][0]) for name in room.members if "/" in name
        }
        members = []
        for name in room.members:
            member_id, handle = identities[name]
            if "/" in name:
                peer, _, profile = name.partition("/")
                members.append(peer_member(peer, profile, member_id, handle, invites[name].catalog))
            else:
                members.append(member(name, member_id, handle))
        try:
            result = session.call("groups.create", {"room_id": room_id, "name": room.name, "members": members})
        except GatewayOutcomeUnknown as lost:
            # Resolve by reading state (a fresh connection), never by sending the create again.
            live = _read_back(
                session, f"groups.create {room_id}", functools.partial(_try_read, session, room_id), "may already exist"
            )
            if live is not None and live.get("name") == room.name.strip() and member_names(live) == sorted(room.members):
                return _register_all(session, live, invites, seating)
            _revoke_all(invites)
            raise GatewayOutcomeUnknown(
                f"groups.create {room_id}: the reply was lost and the room is {'different' if live else 'not there'} on a re-read"
            ) from lost
        except GatewayRefused as exc:
            _revoke_all(invites)
            if exc.code == 4110 and _retired(session, room_id):
                continue  # settled by reading: that id is a purged tombstone; pick another
            raise
        live = result.get("room")
        if not isinstance(live, dict):
            raise RoomApplyError(f"groups.create {room_id}: no room in the reply")
        return _register_all(session, live, invites, seating)
    raise RoomApplyError(
        f"groups.create: the gateway retired each of {CREATE_ATTEMPTS} fresh ids of {base}", hint="run apply again"
    )


def _read_back(session: gw.Session, what: str, read: Callable[[], _T], unknown: str) -> _T:
    """Read back after a lost reply; when that read cannot be made either, the outcome stays unknown
    (and says what may have happened) rather than turning into a connection error."""
    try:
        return read()
    except GatewayRefused:
        raise
    except GatewayError as exc:
        raise GatewayOutcomeUnknown(
            f"{what}: the reply was lost and the read-back failed too ({exc}); the change {unknown}"
        ) from exc


class _Seating:
    """Invitations from members' gateways, and the seats they lead to (recorded in `seats`).

    A seat the room's gateway refuses to register is reported as pending with its refusal and
    recorded with a retry time (attempts back off across runs); the grant issued for it is revoked
    exactly, and nothing already granted is touched."""

    def __init__(self, inputs: Inputs, options: gw.GatewayOptions, seats: dict[str, dict[str, Any]]) -> None:
        self.inputs, self.options, self.seats = inputs, options, seats
        self.pending: list[str] = []

    def invite(self, name: str, room_id: str, *, epoch: int, member_id: str) -> roomlink.Invitation:
        """Ask the member's own gateway for the grant that seats it (over the peer's API server)."""
        peer, _, profile = name.partition("/")
        declared = self.inputs.state.peers.get(peer)
        key = self.inputs.observed.env_values.get("", {}).get(peer_env_key(peer))
        view = self.inputs.observed.rooms
        if declared is None or not key or view is None:
            raise RoomApplyError(f"remote member {name}: peer {peer!r} or its key is not available on this machine")
        invitation = roomlink.invite(
            peer,
            declared.url,
            key,
            profile,
            room_id=room_id,
            install_id=view.install_id,
            epoch=epoch,
            member_id=member_id,
            ttl=SEAT_TTL,
            status_ttl=SEAT_STATUS_TTL,
            timeout=self.options.timeout,
        )
        endpoint = invitation.endpoint
        if endpoint.get("available") is not True or not isinstance(endpoint.get("url"), str):
            # Checked before anything is created: the room's gateway could not reach the member.
            raise RoomLinkError(
                f"remote member {name}: its gateway advertises no RoomLink endpoint ({endpoint.get('reason') or 'unknown'})",
                hint="on that machine, set gateway.room_link_url (https://, as this machine reaches it) in the bot's or "
                "the root's config.yaml and restart its gateway; its plan shows the seat",
            )
        return invitation

    def seated(self, name: str, member_id: str, invite: roomlink.Invitation) -> None:
        self.seats[name] = {
            "member_id": member_id,
            "grant_sha256": invite.fingerprint,
            "status_expires_at": invite.status_expires_at,
        }

    def refused(self, name: str, member_id: str, why: str) -> None:
        """Keep what the seat had (the live route's grant stays in use), add the refusal and when to retry."""
        now = self.inputs.now.timestamp()
        seat = {**self.seats.get(name, {}), "member_id": member_id}
        attempts = int(seat.get("attempts") or 0) + 1
        retry = seat_retry_after(attempts, now)
        self.seats[name] = {**seat, "pending": why, "attempts": attempts, "retry_after": retry}
        when = datetime.fromtimestamp(retry, UTC).strftime("%Y-%m-%d %H:%M UTC")
        self.pending.append(f"remote member {name} is not seated: {why}; tried again after {when} (attempt {attempts})")


def _revoke_all(invites: Mapping[str, roomlink.Invitation]) -> None:
    """Grants issued for a room that was not created: revoked exactly, each on its own gateway."""
    for invite in invites.values():
        roomlink.revoke_exact(invite)


def _register_all(
    session: gw.Session, live: dict[str, Any], invites: Mapping[str, roomlink.Invitation], seating: _Seating
) -> dict[str, Any]:
    ids = remote_members(live)
    for name, invite in invites.items():
        _register(session, live, name=name, member_id=ids[name], invite=invite, seating=seating)
    return live


def _register(
    session: gw.Session,
    live: Mapping[str, Any],
    *,
    name: str,
    member_id: str,
    invite: roomlink.Invitation,
    seating: _Seating,
    expected: str | None = None,
) -> None:
    """groups.peer.register: the room's gateway probes the member's gateway with the grant and keeps
    the route. A lost reply is settled by reading the route's grant fingerprint; a refusal leaves
    the seat pending (`_Seating.refused`) and retires exactly the grant it was refused."""
    room_id = str(live["room_id"])
    params: dict[str, Any] = {
        "room_id": room_id,
        "member_id": member_id,
        "target_url": invite.endpoint["url"],
        "target_profile": invite.target_profile,
        "grant": invite.grant,
        "catalog": dict(invite.catalog),
    }
    if expected is not None:
        params["expected_grant_sha256"] = expected
    try:
        session.call("groups.peer.register", params)
    except GatewayOutcomeUnknown as lost:
        routes = _read_back(
            session, f"groups.peer.register {room_id} {name}", lambda: _routes(session, room_id), "may have been made"
        )
        if (seat_routes(routes, live).get(name) or {}).get("grant_sha256") != invite.fingerprint:
            raise GatewayOutcomeUnknown(
                f"groups.peer.register {room_id} {name}: the reply was lost and a re-read shows another route"
            ) from lost
    except GatewayRefused as exc:
        if isinstance(exc, GatewayIncompatible):
            raise
        route = seat_routes(_routes(session, room_id), live).get(name) or {}
        if route.get("grant_sha256") != invite.fingerprint:  # never the grant the room's route holds
            roomlink.revoke_exact(invite)
        seating.refused(name, member_id, str(exc))
        return
    seating.seated(name, member_id, invite)


def _routes(session: gw.Session, room_id: str) -> list[Mapping[str, Any]]:
    status = session.call("groups.state", {"room_id": room_id}).get("driver_status")
    routes = status.get("peer_routes") if isinstance(status, dict) else None
    return [r for r in routes if isinstance(r, dict)] if isinstance(routes, list) else []


def _reseat(session: gw.Session, live: dict[str, Any], names: list[str], seating: _Seating) -> dict[str, Any]:
    """A new grant for seats with no route, one that needs reauthorization, or one close to its end:
    invited again for the same member id, registered against the route's current fingerprint. A
    member's gateway that cannot issue one now leaves that seat pending, like a refused register."""
    ids = remote_members(live)
    routes = seat_routes(_routes(session, str(live["room_id"])), live)
    for name in names:
        if name not in ids:
            continue
        try:
            invite = seating.invite(name, str(live["room_id"]), epoch=int(live["authority_epoch"]), member_id=ids[name])
        except RoomLinkError as exc:
            seating.refused(name, ids[name], str(exc))
            continue
        current = routes.get(name, {}).get("grant_sha256")
        _register(
            session,
            live,
            name=name,
            member_id=ids[name],
            invite=invite,
            seating=seating,
            expected=str(current) if current else None,
        )
    return live


# --- converging a live room -------------------------------------------------------------------------


def _converge_retrying(session: gw.Session, live: dict[str, Any], room: Room, inputs: Inputs) -> dict[str, Any]:
    """`_converge`, re-read and re-planned after each refusal that a moved revision explains."""
    first = live
    for _ in range(ATTEMPTS):
        try:
            return _converge(session, live, room, inputs.observed.rooms)
        except _Stale as stale:
            fresh = _try_read(session, str(live["room_id"]))
            if fresh is None:
                raise RoomChanged(
                    f"room {room.name!r} was disbanded on the gateway while hermes-fleet converged it",
                    hint="run apply again: the next plan creates it anew",
                ) from None
            if fresh.get("revision") == stale.revision:
                raise stale.error from None  # refused for another reason than a concurrent edit
            again = replan(inputs, room, fresh)
            if again.action not in (Action.UPDATE, Action.ADOPT, Action.NOOP) or again.ref != fresh.get("room_id"):
                raise RoomChanged(
                    f"room {room.name!r} changed on the gateway while hermes-fleet converged it "
                    f"({_what_changed(first, fresh)}), and now: {again.reason}",
                    hint="nothing more was written to it; see the reason, then run apply again",
                ) from None
            live = fresh
    raise RoomChanged(
        f"room {room.name!r} kept changing on the gateway while hermes-fleet converged it "
        f"({ATTEMPTS} tries; {_what_changed(first, live)})",
        hint="nothing more was written to it; run apply again once nobody else is editing the room",
    )


def _what_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    was, now = live_fields(before), live_fields(after)
    parts = [f"revision {before.get('revision')} -> {after.get('revision')}"]
    parts += [f"{k} {was[k]!r} -> {now[k]!r}" for k in ("name", "members", "who_answers") if was[k] != now[k]]
    return "; ".join(parts)


def _write(
    session: gw.Session, method: str, params: dict[str, Any], room_id: str, done: Callable[[Mapping[str, Any]], bool]
) -> dict[str, Any]:
    """One revision-fenced write; a lost reply is resolved by re-reading the room (`done(room)`)."""
    try:
        room = session.call(method, params).get("room")
    except GatewayOutcomeUnknown as lost:
        room = _read_back(session, f"{method} {room_id}", lambda: _read(session, room_id), "may have been made")
        if done(room):
            return room
        raise GatewayOutcomeUnknown(
            f"{method} {room_id}: the reply was lost and a re-read shows the change was not made"
        ) from lost
    except GatewayRefused as exc:
        if exc.code in REVISION_CODES and isinstance(params.get("expected_revision"), int):
            raise _Stale(exc, params["expected_revision"]) from None
        raise
    if not isinstance(room, dict):
        raise RoomApplyError(f"{method} {room_id}: no room in the reply")
    return room


def _converge(session: gw.Session, live: dict[str, Any], room: Room, view: GatewayView | None) -> dict[str, Any]:
    """The writes the plan showed (core.rooms.converge_steps), in its order, each fenced on the
    revision the previous one left."""
    for step in converge_steps(live, room.name, room.members, room.who_answers):
        room_id = live["room_id"]
        if step.method == RENAME_METHOD:
            if view is not None and (unfenced := missing_feature(view, RENAME_FENCE)):
                raise RoomApplyError(f"room {room.name!r} must be renamed, but {unfenced}")
            payload = {
                "room_id": room_id,
                "name": room.name,
                "expected_revision": live["revision"],
                "event_id": event_id("rename", room_id, live["revision"], room.name),
            }
            live = _write(session, RENAME_METHOD, payload, room_id, lambda r: r.get("name") == room.name)
        elif step.method == MEMBERS_METHOD:
            live = _set_members(session, live, _roster(live, room), step.new)
        else:
            live = _set_policy(session, live, step.new, {**local_members(live), **remote_members(live)})
    return live


def _roster(live: Mapping[str, Any], room: Room) -> list[dict[str, Any]]:
    """The new full roster: every kept member exactly as the gateway holds it (member identity is
    immutable: display name, handle, target), each added bot with a fresh id and a free handle."""
    current: dict[str, dict[str, Any]] = {}
    for m in live.get("members") or []:
        target = m.get("target") or {}
        key = f"{target.get('peer_id')}/{m.get('profile')}" if target.get("kind") == "peer" else str(m.get("profile"))
        current[key] = dict(m)
    used = {str(m.get("member_id")).casefold() for m in [*(live.get("members") or []), *(live.get("retired_members") or [])]}
    kept = [current[name] for name in room.members if name in current]
    handles = {str(m.get("handle")).casefold() for m in kept}
    added = [member(name, free_id(name, used), free_handle(name, handles)) for name in room.members if name not in current]
    return kept + added


def _set_members(session: gw.Session, live: dict[str, Any], roster: list[dict[str, Any]], want: list[str]) -> dict[str, Any]:
    room_id = live["room_id"]
    payload = {
        "room_id": room_id,
        "expected_revision": live["revision"],
        "members": roster,
        "event_id": event_id("members", room_id, live["revision"], roster),
    }
    return _write(session, MEMBERS_METHOD, payload, room_id, lambda r: member_names(r) == want)


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
    except GatewayOutcomeUnknown as lost:
        room = _read_back(
            session,
            f"groups.disband {room_id}",
            lambda: _try_read(session, room_id, include_disbanded=True),
            "may have been made",
        )
        if room is None or room.get("disbanded_at"):
            return
        raise GatewayOutcomeUnknown(
            f"groups.disband {room_id}: the reply was lost and the room is still live on a re-read"
        ) from lost
