"""Rooms as the gateway sees them, and as Bot Mode mirrors them on member bots (pure).

A room this fleet creates gets an id in its own family: `hf-<fleet hash>-<name hash>` plus a
random suffix chosen at apply. The gateway never reuses an id, even after it purged the
disbanded room's row (docs/hermes/gateway.md#tombstones), so ids must not collide by
construction; a create whose reply was lost is found again by its family, never made twice. Each
local member's `ui_meta['hermes-bots'].groups` lists its rooms by NAME
(docs/hermes/bot-mode.md#rooms). A member on another machine (`peer/profile`) is a peer target
seated with a grant that its own gateway issues (docs/hermes/gateway.md#peer-members).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.core.inventory import Inventory, split_key
from controller.core.types import GatewayView
from controller.manifests.desired import DesiredState

REQUIRED_METHODS = ("groups.list", "groups.state", "groups.create", "groups.rename", "groups.disband")
MEMBERS_METHOD = "groups.members.update"
POLICY_METHOD = "groups.policy.update"
REGISTER_METHOD = "groups.peer.register"
RENAME_METHOD = "groups.rename"
CREATE_METHOD = "groups.create"
DISBAND_METHOD = "groups.disband"
# Features of groups.capabilities that say which rules a gateway keeps (docs/hermes/gateway.md#capabilities):
# without them a rename is not revision-fenced, a register ignores expected_grant_sha256 and
# groups.state reports no grant fingerprints, so those writes are refused instead of sent unfenced.
RENAME_FENCE = "rename_revision"
GRANT_FINGERPRINTS = "peer_route_grant_fingerprint"
# A seat the room's gateway refused to register is tried again after a growing pause, across runs.
SEAT_RETRY_FIRST = 5 * 60
SEAT_RETRY_MAX = 6 * 60 * 60
IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]*$")  # the gateway's identifier shape
# A seat's grant: dispatch access for a day (renewed by the gateway itself while the grant's hard
# horizon lasts), that horizon 30 days, the most the member's gateway issues
# (docs/hermes/gateway.md#peer-members); hermes-fleet re-seats a week before it ends.
SEAT_TTL = 24 * 60 * 60
SEAT_STATUS_TTL = 30 * 24 * 60 * 60
RENEW_BEFORE = 7 * 24 * 60 * 60
DEFAULT_POLICY = {
    "mode": "legacy_bounded",
    "default_responder": "all",
    "leader_member_id": None,
    "max_turns_per_window": 10,
    "window_seconds": 60,
}
PRUNE_CANCEL_ID = "hermes-fleet-prune"


def base_room_id(fleet: str, name: str) -> str:
    """Stable, per fleet and name; `hf-` + 8 hex of the fleet + 16 hex of fleet/name."""
    f = hashlib.sha256(fleet.encode()).hexdigest()[:8]
    n = hashlib.sha256(f"{fleet}/{name}".encode()).hexdigest()[:16]
    return f"hf-{f}-{n}"


def fleet_prefix(fleet: str) -> str:
    return f"hf-{hashlib.sha256(fleet.encode()).hexdigest()[:8]}-"


def in_family(base: str, room_id: str) -> bool:
    """`base` itself, or `base-<suffix>`: `-2`, `-3` from earlier releases, a random suffix now."""
    return room_id == base or bool(re.fullmatch(re.escape(base) + r"-[0-9a-z]{1,16}", room_id))


def new_room_id(base: str, token: str) -> str:
    """A fresh id of this family; `token` is random (chosen at apply), so it cannot collide with an
    id the gateway retired and then purged from its lists."""
    return f"{base}-{token}"


def needed(state: DesiredState, inventory: Inventory) -> bool:
    """Whether a plan has to look at the gateway at all."""
    return bool(state.rooms) or bool(state.seats) or any(split_key(k)[0] == "room" for k in inventory.objects)


def capability_problem(view: GatewayView) -> str:
    """Why this gateway cannot own rooms at all ("" when it can)."""
    missing = [m for m in REQUIRED_METHODS if m not in view.methods]
    if missing:
        return (
            f"the gateway at {view.origin} cannot own rooms: it does not offer {', '.join(missing)}; update "
            "Hermes on that machine (`hermes update`) and restart its gateway"
        )
    return ""


def missing_feature(view: GatewayView, feature: str) -> str:
    """Why a write that needs `feature` is not sent to this gateway ("" when it has it)."""
    if feature in view.features:
        return ""
    version = view.capabilities.get("protocol_version")
    what = {
        RENAME_FENCE: "renames are not revision-fenced there, so a rename sent now could silently overwrite "
        "a rename made meanwhile in the Desktop",
        GRANT_FINGERPRINTS: "it reports no grant fingerprints and ignores expected_grant_sha256, so hermes-fleet "
        "could neither tell its own seat from another nor replace exactly the route it saw",
    }[feature]
    return (
        f"the gateway at {view.origin} (groups protocol {version}) lacks the {feature} feature: {what}; not sent. "
        "Update Hermes on that machine (`hermes update`) and restart its gateway (`hermes gateway restart`)"
    )


def seat_retry_after(attempts: int, now: float) -> float:
    """When a refused seat is tried again: 5 minutes after the first refusal, doubling, at most 6 hours."""
    return now + min(SEAT_RETRY_FIRST * (1 << max(attempts - 1, 0)), SEAT_RETRY_MAX)


# --- reading live rooms ---------------------------------------------------------------------------


def local_members(room: Mapping[str, Any]) -> dict[str, str]:
    """profile -> member_id, for a live room's local members."""
    out = {}
    for m in room.get("members") or []:
        target = m.get("target") or {}
        if target.get("kind", "local") == "local" and isinstance(m.get("profile"), str):
            out[m["profile"]] = str(m.get("member_id"))
    return out


