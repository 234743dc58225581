"""The planner as a pure function: table tests over frozen inputs, with no filesystem at all.

Each case starts from one baseline (a fleet `acme` with one bot `alpha` that is managed and in
sync) and changes one thing with `dataclasses.replace`, in the style of pipx's reconcile tests.
The `no_filesystem` fixture makes any file access during planning fail the test.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.core import drift, jobs, planning, rooms
from controller.core.inventory import INSTALL_KEY, Inventory, bot_key, room_key, routine_key
from controller.core.planning.bots import CONFIG_VERSION_FIELD, applied_record, desired_fields
from controller.core.rooms import base_room_id
from controller.core.types import (
    Action,
    GatewayView,
    Inputs,
    Kind,
    LiveProfile,
    ObjectChange,
    Observed,
    Op,
    Options,
    Plan,
    Reason,
)
from controller.hermes.defaults import CONFIG_VERSION
from controller.manifests.desired import DesiredBot, DesiredState, Origin, Seat
from controller.manifests.models import Peer, Room, Routine, SecretRef

NOW = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
HOME = Path("/nonexistent/hermes-home")
INVENTORY_SALT = "0" * 32
ALPHA = DesiredBot(name="alpha", origin=Origin("fleet.yaml", 7), title="Alpha", config={"model.default": "m1"})
DIGEST = Routine(name="Digest", schedule="0 8 * * *", prompt="Summarise the news")
METHODS = [
    "groups.list", "groups.state", "groups.create", "groups.rename", "groups.disband",
    "groups.members.update", "groups.policy.update",
]  # fmt: skip
FEATURES = ["rename_revision", "peer_route_grant_fingerprint", "local_membership_revision", "responder_policy_v1"]
GATEWAY = GatewayView(
    origin="ws://127.0.0.1:1", capabilities={"methods": METHODS, "driver": True, "features": FEATURES, "protocol_version": 2}
)


# --- building inputs -----------------------------------------------------------------------------


def state(*bots: DesiredBot, rooms: tuple[Room, ...] = ()) -> DesiredState:
    return DesiredState(
        fleet="acme", bots={b.name: b for b in bots}, sections={}, rooms={r.name: r for r in rooms}, peers={},
        install_config={}, install_env={}, digest="sha256:test",
    )  # fmt: skip


def live_from(bot: DesiredBot, **changes: Any) -> LiveProfile:
    """The profile exactly as applying `bot` leaves it, then `changes` (a hand edit)."""
    config = {}
    for key, value in bot.config.items():
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    config["_config_version"] = CONFIG_VERSION
    meta = {k[5:]: v for k, v in desired_fields(bot, {}, None).items() if k.startswith("meta:")}
    base = LiveProfile(
        name=bot.name, path=HOME / "profiles" / bot.name, exists=True, marker={"fleet": "acme", "profile": bot.name},
        config=config, env={}, meta=meta, soul=bot.soul, bot_chat=True,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


def root() -> LiveProfile:
    return LiveProfile(name="default", path=HOME, exists=True, config={}, env={})


def absent(name: str, **changes: Any) -> LiveProfile:
    return dataclasses.replace(LiveProfile(name=name, path=HOME / "profiles" / name, exists=False), **changes)


def inventory(objects: Mapping[str, dict[str, Any]] | None = None) -> Inventory:
    return Inventory(fleet="acme", salt=INVENTORY_SALT, objects=dict(objects or {}))


def owned_bot(bot: DesiredBot) -> dict[str, Any]:
    fields = {**desired_fields(bot, {}, None), CONFIG_VERSION_FIELD: CONFIG_VERSION}
    return {"applied": applied_record(fields, frozenset(), inventory())}


def job_of(bot: str, routine: Routine, job_id: str = "job000000001") -> dict[str, Any]:
    return jobs.new_job(bot, routine, NOW, job_id)


def live_room(room_id: str, name: str, members: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "room_id": room_id, "name": name, "revision": 1,
        "members": [{"member_id": m, "profile": m, "target": {"kind": "local", "profile": m}} for m in members],
        "responder_policy": {"default_responder": "all"}, **extra,
    }  # fmt: skip


BASELINE = Inputs(
    state=state(ALPHA),
    inventory=inventory({bot_key("alpha"): owned_bot(ALPHA)}),
    observed=Observed(live={"default": root(), "alpha": live_from(ALPHA)}),
    now=NOW,
)


def with_live(inputs: Inputs, **profiles: LiveProfile) -> Inputs:
    return dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, live={**inputs.observed.live, **profiles}))


def with_observed(inputs: Inputs, **changes: Any) -> Inputs:
    return dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, **changes))


def with_options(inputs: Inputs, **options: bool) -> Inputs:
    return dataclasses.replace(inputs, options=Options(**options))


ROUTINE_STATE = state(dataclasses.replace(ALPHA, routines=(DIGEST,)))
ROUTINE_OWNED = inventory(
    {
        bot_key("alpha"): owned_bot(ALPHA),
        routine_key("alpha", "Digest"): {"job_id": "job000000001", "applied": jobs.desired_fields("alpha", DIGEST)},
    }
)
ROUTINE_IN_SYNC = with_observed(
    dataclasses.replace(BASELINE, state=ROUTINE_STATE, inventory=ROUTINE_OWNED),
    jobs={"alpha": (job_of("alpha", DIGEST),)},
)
BETA = DesiredBot(name="beta", origin=Origin("fleet.yaml", 20), config={"model.default": "m1"})
TEAM = Room(name="Team", members=["alpha", "beta"])
ROOM_ID = base_room_id("acme", "Team")
ROOM_STATE = state(ALPHA, BETA, rooms=(TEAM,))
ROOM_BASE = with_observed(
    dataclasses.replace(
        BASELINE, state=ROOM_STATE, inventory=inventory({bot_key("alpha"): owned_bot(ALPHA), bot_key("beta"): owned_bot(BETA)})
    ),
    live={"default": root(), "alpha": live_from(ALPHA), "beta": live_from(BETA)},
    rooms=GATEWAY,
)
ROOM_OWNED = dataclasses.replace(
    ROOM_BASE,
    inventory=inventory(
        {
            bot_key("alpha"): owned_bot(ALPHA),
            bot_key("beta"): owned_bot(BETA),
            room_key("Team"): {
                "room_id": ROOM_ID,
                "applied": {"name": "Team", "members": ["alpha", "beta"], "who_answers": "everyone"},
            },
        }
    ),
)


def unowned(alpha: LiveProfile, **options: bool) -> Inputs:
    """The baseline with no inventory and `alpha` as found on disk."""
    bare = dataclasses.replace(BASELINE, inventory=inventory(), observed=Observed(live={"default": root(), "alpha": alpha}))
    return with_options(bare, **options)


FIVE = ("alpha", "b1", "b2", "b3", "b4")


def five_owned_one_kept(**options: bool) -> Inputs:
    """Five owned bots, the manifests keep only alpha: a prune of 4 of 5."""
    others = {n: live_from(dataclasses.replace(ALPHA, name=n)) for n in FIVE[1:]}
    inputs = dataclasses.replace(
        BASELINE,
        inventory=inventory({bot_key(n): {"applied": {}} for n in FIVE}),
        observed=Observed(live={"default": root(), "alpha": live_from(ALPHA), **others}),
    )
    return with_options(inputs, prune=True, **options)


def gateway_with(*rooms: dict[str, Any]) -> GatewayView:
    return dataclasses.replace(GATEWAY, rooms={r["room_id"]: r for r in rooms})


def groups_synced(inputs: Inputs, *bots: str, room: str = "Team") -> Inputs:
    """Member bots whose Bot Mode record already lists the room."""
    live = {
        n: dataclasses.replace(inputs.observed.live[n], meta={**(inputs.observed.live[n].meta or {}), "groups": [room]})
        for n in bots
    }
    return with_live(inputs, **live)


# Members on other machines: peer `spark` (its key resolved), bot `rev` there, seated as `spark.rev`.
SPARK = Peer(name="spark", url="https://spark.lan:8642", key=SecretRef(from_env="SPARK_KEY"))
MIXED = Room(name="Team", members=["alpha", "beta", "spark/rev"])
REGISTERING = dataclasses.replace(GATEWAY, capabilities={**GATEWAY.capabilities, "methods": [*METHODS, "groups.peer.register"]})
FINGERPRINT = "f" * 64


def with_peer_key(inputs: Inputs) -> Inputs:
    """The peer's key resolved on this machine, and already in the root's .env and every bot's
    (install-wide keys reach every bot: the install is in sync)."""
    key = {"HERMES_PEER_SPARK_KEY": "k"}
    live = {n: dataclasses.replace(p, env={**(p.env or {}), **key}) for n, p in inputs.observed.live.items() if p.exists}
    live["default"] = dataclasses.replace(root(), env=key)
    keyed = with_live(inputs, **live)
    return with_observed(keyed, env_values={"": key})


def mixed_state(room: Room = MIXED) -> DesiredState:
    return dataclasses.replace(state(ALPHA, BETA, rooms=(room,)), peers={"spark": SPARK})


def mixed_live(room_id: str = ROOM_ID) -> dict[str, Any]:
    room = live_room(room_id, "Team", ["alpha", "beta"])
    target = {
        "kind": "peer",
        "peer_id": "spark",
        "installation_id": "install:spark",
        "profile": "rev",
        "capability_digest": "c" * 64,
    }
    room["members"].append({"member_id": "spark.rev", "profile": "rev", "handle": "rev", "target": target})
    return room


def mixed(*, ends_in_days: float = 30, status: str = "ready", room: Room = MIXED) -> Inputs:
    """The mixed room, owned, live, its seat registered with this fleet's grant (ending in `ends_in_days`)."""
    entry = {
        "room_id": ROOM_ID,
        "applied": {"name": "Team", "members": ["alpha", "beta", "spark/rev"], "who_answers": "everyone"},
        "seats": {"spark/rev": {
            "member_id": "spark.rev", "grant_sha256": FINGERPRINT, "status_expires_at": NOW.timestamp() + ends_in_days * 86400,
        }},
    }  # fmt: skip
    view = dataclasses.replace(
        REGISTERING,
        rooms={ROOM_ID: mixed_live()},
        routes={ROOM_ID: ({"member_id": "spark.rev", "status": status, "grant_sha256": FINGERPRINT},)},
    )
    inputs = dataclasses.replace(
        ROOM_OWNED,
        state=mixed_state(room),
        inventory=inventory({**ROOM_OWNED.inventory.objects, room_key("Team"): entry}),
    )
    return groups_synced(with_peer_key(with_observed(inputs, rooms=view)), "alpha", "beta")


