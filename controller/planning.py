"""Planning: desired state + observed state + inventory -> a Plan of per-field changes (pure).

Three-way, like `kubectl apply`'s last-applied: a field is compared desired vs live; it is *drift*
when the live value also differs from what this fleet last applied. A field the manifests stop
setting is removed (config/.env keys) or explicitly cleared (Bot Mode metadata) only if nobody
changed it since we applied it. Secret values never enter a Plan: only "(secret)" markers.
Called by commands (plan, apply, status); touches nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from controller import inventory as inv
from controller.desired import DesiredBot, DesiredState
from controller.naming import DEFAULT_PROFILE
from controller.observed import LiveProfile

# ui_meta['hermes-bots'] keys this tool manages, and the explicit value that clears each one
# (Desktop keeps keys the server omits, so a clear must be written: bot-mode-state.md section 1).
META_CLEAR: dict[str, Any] = {
    "title": None, "description": None, "hidden": False, "pinned": False, "sectionId": None,
    "sectionName": None, "shape": None, "color": None, "imageKind": None, "custom": False,
}
PRUNE_GUARD_FRACTION = 0.25
# Fields that stay as they are when the manifests stop managing them (a persona, a chat history).
KEPT_ON_RELEASE = ("soul", "botchat")


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    ADOPT = "adopt"
    DELETE = "delete"
    NOOP = "no-op"
    ORPHAN = "orphan"  # owned, gone from the manifests, kept because --prune was not given
    RELEASE = "release"  # gone from the manifests and never deleted (the default profile)
    CONFLICT = "conflict"
    ERROR = "error"


WRITING_ACTIONS = (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.DELETE, Action.RELEASE)


@dataclass(frozen=True)
class FieldChange:
    field: str  # namespace:key, e.g. config:model.default, env:OPENROUTER_API_KEY, meta:title
    op: str  # add | change | remove
    old: Any
    new: Any
    secret: bool = False
    drift: bool = False


@dataclass(frozen=True)
class ObjectChange:
    kind: str  # bot | install
    name: str
    action: Action
    reason: str = ""
    fields: tuple[FieldChange, ...] = ()
    origin: str = ""
    drift: bool = False
    ref: str = ""  # the live identity, where it is not the name (a cron job's id)

    @property
    def key(self) -> str:
        if self.kind == "install":
            return inv.INSTALL_KEY
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Plan:
    fleet: str
    digest: str
    changes: tuple[ObjectChange, ...]
    prune: bool = False
    notes: tuple[str, ...] = ()

    def by_action(self, *actions: Action) -> list[ObjectChange]:
        return [c for c in self.changes if c.action in actions]

    @property
    def has_changes(self) -> bool:
        return any(c.action in WRITING_ACTIONS for c in self.changes)

    @property
    def conflicts(self) -> list[ObjectChange]:
        return self.by_action(Action.CONFLICT)

    @property
    def errors(self) -> list[ObjectChange]:
        return self.by_action(Action.ERROR)

    @property
    def drifted(self) -> list[ObjectChange]:
        return [c for c in self.changes if c.drift]

    def counts(self) -> dict[str, int]:
        out = {a.value: 0 for a in Action}
        for change in self.changes:
            out[change.action.value] += 1
        return out


@dataclass
class Inputs:
    """Everything the planner needs, gathered by commands (observed + resolved secrets)."""

    state: DesiredState
    inventory: inv.Inventory
    live: dict[str, LiveProfile]  # by profile name; "default" is the root
    env_values: dict[str, dict[str, str]]  # bot name (or "" for install) -> resolved .env values
    secret_keys: dict[str, set[str]]  # bot name (or "") -> env keys that hold secrets
    secret_errors: dict[str, str] = field(default_factory=dict)  # bot name -> why a secret is missing
    avatars: dict[str, tuple[str, str]] = field(default_factory=dict)  # bot -> (ext, sha256) of the image
    foreign: dict[str, str] = field(default_factory=dict)  # object key -> other fleet owning it
    foreign_install: dict[str, str] = field(default_factory=dict)  # install field -> other fleet
    jobs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # bot -> its live cron jobs
    job_errors: dict[str, str] = field(default_factory=dict)  # bot -> why its cron store is unreadable
    timezones: dict[str, Any] = field(default_factory=dict)  # bot -> tzinfo of its Hermes `timezone`
    rooms: Any = None  # rooms.Observed: what the gateway said (None: no room to look at)
    gateway: Any = None  # gateway.GatewayOptions for the room stage of apply
    prune: bool = False
    adopt: bool = False
    yes: bool = False


# --- field values ------------------------------------------------------------------------------


def desired_fields(bot: DesiredBot, env_values: dict[str, str], avatar: tuple[str, str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {f"config:{k}": v for k, v in bot.config.items()}
    out.update({f"env:{k}": v for k, v in env_values.items()})
    if bot.description is not None:
        # Top-level profile.yaml description only: that is what Desktop writes and reads (via
        # `profile describe`); ui_meta's own `description` has no Desktop writer, and a copy there
        # would go stale on the next Desktop edit (bot-mode-state.md section 1).
        out["profile:description"] = bot.description.strip()
    if bot.display_name is not None:
        out["profile:display_name"] = bot.display_name
    for key, value in (("title", bot.title), ("hidden", bot.hidden), ("pinned", bot.pinned)):
        if value is not None:
            out[f"meta:{key}"] = value
    if bot.section is not None:
        out["meta:sectionId"], out["meta:sectionName"] = bot.section
    for key, value in (bot.avatar or {}).items():
        if value is not None:
            out[f"meta:{key}"] = value
    if bot.soul is not None:
        out["soul"] = bot.soul
    if avatar is not None:
        out["avatar"] = f"{avatar[0]}:{avatar[1]}"
    out["botchat"] = True
    return out


def install_fields(state: DesiredState, env_values: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {f"config:{k}": v for k, v in state.install_config.items()}
    out.update({f"env:{k}": v for k, v in env_values.items()})
    return out


def live_value(live: LiveProfile, name: str) -> tuple[bool, Any]:
    space, _, key = name.partition(":")
    if space == "config":
        return live.config_value(key)
    if space == "env":
        return live.env_value(key)
    if space == "meta":
        return live.meta_value(key)
    if space == "profile":
        return live.profile_value(key)
    if space == "soul":
        return live.soul is not None, live.soul
    if space == "avatar":
        return (True, f"{live.avatar[0]}:{live.avatar[1]}") if live.avatar else (False, None)
    if space == "botchat":
        return (True, True) if live.bot_chat else (False, None)
    raise KeyError(name)


def comparable(name: str, value: Any, *, secret: bool, inventory: inv.Inventory) -> Any:
    """The form stored as last-applied and compared: hashes for secrets and souls."""
    if value is None:
        return None
    if secret:
        return inventory.secret_hash(str(value))
    if name == "soul":
        return "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()
    return value


def clear_value(name: str) -> Any:
    space, _, key = name.partition(":")
    return META_CLEAR.get(key) if space == "meta" else None


# --- the planner -----------------------------------------------------------------------------


def diff_fields(desired: dict[str, Any], live: LiveProfile, applied: dict[str, Any], secret_keys: set[str],
                inventory: inv.Inventory) -> list[FieldChange]:
    changes: list[FieldChange] = []
    for name in sorted(set(desired) | set(applied)):
        # A key applied as a secret stays one after the manifests drop it (its record is a keyed
        # hash): compared as a hash, so the removal is planned and its value never shown.
        was_secret = isinstance(applied.get(name), str) and applied[name].startswith("hmac:")
        secret = name.startswith("env:") and (name[4:] in secret_keys or was_secret)
        present, live_raw = live_value(live, name)
        if present and name.startswith("config:") and name not in applied and not live.config_raw(name[7:]):
            # Absent from the file but equal to Hermes' default: write it explicitly the first
            # time (pinning it); once applied, a later absence means Hermes dropped it (no drift).
            present = False
        live_cv = comparable(name, live_raw, secret=secret, inventory=inventory) if present else None
        was = applied.get(name)
        drift = name in applied and live_cv != was
        if name in desired:
            want_cv = comparable(name, desired[name], secret=secret, inventory=inventory)
            if present and live_cv == want_cv:
                continue
            op = "change" if present else "add"
            changes.append(FieldChange(name, op, _shown(name, live_raw if present else None, secret),
                                       _shown(name, desired[name], secret), secret, drift))
        elif present and not drift and name not in KEPT_ON_RELEASE and live_raw != clear_value(name):
            # No longer in the manifests, and untouched since we applied it: remove / clear it.
            changes.append(FieldChange(name, "remove", _shown(name, live_raw, secret), None, secret, False))
    return changes


def _shown(name: str, value: Any, secret: bool) -> Any:
    if value is None:
        return None
    if secret:
        return "(secret)"
    if name == "soul":
        text = str(value)
        return f"({len(text.splitlines())} lines, sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]})"
    return value


def plan(inputs: Inputs) -> Plan:
    state = inputs.state
    changes: list[ObjectChange] = []
    changes.append(_plan_install(inputs))
    for bot in state.bots.values():
        changes.append(_plan_bot(inputs, bot))
    for name in inputs.inventory.owned_bots():
        if name not in state.bots:
            changes.append(_plan_orphan(inputs, name))
    _guard_prune(inputs, changes)
    bot_actions = {c.name: c.action for c in changes if c.kind == "bot"}
    for name, bot in state.bots.items():
        changes.extend(_plan_routines(inputs, bot, bot_actions[name]))
    changes.extend(_plan_routine_orphans(inputs, bot_actions))
    from controller import rooms

    room_changes, notes = rooms.plan_rooms(inputs, bot_actions)
    changes.extend(room_changes)
    return Plan(fleet=state.fleet, digest=state.digest, changes=tuple(changes), prune=inputs.prune,
                notes=tuple(notes))


def _plan_install(inputs: Inputs) -> ObjectChange:
    live = inputs.live[DEFAULT_PROFILE]
    if live.errors:
        return ObjectChange("install", "root", Action.ERROR, "; ".join(live.errors))
    if "" in inputs.secret_errors:
        return ObjectChange("install", "root", Action.ERROR, inputs.secret_errors[""])
    desired = install_fields(inputs.state, inputs.env_values.get("", {}))
    taken = sorted(f for f in desired if f in inputs.foreign_install)
    if taken:
        owners = ", ".join(f"{f} (fleet {inputs.foreign_install[f]!r})" for f in taken)
        return ObjectChange("install", "root", Action.CONFLICT, f"install-wide keys owned by another fleet: {owners}")
    applied = inputs.inventory.applied(inv.INSTALL_KEY)
    fields = diff_fields(desired, live, applied, inputs.secret_keys.get("", set()), inputs.inventory)
    action = Action.UPDATE if fields else Action.NOOP
    return ObjectChange("install", "root", action, "install-wide settings (root profile)", tuple(fields),
                        drift=any(f.drift for f in fields))


def _plan_bot(inputs: Inputs, bot: DesiredBot) -> ObjectChange:
    key = inv.bot_key(bot.name)
    live = inputs.live[bot.name]
    origin = str(bot.origin)
    owned = inputs.inventory.owns(key) or bool(live.marker and live.marker.get("fleet") == inputs.state.fleet)
    foreign = inputs.foreign.get(key) or (live.marker or {}).get("fleet") if not owned else None
    if foreign and foreign != inputs.state.fleet:
        return ObjectChange("bot", bot.name, Action.CONFLICT, f"profile is owned by fleet {foreign!r}; "
                            "two fleets never manage one object", origin=origin)
    if live.errors:
        return ObjectChange("bot", bot.name, Action.ERROR, "; ".join(live.errors), origin=origin)
    if bot.name in inputs.secret_errors:
        return ObjectChange("bot", bot.name, Action.ERROR, inputs.secret_errors[bot.name], origin=origin)
    desired = desired_fields(bot, inputs.env_values.get(bot.name, {}), inputs.avatars.get(bot.name))
    applied = inputs.inventory.applied(key) if owned else {}
    secret_keys = inputs.secret_keys.get(bot.name, set())
    if not live.exists and bot.name != DEFAULT_PROFILE:
        if live.tombstoned:
            return ObjectChange("bot", bot.name, Action.ERROR, f"profiles/.deleted/{bot.name} marks this profile "
                                "as deleted by Hermes; remove the tombstone with `hermes profile create` "
                                "or rename the bot", origin=origin)
        fields = diff_fields(desired, live, {}, secret_keys, inputs.inventory)
        reason = "profile was deleted outside hermes-fleet; recreating it" if owned else "profile does not exist"
        return ObjectChange("bot", bot.name, Action.CREATE, reason, tuple(fields), origin, drift=owned)
    fields = diff_fields(desired, live, applied, secret_keys, inputs.inventory)
    drift = any(f.drift for f in fields)
    if owned:
        action = Action.UPDATE if fields else Action.NOOP
        return ObjectChange("bot", bot.name, action, "managed by this fleet", tuple(fields), origin, drift)
    if not inputs.adopt:
        return ObjectChange("bot", bot.name, Action.CONFLICT, f"profile {bot.name!r} exists but is not managed by "
                            f"fleet {inputs.state.fleet!r}; re-run with --adopt to take it over",
                            tuple(fields), origin)
    return ObjectChange("bot", bot.name, Action.ADOPT, "existing profile taken over (--adopt)", tuple(fields), origin)


def _plan_orphan(inputs: Inputs, name: str) -> ObjectChange:
    if name == DEFAULT_PROFILE:
        return ObjectChange("bot", name, Action.RELEASE, "removed from the manifests; the default profile is "
                            "never deleted, only released from this fleet")
    live = inputs.live.get(name)
    if live is not None and not live.exists:
        return ObjectChange("bot", name, Action.RELEASE, "removed from the manifests and already gone from the home")
    if not inputs.prune:
        return ObjectChange("bot", name, Action.ORPHAN, "removed from the manifests; `apply --prune` moves it to a "
                            "restorable backup")
    return ObjectChange("bot", name, Action.DELETE, "removed from the manifests (--prune): moved to a backup "
                        "under .hermes-fleet/backups, restorable with `hermes-fleet restore`")


def _guard_prune(inputs: Inputs, changes: list[ObjectChange]) -> None:
    deletes = [c for c in changes if c.action is Action.DELETE]
    owned = len(inputs.inventory.owned_bots())
    if not deletes or inputs.yes:
        return
    limit = max(1, int(owned * PRUNE_GUARD_FRACTION))
    if len(deletes) > limit or (owned > 1 and len(deletes) == owned):
        for i, change in enumerate(changes):
            if change.action is Action.DELETE:
                changes[i] = ObjectChange(
                    "bot", change.name, Action.CONFLICT,
                    f"prune would delete {len(deletes)} of {owned} bots (more than the {PRUNE_GUARD_FRACTION:.0%} "
                    "guard); re-run with --yes if that is intended", origin=change.origin)


# --- routines -------------------------------------------------------------------------------------


def routine_key(bot: str, title: str) -> str:
    return f"routine/{bot}/{title}"


def _plan_routines(inputs: Inputs, bot: DesiredBot, bot_action: Action) -> list[ObjectChange]:
    from controller import routines

    if bot_action in (Action.CONFLICT, Action.ERROR):
        return []  # the bot's own line says why; its routines wait for it
    if bot.name in inputs.job_errors:
        return [ObjectChange("routine", f"{bot.name}/{r.name}", Action.ERROR, inputs.job_errors[bot.name])
                for r in bot.routines]
    jobs = {str(j.get("id")): j for j in inputs.jobs.get(bot.name, [])}
    out = []
    for routine in bot.routines:
        change, job_id = _plan_routine(inputs, bot, bot_action, routine, jobs, routines)
        out.append(dataclasses.replace(change, ref=job_id or ""))
    return out


def _plan_routine(inputs: Inputs, bot: DesiredBot, bot_action: Action, routine: Any, jobs: dict[str, Any],
                  routines: Any) -> tuple[ObjectChange, str | None]:
    name = f"{bot.name}/{routine.name}"
    entry = inputs.inventory.objects.get(routine_key(bot.name, routine.name))
    if entry is None and routine.renamed_from:
        entry = inputs.inventory.objects.get(routine_key(bot.name, routine.renamed_from))
    desired = routines.desired_fields(bot.name, routine)
    job = jobs.get(str(entry.get("job_id"))) if entry else None
    if entry is not None and job is not None:
        fields = _diff_job(desired, routines.live_fields(job), entry.get("applied", {}))
        action = Action.UPDATE if fields else Action.NOOP
        reason = "renamed" if routine.renamed_from and entry is not inputs.inventory.objects.get(
            routine_key(bot.name, routine.name)) else "managed by this fleet"
        when = _next_runs_note(routine, inputs.timezones.get(bot.name)) if fields else ""  # no-op: no croniter
        return ObjectChange("routine", name, action, _join(reason, when), tuple(fields),
                            drift=any(f.drift for f in fields)), str(job.get("id"))
    when = _next_runs_note(routine, inputs.timezones.get(bot.name))
    if entry is not None and routines.is_one_shot(routine) and entry.get("applied") == desired:
        return ObjectChange("routine", name, Action.NOOP, "one-shot ran and Hermes removed it: done"), None
    fields = tuple(FieldChange(f"job:{k}", "add", None, v) for k, v in desired.items() if v not in (None, [], False))
    if entry is not None:
        return ObjectChange("routine", name, Action.CREATE, _join("job was deleted outside hermes-fleet", when),
                            fields, drift=True), None
    same_name = [j for j in jobs.values() if j.get("name") == desired["name"]]
    if same_name:
        job = same_name[0]
        fields_now = tuple(_diff_job(desired, routines.live_fields(job), {}))
        if inputs.adopt or bot_action is Action.ADOPT:
            return ObjectChange("routine", name, Action.ADOPT, "existing job taken over (--adopt)",
                                fields_now), str(job.get("id"))
        return ObjectChange("routine", name, Action.CONFLICT, f"a cron job named {desired['name']!r} exists that "
                            "this fleet does not own; re-run with --adopt to take it over"), None
    return ObjectChange("routine", name, Action.CREATE, _join("new routine", when), fields), None


def _diff_job(desired: dict[str, Any], live: dict[str, Any], applied: dict[str, Any]) -> list[FieldChange]:
    from controller import routines

    out = []
    for key, want in desired.items():
        have = live.get(key)
        if routines.same(key, have, want):
            continue
        drift = key in applied and have != applied[key]
        out.append(FieldChange(f"job:{key}", "change", have, want, drift=drift))
    return out


def _next_runs_note(routine: Any, tz: Any = None) -> str:
    """The next three runs of a cron routine, in the bot's Hermes `timezone` (the one its
    scheduler evaluates the expression in), or the server's local time when none is configured."""
    from controller import routines, schedules

    try:
        parsed = schedules.parse(routine.schedule)
    except schedules.ScheduleError:
        return ""
    if parsed.kind != "cron":
        return ""
    now = routines.now_in(tz)
    runs = schedules.next_runs(parsed, 3, now=now)
    label = getattr(tz, "key", None) or now.strftime("%Z") or "local"
    return f"next runs ({label}): " + ", ".join(r.strftime("%Y-%m-%d %H:%M") for r in runs)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _plan_routine_orphans(inputs: Inputs, bot_actions: dict[str, Action]) -> list[ObjectChange]:
    wanted = set()
    for bot in inputs.state.bots.values():
        for routine in bot.routines:
            wanted.add(routine_key(bot.name, routine.name))
            if routine.renamed_from:
                wanted.add(routine_key(bot.name, routine.renamed_from))
    out = []
    for key in sorted(k for k in inputs.inventory.objects if k.startswith("routine/") and k not in wanted):
        _, bot, title = key.split("/", 2)
        name = f"{bot}/{title}"
        follows = bot_actions.get(bot)
        if follows in (Action.DELETE, Action.RELEASE):
            out.append(ObjectChange("routine", name, Action.RELEASE, f"goes with bot/{bot}"))
        elif follows in (Action.CONFLICT, Action.ERROR):
            continue
        elif inputs.prune and follows is not Action.ORPHAN:
            out.append(ObjectChange("routine", name, Action.DELETE, "removed from the manifests (--prune)",
                                    ref=str(inputs.inventory.objects[key].get("job_id") or "")))
        else:
            out.append(ObjectChange("routine", name, Action.ORPHAN,
                                    "removed from the manifests; `apply --prune` deletes the job"))
    return out