def peer_members(room: Mapping[str, Any]) -> list[str]:
    return [str(m.get("profile")) for m in room.get("members") or [] if (m.get("target") or {}).get("kind") == "peer"]


def remote_members(room: Mapping[str, Any]) -> dict[str, str]:
    """`peer/profile` -> member_id, for a live room's peer members (peer = the target's peer_id)."""
    out = {}
    for m in room.get("members") or []:
        target = m.get("target") or {}
        if target.get("kind") == "peer":
            out[f"{target.get('peer_id')}/{m.get('profile')}"] = str(m.get("member_id"))
    return out


def member_names(room: Mapping[str, Any]) -> list[str]:
    """Every member as the manifests name it: local profiles and `peer/profile`, sorted."""
    return sorted([*local_members(room), *remote_members(room)])


def live_who_answers(room: Mapping[str, Any]) -> str:
    policy = room.get("responder_policy") or {}
    responder = policy.get("default_responder", "all")
    if responder == "leader":
        by_id = {v: k for k, v in {**local_members(room), **remote_members(room)}.items()}
        return f"lead:{by_id.get(str(policy.get('leader_member_id')), '?')}"
    return {"all": "everyone", "mentions_only": "auto"}.get(responder, f"({responder})")


def live_fields(room: Mapping[str, Any]) -> dict[str, Any]:
    """A live room's managed fields, in the form the inventory records them."""
    return {"name": room.get("name"), "members": member_names(room), "who_answers": live_who_answers(room)}