def seated_here(link: dict[str, Any] | None) -> Inputs:
    """This machine runs bot alpha, seated (as spark/alpha) in room Team that host office owns."""
    view = dataclasses.replace(GATEWAY, room_links={"alpha": link} if link is not None else {})
    seats = (Seat(room="Team", room_host="office", peer="spark", bot="alpha"),)
    return with_observed(dataclasses.replace(BASELINE, state=dataclasses.replace(state(ALPHA), seats=seats)), rooms=view)


READY = {"enabled": True, "endpoint": {"available": True, "url": "https://spark.lan:8642", "transport_security": "tls"}}


# --- the table -----------------------------------------------------------------------------------

# (inputs, {object key: (action, reason code)}, {object key: drifted fields}); objects not listed
# must be no-ops (install/root always is, here).
CASES = [
    pytest.param(BASELINE, {"bot/alpha": (Action.NOOP, Reason.MANAGED)}, {}, id="in-sync"),
    pytest.param(
        with_live(BASELINE, alpha=absent("alpha")),
        {"bot/alpha": (Action.CREATE, Reason.RECREATED)},
        {"bot/alpha": None},
        id="owned-profile-deleted-outside-is-recreated-as-drift",
    ),
    pytest.param(
        unowned(absent("alpha")),
        {"bot/alpha": (Action.CREATE, Reason.NEW)},
        {},
        id="create",
    ),
    pytest.param(
        dataclasses.replace(BASELINE, state=state(dataclasses.replace(ALPHA, config={"model.default": "m2"}))),
        {"bot/alpha": (Action.UPDATE, Reason.MANAGED)},
        {},
        id="update-from-the-manifests",
    ),
    pytest.param(
        with_live(BASELINE, alpha=live_from(ALPHA, config={"model": {"default": "hand-edited"}, "_config_version": 33})),
        {"bot/alpha": (Action.UPDATE, Reason.MANAGED)},
        {"bot/alpha": ["config:model.default"]},
        id="config-drift",
    ),
    pytest.param(
        with_live(BASELINE, alpha=live_from(ALPHA, meta={"title": "Renamed in Desktop"})),
        {"bot/alpha": (Action.UPDATE, Reason.MANAGED)},
        {"bot/alpha": ["meta:title"]},
        id="bot-mode-title-drift",
    ),
    pytest.param(
        with_live(BASELINE, alpha=live_from(ALPHA, bot_chat=False)),
        {"bot/alpha": (Action.UPDATE, Reason.MANAGED)},
        {"bot/alpha": ["botchat"]},
        id="bot-chat-deleted-is-drift",
    ),
    pytest.param(
        unowned(live_from(ALPHA, marker=None)),
        {"bot/alpha": (Action.CONFLICT, Reason.UNMANAGED)},
        {},
        id="unmanaged-profile-is-a-conflict",
    ),
    pytest.param(
        unowned(live_from(ALPHA, marker=None), adopt=True),
        {"bot/alpha": (Action.ADOPT, Reason.ADOPTED)},
        {},
        id="adopt",
    ),
    pytest.param(
        unowned(live_from(ALPHA, marker={"fleet": "other", "profile": "alpha"})),
        {"bot/alpha": (Action.CONFLICT, Reason.FOREIGN_OWNER)},
        {},
        id="profile-of-another-fleet",
    ),
    pytest.param(
        with_live(BASELINE, alpha=live_from(ALPHA, errors=("config.yaml: not YAML",))),
        {"bot/alpha": (Action.ERROR, Reason.UNREADABLE)},
        {},
        id="unreadable-profile",
    ),
    pytest.param(
        with_observed(BASELINE, secret_errors={"alpha": "env KEY: not set"}),
        {"bot/alpha": (Action.ERROR, Reason.SECRET_UNAVAILABLE)},
        {},
        id="missing-secret",
    ),
    pytest.param(
        unowned(absent("alpha", tombstoned=True)),
        {"bot/alpha": (Action.ERROR, Reason.TOMBSTONED)},
        {},
        id="tombstoned-profile",
    ),
    pytest.param(
        dataclasses.replace(BASELINE, state=state()),
        {"bot/alpha": (Action.ORPHAN, Reason.REMOVED)},
        {},
        id="orphan-without-prune",
    ),
    pytest.param(
        with_options(dataclasses.replace(BASELINE, state=state()), prune=True),
        {"bot/alpha": (Action.CONFLICT, Reason.PRUNE_GUARD)},
        {},
        id="prune-of-a-fleets-only-bot-needs-yes",
    ),
    pytest.param(
        with_options(dataclasses.replace(BASELINE, state=state()), prune=True, yes=True),
        {"bot/alpha": (Action.DELETE, Reason.PRUNED)},
        {},
        id="prune-one-of-one-confirmed-with-yes",
    ),
    pytest.param(
        five_owned_one_kept(),
        {f"bot/{n}": (Action.CONFLICT, Reason.PRUNE_GUARD) for n in ("b1", "b2", "b3", "b4")},
        {},
        id="prune-guard",
    ),
    pytest.param(
        five_owned_one_kept(yes=True),
        {f"bot/{n}": (Action.DELETE, Reason.PRUNED) for n in ("b1", "b2", "b3", "b4")},
        {},
        id="prune-guard-confirmed-with-yes",
    ),
    pytest.param(
        with_options(
            dataclasses.replace(BASELINE, state=state(), inventory=inventory({bot_key("default"): {"applied": {}}})), prune=True
        ),
        {"bot/default": (Action.RELEASE, Reason.RELEASED_DEFAULT)},
        {},
        id="default-profile-is-released-never-deleted",
    ),
    pytest.param(
        with_options(
            dataclasses.replace(BASELINE, state=state(), observed=Observed(live={"default": root(), "alpha": absent("alpha")})),
            prune=True,
        ),
        {"bot/alpha": (Action.RELEASE, Reason.ALREADY_GONE)},
        {},
        id="orphan-already-gone",
    ),
    # routines
    pytest.param(
        ROUTINE_IN_SYNC,
        {"bot/alpha": (Action.NOOP, Reason.MANAGED), "routine/alpha/Digest": (Action.NOOP, Reason.MANAGED)},
        {},
        id="routine-in-sync",
    ),
    pytest.param(
        dataclasses.replace(BASELINE, state=ROUTINE_STATE),
        {"routine/alpha/Digest": (Action.CREATE, Reason.NEW)},
        {},
        id="routine-create",
    ),
    pytest.param(
        with_observed(ROUTINE_IN_SYNC, jobs={"alpha": ({**job_of("alpha", DIGEST), "prompt": "hand edited"},)}),
        {"routine/alpha/Digest": (Action.UPDATE, Reason.MANAGED)},
        {"routine/alpha/Digest": ["job:prompt"]},
        id="routine-drift",
    ),
    pytest.param(
        with_observed(ROUTINE_IN_SYNC, jobs={"alpha": ()}),
        {"routine/alpha/Digest": (Action.CREATE, Reason.RECREATED)},
        {"routine/alpha/Digest": None},
        id="routine-job-deleted-outside",
    ),
    pytest.param(
        with_observed(dataclasses.replace(BASELINE, state=ROUTINE_STATE), jobs={"alpha": (job_of("alpha", DIGEST),)}),
        {"routine/alpha/Digest": (Action.CONFLICT, Reason.UNMANAGED)},
        {},
        id="routine-same-name-job-not-owned",
    ),
    pytest.param(
        with_options(
            with_observed(dataclasses.replace(BASELINE, state=ROUTINE_STATE), jobs={"alpha": (job_of("alpha", DIGEST),)}),
            adopt=True,
        ),
        {"routine/alpha/Digest": (Action.ADOPT, Reason.ADOPTED)},
        {},
        id="routine-adopt",
    ),
    pytest.param(
        dataclasses.replace(ROUTINE_IN_SYNC, state=state(ALPHA)),
        {"routine/alpha/Digest": (Action.ORPHAN, Reason.REMOVED)},
        {},
        id="routine-orphan",
    ),
    pytest.param(
        with_options(dataclasses.replace(ROUTINE_IN_SYNC, state=state(ALPHA)), prune=True),
        {"routine/alpha/Digest": (Action.DELETE, Reason.PRUNED)},
        {},
        id="routine-prune",
    ),
    pytest.param(
        with_observed(ROUTINE_IN_SYNC, job_errors={"alpha": "jobs.json: not JSON"}),
        {"routine/alpha/Digest": (Action.ERROR, Reason.UNREADABLE)},
        {},
        id="routine-store-unreadable",
    ),
    # rooms
    pytest.param(
        ROOM_BASE,
        {"room/Team": (Action.CREATE, Reason.NEW)},
        {},
        id="room-create",
    ),
    pytest.param(
        with_observed(ROOM_BASE, rooms=GatewayView(error="pending: gateway unreachable: no gateway")),
        {"room/Team": (Action.ERROR, Reason.GATEWAY_PENDING)},
        {},
        id="room-gateway-unreachable",
    ),
    pytest.param(
        groups_synced(
            with_observed(ROOM_OWNED, rooms=gateway_with(live_room(ROOM_ID, "Team", ["alpha", "beta"]))), "alpha", "beta"
        ),
        {"room/Team": (Action.NOOP, Reason.MANAGED)},
        {},
        id="room-in-sync",
    ),
    pytest.param(
        groups_synced(with_observed(ROOM_OWNED, rooms=gateway_with(live_room(ROOM_ID, "Team", ["alpha"]))), "alpha", "beta"),
        {"room/Team": (Action.UPDATE, Reason.MANAGED)},
        {"room/Team": ["room:members"]},
        id="room-member-drift",
    ),
    pytest.param(
        groups_synced(
            with_observed(ROOM_BASE, rooms=gateway_with(live_room(ROOM_ID, "Team", ["alpha", "beta"]))), "alpha", "beta"
        ),
        {"room/Team": (Action.ADOPT, Reason.ID_EXISTS)},
        {},
        id="room-lost-create-reply-is-found-by-id",
    ),
    pytest.param(
        with_observed(ROOM_BASE, rooms=gateway_with(live_room("desktop-1", "Team", ["alpha", "beta"]))),
        {"room/Team": (Action.CONFLICT, Reason.UNMANAGED)},
        {},
        id="room-made-in-desktop-needs-adopt",
    ),
    pytest.param(
        with_observed(ROOM_BASE, live={**ROOM_BASE.observed.live, "beta": live_from(BETA, errors=("bad",))}),
        {"bot/beta": (Action.ERROR, Reason.UNREADABLE), "room/Team": (Action.ERROR, Reason.WAITS_FOR_BOT)},
        {},
        id="room-waits-for-its-bots",
    ),
    pytest.param(
        with_options(dataclasses.replace(ROOM_OWNED, state=state(ALPHA, BETA)), prune=True),
        {"room/Team": (Action.RELEASE, Reason.ALREADY_GONE)},
        {},
        id="room-prune-already-disbanded",
    ),
    pytest.param(
        groups_synced(
            with_observed(ROOM_BASE, rooms=gateway_with(live_room(ROOM_ID + "-3f9a0c2e", "Team", ["alpha", "beta"]))),
            "alpha",
            "beta",
        ),
        {"room/Team": (Action.ADOPT, Reason.ID_EXISTS)},
        {},
        id="room-random-id-of-the-family-is-found-again",
    ),
    pytest.param(
        with_options(dataclasses.replace(ROOM_OWNED, observed=dataclasses.replace(ROOM_OWNED.observed, rooms=None)), rooms=False),
        {},
        {},
        id="room-left-out-with-no-rooms",
    ),
    # rooms with members on other machines (seats)
    pytest.param(
        with_peer_key(with_observed(dataclasses.replace(ROOM_BASE, state=mixed_state()), rooms=REGISTERING)),
        {"room/Team": (Action.CREATE, Reason.NEW)},
        {},
        id="room-create-seats-a-member-from-another-machine",
    ),
    pytest.param(
        with_observed(dataclasses.replace(ROOM_BASE, state=mixed_state()), rooms=REGISTERING),
        {"room/Team": (Action.ERROR, Reason.SECRET_UNAVAILABLE)},
        {},
        id="room-seat-needs-the-peer-key",
    ),
    pytest.param(
        with_peer_key(with_observed(dataclasses.replace(ROOM_BASE, state=mixed_state()), rooms=GATEWAY)),
        {"room/Team": (Action.ERROR, Reason.REMOTE_MEMBERS)},
        {},
        id="room-seat-needs-peer-register",
    ),
    pytest.param(mixed(), {}, {}, id="room-seat-in-sync"),
    pytest.param(
        mixed(status="needs_reauthorization"), {"room/Team": (Action.UPDATE, Reason.MANAGED)}, {}, id="room-seat-reauthorized"
    ),
    pytest.param(
        mixed(ends_in_days=3), {"room/Team": (Action.UPDATE, Reason.MANAGED)}, {}, id="room-seat-renewed-before-it-ends"
    ),
    pytest.param(
        mixed(room=Room(name="Team", members=["alpha", "spark/rev"])),
        {"room/Team": (Action.ERROR, Reason.PEER_MEMBERS)},
        {},
        id="room-with-peers-keeps-its-members",
    ),
    pytest.param(seated_here(READY), {"room/Team": (Action.NOOP, Reason.REMOTE_SEAT)}, {}, id="seat-served-here"),
    pytest.param(
        seated_here({"enabled": False, "reason": "durable_run_storage_required"}),
        {"room/Team": (Action.ERROR, Reason.GATEWAY_UNSUPPORTED)},
        {},
        id="seat-gateway-without-roomlink",
    ),
    pytest.param(
        seated_here({"enabled": True, "endpoint": {"available": False, "reason": "not_configured"}}),
        {"room/Team": (Action.ERROR, Reason.GATEWAY_UNSUPPORTED)},
        {},
        id="seat-without-an-endpoint",
    ),
]


