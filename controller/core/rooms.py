"""Rooms as the gateway sees them, and as Bot Mode mirrors them on member bots (pure).

A room this fleet creates gets a stable id derived from fleet + room name
(`hf-<fleet hash>-<name hash>`, `-2`, `-3`… once an id is retired by a disband), so a create
whose reply was lost is found again by id, never made twice (`groups.create` is idempotent on
room_id). Each local member's `ui_meta['hermes-bots'].groups` lists its rooms by NAME
(docs/hermes/bot-mode.md#rooms). The wire contract: docs/hermes/gateway.md.
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
    return room_id == base or bool(re.fullmatch(re.escape(base) + r"-\d+", room_id))


def next_room_id(base: str, known: Mapping[str, Any]) -> str:
    """The first id of this family that no room (live or disbanded) uses: ids are never reusable."""
    if base not in known:
        return base
    n = 2
    while f"{base}-{n}" in known:
        n += 1
    return f"{base}-{n}"


def needed(state: DesiredState, inventory: Inventory) -> bool:
    """Whether a plan has to look at the gateway at all."""
    return bool(state.rooms) or any(split_key(k)[0] == "room" for k in inventory.objects)


def capability_problem(view: GatewayView) -> str:
    """Why this gateway cannot own rooms at all ("" when it can)."""
    missing = [m for m in REQUIRED_METHODS if m not in view.methods]
    if missing:
        return (
            f"the gateway at {view.origin} cannot own rooms: it does not offer {', '.join(missing)}; update "
            "Hermes on that machine (`hermes update`) and restart its gateway"
        )
    return ""


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


def live_who_answers(room: Mapping[str, Any]) -> str:
    policy = room.get("responder_policy") or {}
    responder = policy.get("default_responder", "all")
    if responder == "leader":
        by_id = {v: k for k, v in local_members(room).items()}
        return f"lead:{by_id.get(str(policy.get('leader_member_id')), '?')}"
    return {"all": "everyone", "mentions_only": "auto"}.get(responder, f"({responder})")


def live_fields(room: Mapping[str, Any]) -> dict[str, Any]:
    """A live room's managed fields, in the form the inventory records them."""
    return {"name": room.get("name"), "members": sorted(local_members(room)), "who_answers": live_who_answers(room)}


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


def member(profile: str, member_id: str) -> dict[str, Any]:
    return {"member_id": member_id, "profile": profile, "handle": profile, "target": {"kind": "local", "profile": profile}}


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