def seat_routes(view_routes: Any, room: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`peer/profile` -> its peer route in driver_status ({member_id, status, grant_sha256})."""
    by_id = {str(r.get("member_id")): r for r in view_routes or () if isinstance(r, Mapping)}
    return {key: by_id[mid] for key, mid in remote_members(room).items() if mid in by_id}


@dataclass(frozen=True)
class Step:
    """One write that converging a live room sends, in the order it is sent."""

    method: str  # RENAME_METHOD, POLICY_METHOD or MEMBERS_METHOD
    field: str  # the plan field that shows it
    old: Any
    new: Any  # the room's name, its who_answers, or the sorted member names


INTERIM_POLICY_FIELD = "room:who_answers (before members)"


def kept_member_ids(live: Mapping[str, Any], room_members: Any) -> set[str]:
    """The ids of the live members the manifests keep."""
    ids = {**local_members(live), **remote_members(live)}
    return {ids[name] for name in room_members if name in ids}


def interim_policy(live: Mapping[str, Any], room_members: Any, who_answers: str) -> str | None:
    """The policy to set before a roster change that removes the policy's leader ("Change responder
    policy before removing its leader", whatever the responder mode): the wanted one when its lead
    stays, else `everyone`. None when no leader leaves."""
    leader = (live.get("responder_policy") or {}).get("leader_member_id")
    kept = kept_member_ids(live, room_members)
    if leader is None or leader in kept:
        return None
    ids = {**local_members(live), **remote_members(live)}
    lead = who_answers.partition(":")[2] if who_answers.startswith("lead:") else ""
    return who_answers if not lead or (lead in ids and ids[lead] in kept) else "everyone"


def converge_steps(live: Mapping[str, Any], name: str, members: Any, who_answers: str) -> list[Step]:
    """The writes that bring a live room to (name, members, who_answers), in the order the gateway
    accepts them: rename, the policy first when the roster drops its leader, the roster, the policy.
    The plan shows exactly these; apply sends exactly these."""
    steps = []
    if live.get("name") != name:
        steps.append(Step(RENAME_METHOD, "room:name", live.get("name"), name))
    who = live_who_answers(live)
    have, want = member_names(live), sorted(members)
    if have != want:
        first = interim_policy(live, members, who_answers)
        if first is not None:
            by_id = {v: k for k, v in {**local_members(live), **remote_members(live)}.items()}
            leader = by_id.get(str((live.get("responder_policy") or {}).get("leader_member_id")), "?")
            old = who if who.startswith("lead:") else f"{who} (leader {leader} kept)"
            steps.append(Step(POLICY_METHOD, INTERIM_POLICY_FIELD, old, first))
            who = first
        steps.append(Step(MEMBERS_METHOD, "room:members", have, want))
    if who != who_answers:
        steps.append(Step(POLICY_METHOD, "room:who_answers", who, who_answers))
    return steps


def write_of(kind_action: str, field: str) -> str | None:
    """The groups.* write a plan field of a room stands for (None: it is not a gateway write)."""
    if field.startswith("seat:"):
        return REGISTER_METHOD
    if kind_action == "create":
        return CREATE_METHOD if field in ("room:name", "room:members") else POLICY_METHOD if field == "room:who_answers" else None
    if field == "room:name":
        return RENAME_METHOD
    if field == "room:members":
        return MEMBERS_METHOD
    if field.startswith("room:who_answers"):
        return POLICY_METHOD
    return None


def planned_writes(action: str, fields: Any) -> list[str]:
    """Every gateway write a room's planned change sends, in order (a create's name and members are one)."""
    if action == "delete":
        return [DISBAND_METHOD]
    out: list[str] = []
    for f in fields:
        method = write_of(action, f)
        if method is not None and not (method == CREATE_METHOD and out[-1:] == [CREATE_METHOD]):
            out.append(method)
    return out


def desired_policy(who: str, member_ids: Mapping[str, str], live: Mapping[str, Any] | None) -> dict[str, Any]:
    """The four-key responder policy; mode and rate limits are kept from the live room."""
    policy = {**DEFAULT_POLICY, **{k: v for k, v in (live or {}).items() if k in DEFAULT_POLICY}}
    if who == "everyone":
        policy.update(default_responder="all", leader_member_id=None)
    elif who == "auto":  # Desktop's "pick automatically" has no wire form; the contract's closest is mentions_only
        policy.update(default_responder="mentions_only", leader_member_id=None)
    else:
        policy.update(default_responder="leader", leader_member_id=member_ids[who.split(":", 1)[1]])
    return policy


def member(profile: str, member_id: str, handle: str | None = None) -> dict[str, Any]:
    target = {"kind": "local", "profile": profile}
    return {"member_id": member_id, "profile": profile, "handle": handle or profile, "target": target}


def peer_member(peer: str, profile: str, member_id: str, handle: str, catalog: Mapping[str, Any]) -> dict[str, Any]:
    """A member on another gateway, pinned to the catalog its invitation came with."""
    target = {
        "kind": "peer",
        "peer_id": peer,
        "installation_id": str(catalog.get("installation_id")),
        "profile": profile,
        "capability_digest": str(catalog.get("catalog_digest")),
    }
    return {"member_id": member_id, "profile": profile, "handle": handle, "target": target}


def seat_member_id(peer: str, profile: str) -> str:
    return f"{peer}.{profile}"


def free_id(wanted: str, used: set[str]) -> str:
    """`wanted`, else `wanted-2`, `-3`…: member ids are unique and never reused, case-insensitively."""
    candidate, n = wanted, 2
    while candidate.casefold() in used:
        candidate, n = f"{wanted}-{n}", n + 1
    used.add(candidate.casefold())
    return candidate


def free_handle(wanted: str, taken: set[str], fallback: str = "") -> str:
    """A handle no other member uses (case-insensitive; @all and @everyone are reserved)."""
    taken |= {"all", "everyone"}
    for candidate in (wanted, fallback):
        if candidate and candidate.casefold() not in taken:
            taken.add(candidate.casefold())
            return candidate
    return free_id(fallback or wanted, taken)


def stray(name: str) -> bool:
    """A folder under profiles/ that the gateway cannot read as a profile name."""
    return not IDENTIFIER.fullmatch(name)


def event_id(op: str, room_id: str, revision: int, payload: Any) -> str:
    """Deterministic per (room, revision, payload): a retry of the same write replays, never doubles."""
    digest = hashlib.sha256(json.dumps([room_id, revision, payload], sort_keys=True).encode()).hexdigest()[:24]
    return f"hf-{op}-{digest}"


# --- member bots' `groups` (Bot Mode metadata) ----------------------------------------------------


def groups_of(record: Mapping[str, Any] | None) -> list[str]:
    record = record or {}
    groups = record.get("groups")
    if isinstance(groups, list):
        return [str(g) for g in groups]
    legacy = record.get("group")
    return [str(legacy)] if isinstance(legacy, str) and legacy else []


def edit_groups(
    groups: list[str], *, add: str | None = None, remove: tuple[str, ...] = (), rename: tuple[str, str] | None = None
) -> list[str]:
    """Only the names given are touched; order and every other name are kept."""
    out = list(groups)
    if rename and rename[0] in out and rename[1] not in out:
        out[out.index(rename[0])] = rename[1]
    out = [g for g in out if g not in remove]
    if add and add not in out:
        out.append(add)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class GroupEdit:
    bot: str
    add: str | None = None
    remove: tuple[str, ...] = ()
    rename: tuple[str, str] | None = None

    def applied_to(self, groups: list[str]) -> list[str]:
        return edit_groups(groups, add=self.add, remove=self.remove, rename=self.rename)