@contextlib.contextmanager
def no_filesystem() -> Iterator[None]:
    """Any file access inside the block fails the test (the planner is pure)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the planner touched the filesystem: {args!r}")

    with pytest.MonkeyPatch.context() as mp:
        for module, name in ((builtins, "open"), (os, "open"), (os, "stat"), (os, "lstat"), (os, "listdir"), (os, "scandir")):
            mp.setattr(module, name, refuse)
        yield


def actions(plan: Plan) -> dict[str, tuple[Action, Reason]]:
    return {c.key: (c.action, c.code) for c in plan.changes}


def drifted(plan: Plan) -> dict[str, list[str]]:
    return {c.key: sorted(f.field for f in c.fields if f.drift) for c in plan.changes if c.drift}


@pytest.mark.parametrize(("inputs", "expected", "expected_drift"), CASES)
def test_planner_table(inputs: Inputs, expected: dict[str, tuple[Action, Reason]],
                       expected_drift: dict[str, list[str] | None]) -> None:  # fmt: skip
    with no_filesystem():
        plan = planning.plan(inputs)
    got = actions(plan)
    for key, want in expected.items():
        assert got.get(key) == want, (
            f"{key}: {got.get(key)} != {want}; reason: {next((c.reason for c in plan.changes if c.key == key), '-')}"
        )
    for key, value in got.items():
        if key not in expected:
            assert value[0] is Action.NOOP, f"{key} should be a no-op, is {value}"
    got_drift = drifted(plan)
    assert set(got_drift) == set(expected_drift)
    for key, fields in expected_drift.items():
        if fields is not None:
            assert got_drift[key] == fields


# Cases where no object is both recorded in the inventory and planned field by field (created,
# adopted, refused, in error, orphaned, pruned, released): status reports such an object by its state
# ("missing", "orphan", ...), never by fields, so there is no field list to compare.
NO_FIELDS_TO_COMPARE = frozenset({
    "owned-profile-deleted-outside-is-recreated-as-drift", "create", "unmanaged-profile-is-a-conflict", "adopt",
    "profile-of-another-fleet", "unreadable-profile", "missing-secret", "tombstoned-profile",
    "orphan-without-prune", "prune-of-a-fleets-only-bot-needs-yes", "prune-one-of-one-confirmed-with-yes",
    "default-profile-is-released-never-deleted",
    "orphan-already-gone",
})  # fmt: skip
FIELD_CASES = [case for case in CASES if case.id not in NO_FIELDS_TO_COMPARE]


def _comparable(inputs: Inputs, plan: Plan) -> list[ObjectChange]:
    """The changes status also describes field by field: recorded objects planned as update or no-op."""
    return [
        change for change in plan.changes
        if inputs.inventory.objects.get(change.key) is not None and change.action in (Action.UPDATE, Action.NOOP)
    ]  # fmt: skip


def test_the_cases_without_fields_to_compare_are_exactly_those_listed() -> None:
    """Keeps NO_FIELDS_TO_COMPARE true: a case leaves it as soon as it has a field to compare."""
    empty = {case.id for case in CASES if not _comparable(case.values[0], planning.plan(case.values[0]))}
    assert empty == NO_FIELDS_TO_COMPARE


@pytest.mark.parametrize(("inputs", "expected", "expected_drift"), FIELD_CASES)
def test_status_and_plan_agree_on_drift(inputs: Inputs, expected: dict[str, tuple[Action, Reason]],
                                        expected_drift: dict[str, list[str] | None]) -> None:  # fmt: skip
    """`status` lists drifted fields with core.drift; on every case above it names what `plan` marks."""
    plan = planning.plan(inputs)
    changes = _comparable(inputs, plan)
    assert changes, "no change to compare: list the case in NO_FIELDS_TO_COMPARE"
    for change in changes:
        entry = inputs.inventory.objects[change.key]
        applied = entry.get("applied", {})
        if change.kind in (Kind.BOT, Kind.INSTALL):
            status = drift.profile_drift(
                applied, inputs.observed.live[change.name if change.kind is Kind.BOT else "default"], inputs.inventory
            )
        elif change.kind is Kind.ROUTINE:
            job = next(j for j in inputs.observed.jobs[change.bot] if str(j.get("id")) == entry["job_id"])
            status = [f"job:{k}" for k in drift.routine_drift(applied, job)]
        else:
            assert inputs.observed.rooms is not None
            from controller.core.rooms import live_fields

            status = [f"room:{k}" for k in drift.room_drift(applied, live_fields(inputs.observed.rooms.rooms[entry["room_id"]]))]
        marked = sorted(f.field for f in change.fields if f.drift)
        assert sorted(status) == marked, f"{change.key}: status says {status}, plan marks {marked}"


def test_every_change_has_a_reason_code_and_kind() -> None:
    for case in CASES:
        for change in planning.plan(case.values[0]).changes:
            assert isinstance(change.kind, Kind) and isinstance(change.code, Reason) and isinstance(change.action, Action)


def test_the_planner_reads_no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Next runs in a plan come from `inputs.now`, not from the machine's clock."""
    plan = planning.plan(dataclasses.replace(BASELINE, state=ROUTINE_STATE))
    (routine,) = [c for c in plan.changes if c.kind is Kind.ROUTINE]
    assert "next runs" in routine.reason and "2026-12-0" in routine.reason
    later = planning.plan(dataclasses.replace(BASELINE, state=ROUTINE_STATE, now=datetime(2031, 1, 1, tzinfo=UTC)))
    assert "2031-01-01" in next(c for c in later.changes if c.kind is Kind.ROUTINE).reason


def test_install_wide_keys_of_another_fleet_are_a_conflict() -> None:
    inputs = dataclasses.replace(
        BASELINE, state=dataclasses.replace(state(ALPHA), install_config={"timezone": "Europe/Berlin"}),
        observed=dataclasses.replace(BASELINE.observed, foreign_install={"config:timezone": "other"}),
    )  # fmt: skip
    (install,) = [c for c in planning.plan(inputs).changes if c.kind is Kind.INSTALL]
    assert (install.action, install.code) == (Action.CONFLICT, Reason.FOREIGN_OWNER)
    assert install.key == INSTALL_KEY


def test_root_only_install_fields_reach_the_root_and_no_bot() -> None:
    """A peer's accepting side (one API server per machine) is written to the root profile only."""
    inputs = dataclasses.replace(
        BASELINE,
        state=dataclasses.replace(
            state(ALPHA), install_config={"timezone": "UTC", "gateway.multiplex_profiles": True},
            root_only=frozenset({"config:gateway.multiplex_profiles", "env:API_SERVER_KEY"}),
        ),
        observed=dataclasses.replace(
            BASELINE.observed, env_values={"": {"API_SERVER_KEY": "k" * 32, "PEER_KEY": "p" * 20}},
            secret_keys={"": frozenset({"API_SERVER_KEY", "PEER_KEY"})},
        ),
    )  # fmt: skip
    with no_filesystem():
        plan = planning.plan(inputs)
    install = {f.field for c in plan.changes if c.kind is Kind.INSTALL for f in c.fields}
    alpha = {f.field for c in plan.changes if c.name == "alpha" for f in c.fields}
    assert {"config:gateway.multiplex_profiles", "env:API_SERVER_KEY", "env:PEER_KEY", "config:timezone"} <= install
    assert {"config:timezone", "env:PEER_KEY"} <= alpha
    assert not alpha & {"config:gateway.multiplex_profiles", "env:API_SERVER_KEY"}


def test_a_seat_says_what_it_needs() -> None:
    """Seat fields: a new room's remote member is invited and registered; an existing one is
    re-seated when its route needs reauthorization or this fleet's grant ends within a week."""

    def seat(inputs: Inputs) -> tuple[Any, Any] | None:
        (room,) = [c for c in planning.plan(inputs).changes if c.key == "room/Team"]
        found = [(f.old, f.new) for f in room.fields if f.field == "seat:spark/rev"]
        return found[0] if found else None

    created = with_peer_key(with_observed(dataclasses.replace(ROOM_BASE, state=mixed_state()), rooms=REGISTERING))
    assert seat(created) == (None, "invited and registered")
    assert seat(mixed()) is None
    assert seat(mixed(status="needs_reauthorization")) == ("needs reauthorization", "invited and registered")
    assert seat(mixed(ends_in_days=3)) == ("grant ends 2026-12-04", "renewed")
    routes = dataclasses.replace(mixed().observed.rooms, routes={})  # type: ignore[arg-type]
    assert seat(with_observed(mixed(status="needs_reauthorization"), rooms=routes)) is None  # no driver_status: no judging


def test_a_refused_seat_waits_for_its_retry_time_then_is_planned_again() -> None:
    """apply records a refused seat with `retry_after`; until then the room is pending with the refusal."""
    inputs = mixed(status="needs_reauthorization")
    entry = inputs.inventory.objects[room_key("Team")]
    seat = {**entry["seats"]["spark/rev"], "pending": "refused (5120): peer route changed", "attempts": 2}
    waiting = {**entry, "seats": {"spark/rev": {**seat, "retry_after": NOW.timestamp() + 60}}}
    (change,) = [
        c
        for c in planning.plan(
            dataclasses.replace(inputs, inventory=inventory({**inputs.inventory.objects, room_key("Team"): waiting}))
        ).changes
        if c.key == "room/Team"
    ]
    assert (change.action, change.code) == (Action.ERROR, Reason.GATEWAY_PENDING)
    assert "spark/rev is not seated (refused (5120): peer route changed)" in change.reason
    due = {**entry, "seats": {"spark/rev": {**seat, "retry_after": NOW.timestamp() - 1}}}
    (change,) = [
        c
        for c in planning.plan(
            dataclasses.replace(inputs, inventory=inventory({**inputs.inventory.objects, room_key("Team"): due}))
        ).changes
        if c.key == "room/Team"
    ]
    assert change.action is Action.UPDATE and [f.field for f in change.fields][:1] == ["seat:spark/rev"]
    # The pause: 5 minutes, doubling, at most 6 hours.
    assert [rooms.seat_retry_after(n, 0) for n in (1, 2, 3, 10)] == [300, 600, 1200, 21600]


def test_writes_that_need_a_feature_are_refused_where_it_is_missing() -> None:
    old = dataclasses.replace(GATEWAY, capabilities={**GATEWAY.capabilities, "features": ["room_identity"]})
    renamed = dataclasses.replace(
        ROOM_OWNED, state=state(ALPHA, BETA, rooms=(Room(name="Crew", renamed_from="Team", members=["alpha", "beta"]),))
    )
    view = dataclasses.replace(old, rooms={ROOM_ID: live_room(ROOM_ID, "Team", ["alpha", "beta"])})
    (change,) = [c for c in planning.plan(with_observed(renamed, rooms=view)).changes if c.kind == "room"]
    assert (change.action, change.code) == (Action.ERROR, Reason.GATEWAY_UNSUPPORTED)
    assert "rename_revision" in change.reason and "groups protocol 2" in change.reason and "hermes update" in change.reason
    blind = dataclasses.replace(old, capabilities={**old.capabilities, "methods": [*METHODS, "groups.peer.register"]})
    created = with_peer_key(with_observed(dataclasses.replace(ROOM_BASE, state=mixed_state()), rooms=blind))
    (change,) = [c for c in planning.plan(created).changes if c.key == "room/Team"]
    assert change.action is Action.ERROR and "peer_route_grant_fingerprint" in change.reason


def test_converge_steps_are_the_writes_in_the_order_the_gateway_accepts() -> None:
    live = live_room(ROOM_ID, "Team", ["alpha", "beta", "carol"])
    live["responder_policy"] = {"default_responder": "leader", "leader_member_id": "carol"}
    steps = rooms.converge_steps(live, "Crew", ["alpha", "beta", "dave"], "lead:dave")
    assert [(s.method, s.field, s.new) for s in steps] == [
        ("groups.rename", "room:name", "Crew"),
        ("groups.policy.update", "room:who_answers (before members)", "everyone"),
        ("groups.members.update", "room:members", ["alpha", "beta", "dave"]),
        ("groups.policy.update", "room:who_answers", "lead:dave"),
    ]
    # The lead stays: the wanted policy goes first and nothing follows the roster.
    steps = rooms.converge_steps(live, "Team", ["alpha", "beta"], "lead:alpha")
    assert [(s.method, s.new) for s in steps] == [
        ("groups.policy.update", "lead:alpha"),
        ("groups.members.update", ["alpha", "beta"]),
    ]
    assert rooms.planned_writes("create", ["room:name", "room:members", "seat:spark/rev", "room:who_answers"]) == [
        "groups.create", "groups.peer.register", "groups.policy.update",
    ]  # fmt: skip
    assert rooms.planned_writes("delete", []) == ["groups.disband"]


# --- _config_version (docs/hermes/files.md#config-version) ----------------------------------------


def _alpha_change(inputs: Inputs) -> ObjectChange:
    with no_filesystem():
        plan = planning.plan(inputs)
    return next(c for c in plan.changes if c.key == "bot/alpha")


def test_config_version_bumped_by_a_later_hermes_is_not_drift() -> None:
    bumped = live_from(ALPHA, config={"model": {"default": "m1"}, "_config_version": CONFIG_VERSION + 4})
    change = _alpha_change(with_live(BASELINE, alpha=bumped))
    assert (change.action, change.drift, change.fields) == (Action.NOOP, False, ())


def test_config_version_is_stamped_on_a_file_applied_without_it() -> None:
    # A bot applied by an earlier hermes-fleet: its record and its file lack the version.
    bare = live_from(ALPHA, config={"model": {"default": "m1"}})
    record = applied_record(desired_fields(ALPHA, {}, None), frozenset(), inventory())
    unstamped = inventory({bot_key("alpha"): {"applied": record}})
    change = _alpha_change(dataclasses.replace(with_live(BASELINE, alpha=bare), inventory=unstamped))
    assert change.action is Action.UPDATE and not change.drift
    assert [(f.field, f.op, f.new) for f in change.fields] == [(CONFIG_VERSION_FIELD, Op.ADD, CONFIG_VERSION)]


def test_config_version_of_an_older_hermes_is_left_to_its_migrations() -> None:
    old = live_from(ALPHA, config={"model": {"default": "m1"}, "_config_version": 12})
    inputs = with_live(BASELINE, alpha=old)
    change = _alpha_change(inputs)
    assert CONFIG_VERSION_FIELD not in {f.field for f in change.fields}
    with no_filesystem():
        notes = planning.plan(inputs).notes
    assert any("alpha (v12: `hermes -p alpha config migrate`)" in n and n.startswith("warning:") for n in notes), notes


# --- @-tags shared with the home's other profiles (planning/tags.py) ----------------------------------


def test_a_new_title_that_tags_an_unmanaged_profile_is_a_conflict() -> None:
    writer = DesiredBot(name="beta", origin=Origin("fleet.yaml", 20), title="Writer")
    inputs = dataclasses.replace(
        with_observed(BASELINE, others={"writer": (None, None)}),
        state=state(ALPHA, writer),
    )
    inputs = with_live(inputs, beta=absent("beta"))
    with no_filesystem():
        plan = planning.plan(inputs)
    change = next(c for c in plan.changes if c.key == "bot/beta")
    assert (change.action, change.code) == (Action.CONFLICT, Reason.MENTION_COLLISION)
    assert "its title gives @writer, which is also the name of profile 'writer'" in change.reason


def test_a_display_name_shared_with_an_unmanaged_title_is_a_conflict_when_changed() -> None:
    renamed = dataclasses.replace(ALPHA, display_name="Scout")
    inputs = dataclasses.replace(with_observed(BASELINE, others={"helper": ("Scout", None)}), state=state(renamed))
    change = _alpha_change(inputs)
    assert (change.action, change.code) == (Action.CONFLICT, Reason.MENTION_COLLISION)
    assert "its display_name gives @scout, which is also the title tag of profile 'helper'" in change.reason


def test_a_collision_already_live_is_a_warning() -> None:
    inputs = with_observed(BASELINE, others={"helper": (None, "Alpha")})
    with no_filesystem():
        plan = planning.plan(inputs)
    assert actions(plan)["bot/alpha"] == (Action.NOOP, Reason.MANAGED)
    assert any(n.startswith("warning: bot 'alpha': its name gives @alpha") and "'helper'" in n for n in plan.notes), plan.notes


def test_other_profiles_without_shared_tags_change_nothing() -> None:
    inputs = with_observed(BASELINE, others={"helper": ("Helper", "Assistant")})
    with no_filesystem():
        plan = planning.plan(inputs)
    assert actions(plan)["bot/alpha"] == (Action.NOOP, Reason.MANAGED)
    assert not any("@" in n for n in plan.notes)


def test_a_removed_bot_whose_marker_is_spoiled_is_an_error_not_a_release() -> None:
    """A bot removed from the manifests with an unreadable owner marker (its own folder: it can write
    there) stays this fleet's, in error; it is not released as "made outside hermes-fleet"."""
    spoiled = dataclasses.replace(live_from(ALPHA), marker=None, errors=("profiles/alpha/.hermes-fleet.json: too deep",))
    inputs = with_options(with_live(dataclasses.replace(BASELINE, state=state()), alpha=spoiled), prune=True, yes=True)
    with no_filesystem():
        (change,) = [c for c in planning.plan(inputs).changes if c.key == "bot/alpha"]
    assert (change.action, change.code) == (Action.ERROR, Reason.UNREADABLE)
    assert "too deep" in change.reason
