"""Planning the install-wide settings and the bots: a three-way diff per field (pure).

Three-way, like `kubectl apply`'s last-applied: a field is compared desired vs live; it is drift
when the live value also differs from what this fleet last applied (core.drift). A field the
manifests stop setting is removed (config/.env keys) or explicitly cleared (Bot Mode metadata)
only if nobody changed it since we applied it. Secret values never enter a plan, only `redact.SECRET`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from sys import intern
from typing import Any

from controller import redact
from controller.core import drift
from controller.core.inventory import INSTALL_KEY, Inventory, bot_key
from controller.core.types import Action, FieldChange, Inputs, Kind, LiveProfile, ObjectChange, Observed, Op, Reason
from controller.hermes import DEFAULT_PROFILE, defaults
from controller.manifests.desired import DesiredBot, DesiredState

# ui_meta['hermes-bots'] keys this tool manages, and the explicit value that clears each one
# (Desktop keeps keys the server omits, so a clear must be written: docs/hermes/bot-mode.md#clears).
META_CLEAR: dict[str, Any] = {
    "title": None,
    "description": None,
    "hidden": False,
    "pinned": False,
    "sectionId": None,
    "sectionName": None,
    "shape": None,
    "color": None,
    "imageKind": None,
    "custom": False,
}
# Fields that stay as they are when the manifests stop managing them (a persona, a chat history,
# the Bot Mode record itself).
# `_config_version` too: the file's keys stay in that schema after the fleet lets them go.
CONFIG_VERSION_FIELD = f"config:{defaults.CONFIG_VERSION_KEY}"
KEPT_ON_RELEASE = ("soul", "botchat", "botmode", CONFIG_VERSION_FIELD)


@dataclass(frozen=True)
class BotDesired:
    """What one bot should hold: its own settings plus what it inherits from the install-wide ones."""

    fields: dict[str, Any]
    secret_keys: frozenset[str]
    inherited: frozenset[str]  # field names that come from the install-wide settings


def _overridden(key: str, own: Mapping[str, Any]) -> bool:
    """A bot's own config key wins over an install-wide one at, above or below the same path."""
    return any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in own)


def bot_desired(state: DesiredState, obs: Observed, bot: DesiredBot) -> BotDesired:
    """A bot's desired fields. A bot's process reads only its own profile's config.yaml and .env
    (docs/hermes/home.md#what-a-bot-reads), so the install-wide settings are written into every bot
    as well as into the root; the `default` bot is the root and gets them through `install/root`."""
    config = dict(bot.config)
    env = dict(obs.env_values.get(bot.name, {}))
    secret_keys = set(obs.secret_keys.get(bot.name, frozenset()))
    inherited: set[str] = set()
    if bot.name != DEFAULT_PROFILE:
        # Root-only fields (a peer's accepting side: one API server per machine) stay in the root.
        for key, value in state.install_config.items():
            if not _overridden(key, bot.config) and f"config:{key}" not in state.root_only:
                config[key] = value
                inherited.add(f"config:{key}")
        for key, value in obs.env_values.get("", {}).items():
            if key not in bot.env and f"env:{key}" not in state.root_only:
                env[key] = value
                inherited.add(f"env:{key}")
        secret_keys |= {k for k in obs.secret_keys.get("", frozenset()) if k not in bot.env and f"env:{k}" not in state.root_only}
    fields = desired_fields(bot, env, obs.avatars.get(bot.name), config=config)
    if bot.name != DEFAULT_PROFILE:  # the root's config.yaml is the install-wide settings' (install_fields)
        fields.update(config_version(obs.live.get(bot.name)))
    return BotDesired(fields, frozenset(secret_keys), frozenset(inherited))


def config_version(live: LiveProfile | None) -> dict[str, int]:
    """The `_config_version` field of a config.yaml this fleet writes: the target Hermes' schema
    version, since every key the fleet writes is in that schema (docs/hermes/files.md#config-version).

    None for a file whose raw version is a lower, non-zero number: an older Hermes wrote it and its
    migrations have not run; stamping the version would skip them (plan notes say what to run)."""
    if live is not None and live.config is not None:
        present, raw = defaults.lookup(live.config, defaults.CONFIG_VERSION_KEY)
        if present and 0 < defaults.config_version_of(raw) < defaults.CONFIG_VERSION:
            return {}
    return {CONFIG_VERSION_FIELD: defaults.CONFIG_VERSION}


# --- field values ------------------------------------------------------------------------------


def desired_fields(bot: DesiredBot, env_values: Mapping[str, str], avatar: tuple[str, str] | None, *,
                   config: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    # Field names are interned: every bot's plan fields and inventory record share one string per
    # name (a bot has about 50 of them: memory at 10,000 bots).
    out: dict[str, Any] = {intern(f"config:{k}"): v for k, v in (bot.config if config is None else config).items()}
    out.update({intern(f"env:{k}"): v for k, v in env_values.items()})
    if bot.description is not None:
        # Top-level profile.yaml description only: that is what Desktop writes and reads (via
        # `profile describe`); ui_meta's own `description` has no Desktop writer, and a copy there
        # would go stale on the next Desktop edit (docs/hermes/bot-mode.md#record).
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
    out["botmode"] = True  # every managed bot carries a ui_meta['hermes-bots'] record
    return out


def install_fields(state: DesiredState, obs: Observed) -> dict[str, Any]:
    out: dict[str, Any] = {f"config:{k}": v for k, v in state.install_config.items()}
    root_bot = state.bots.get(DEFAULT_PROFILE)
    if state.install_config or (root_bot is not None and root_bot.config):
        out.update(config_version(obs.live.get(DEFAULT_PROFILE)))  # only where the fleet writes config.yaml
    out.update({f"env:{k}": v for k, v in obs.env_values.get("", {}).items()})
    return out


def clear_value(name: str) -> Any:
    space, _, key = name.partition(":")
    return META_CLEAR.get(key) if space == "meta" else None


def applied_record(desired: Mapping[str, Any], secret_keys: frozenset[str] | set[str], inventory: Inventory) -> dict[str, Any]:
    """What the inventory records for these desired values (secrets and souls hashed)."""
    return {
        name: drift.comparable(name, value, secret=name.startswith("env:") and name[4:] in secret_keys, inventory=inventory)
        for name, value in desired.items()
    }


def diff_fields(
    desired: Mapping[str, Any],
    live: LiveProfile,
    *,
    applied: Mapping[str, Any],
    secret_keys: frozenset[str] | set[str],
    inventory: Inventory,
    inherited: frozenset[str] = frozenset(),
) -> list[FieldChange]:
    if not live.exists and not applied:
        # A new profile, never applied: every desired field is added, nothing is live to compare,
        # drift or remove (what the loop below gives, without its per-field look-ups).
        return [
            FieldChange(
                field=name,
                op=Op.ADD,
                old=None,
                new=shown(name, desired[name], secret),
                secret=secret,
                drift=False,
                inherited=name in inherited,
            )
            for name in sorted(desired)
            for secret in (name.startswith("env:") and name[4:] in secret_keys,)
        ]
    changes: list[FieldChange] = []
    for name in sorted(set(desired) | set(applied)):
        # A key applied as a secret stays one after the manifests drop it (its record is a keyed
        # hash): compared as a hash, so the removal is planned and its value never shown.
        secret = name.startswith("env:") and (name[4:] in secret_keys or drift.is_secret_record(applied.get(name)))
        present, live_raw = live.value(name)
        if present and name.startswith("config:") and name not in applied and not live.config_raw(name[7:]):
            # Absent from the file but equal to Hermes' default: write it explicitly the first
            # time (pinning it); once applied, a later absence means Hermes dropped it (no drift).
            present = False
        drifted = name in applied and drift.field_drifted(name, applied[name], live, inventory)
        if name in desired:
            want = drift.comparable(name, desired[name], secret=secret, inventory=inventory)
            if present and drift.comparable(name, live_raw, secret=secret, inventory=inventory) == want:
                continue
            op = Op.CHANGE if present else Op.ADD
            changes.append(
                FieldChange(
                    field=name,
                    op=op,
                    old=shown(name, live_raw if present else None, secret),
                    new=shown(name, desired[name], secret),
                    secret=secret,
                    drift=drifted,
                    inherited=name in inherited,
                )
            )
        elif present and not drifted and name not in KEPT_ON_RELEASE and live_raw != clear_value(name):
            # No longer in the manifests, and untouched since we applied it: remove / clear it.
            changes.append(
                FieldChange(field=name, op=Op.REMOVE, old=shown(name, live_raw, secret), new=None, secret=secret, drift=False)
            )
    return changes


def shown(name: str, value: Any, secret: bool) -> Any:
    """A value as a plan shows it: secrets withheld, credentials inside it masked (a live value may
    hold one written by hand: controller/redact.py), a SOUL summarised."""
    if value is None:
        return None
    if secret:
        return redact.SECRET
    if name == "soul":
        text = str(value)
        return redact.Withheld(f"({len(text.splitlines())} lines, sha256:{hashlib.sha256(text.encode()).hexdigest()[:12]})")
    return redact.masked(value, name)


# --- objects ------------------------------------------------------------------------------------


def plan_install(inputs: Inputs) -> ObjectChange:
    obs = inputs.observed
    live = obs.live[DEFAULT_PROFILE]

    def install(action: Action, code: Reason, reason: str, fields: tuple[FieldChange, ...] = ()) -> ObjectChange:
        return ObjectChange(
            kind=Kind.INSTALL,
            name="root",
            action=action,
            code=code,
            reason=reason,
            fields=fields,
            drift=any(f.drift for f in fields),
        )

    if live.errors:
        return install(Action.ERROR, Reason.UNREADABLE, "; ".join(live.errors))
    if "" in obs.secret_errors:
        return install(Action.ERROR, Reason.SECRET_UNAVAILABLE, obs.secret_errors[""])
    desired = install_fields(inputs.state, obs)
    taken = sorted(f for f in desired if f in obs.foreign_install)
    if taken:
        owners = ", ".join(f"{f} (fleet {obs.foreign_install[f]!r})" for f in taken)
        return install(Action.CONFLICT, Reason.FOREIGN_OWNER, f"install-wide keys owned by another fleet: {owners}")
    fields = tuple(f for f in install_diff(inputs, desired) if f.op is not Op.REMOVE or inputs.options.prune)
    return install(
        Action.UPDATE if fields else Action.NOOP, Reason.INSTALL_SETTINGS, "install-wide settings (root profile)", fields
    )


def install_diff(inputs: Inputs, desired: Mapping[str, Any]) -> list[FieldChange]:
    """The root profile's field changes, removals included (plan_install leaves those to --prune)."""
    obs = inputs.observed
    applied = inputs.inventory.applied(INSTALL_KEY)
    fields = diff_fields(
        desired,
        obs.live[DEFAULT_PROFILE],
        applied=applied,
        secret_keys=obs.secret_keys.get("", frozenset()),
        inventory=inputs.inventory,
    )
    # The `default` bot is the root profile: a key it declares is its own, never removed as install-wide.
    default = inputs.state.bots.get(DEFAULT_PROFILE)
    if default is not None and any(f.op is Op.REMOVE for f in fields):
        claimed = bot_desired(inputs.state, obs, default).fields
        fields = [f for f in fields if not (f.op is Op.REMOVE and f.field in claimed)]
    return fields


def install_left(inputs: Inputs) -> list[str]:
    """Install-wide fields gone from the manifests that a plain apply leaves in the root profile:
    install-wide objects (a policy key, another machine's peer) are removed only with --prune."""
    obs = inputs.observed
    live = obs.live.get(DEFAULT_PROFILE)
    if inputs.options.prune or live is None or live.errors or "" in obs.secret_errors:
        return []
    if not inputs.inventory.applied(INSTALL_KEY):
        return []
    return [f.field for f in install_diff(inputs, install_fields(inputs.state, obs)) if f.op is Op.REMOVE]


def inherited_left(inputs: Inputs, name: str) -> dict[str, Any]:
    """Bot `name`'s record entries of install-wide fields gone from the manifests (the install
    record still holds them: `install_left`), which a plain apply leaves in the bot as it leaves
    them in the root: install-wide objects are removed only by `apply --prune` (PRODUCT.md, rule 3;
    docs/reliability.md#slices-and-deletions). Kept in the record so that a later prune removes them."""
    if inputs.options.prune or name == DEFAULT_PROFILE:
        return {}
    install = inputs.inventory.applied(INSTALL_KEY)
    if not install:
        return {}
    gone = set(install) - set(install_fields(inputs.state, inputs.observed))
    return {n: v for n, v in inputs.inventory.applied(bot_key(name)).items() if n in gone}


def owned_by(inputs: Inputs, name: str) -> bool:
    """This fleet owns the profile: by its inventory or by the marker inside the profile, and no
    one disputes it (`ownership_dispute`): a bot is owned by at most one fleet."""
    live = inputs.observed.live.get(name)
    marker = live.marker if live is not None else None
    claimed = inputs.inventory.owns(bot_key(name)) or bool(marker and marker.get("fleet") == inputs.state.fleet)
    return claimed and ownership_dispute(inputs, name) is None


def ownership_dispute(inputs: Inputs, name: str) -> tuple[str | None, str] | None:
    """(the other fleet, why) when this fleet's claim on profile `name` is not proven; None when it
    is. The owner marker in the profile is the proof (docs/reliability.md#ownership): a marker of
    another fleet wins over this fleet's inventory; without a marker, another fleet's inventory
    (or restored record) disputes it, and so does the profile itself when it exists: hermes-fleet
    never publishes a profile without its marker, so an unmarked one was made by someone else
    (a hand-made profile at a name this fleet's inventory still remembers)."""
    fleet = inputs.state.fleet
    live = inputs.observed.live.get(name)
    marked = (live.marker or {}).get("fleet") if live is not None else None
    if marked == fleet:
        return None
    if marked:
        return str(marked), f"its owner marker names fleet {marked!r}"
    other = inputs.observed.foreign.get(bot_key(name))
    if other:
        return other, f"fleet {other!r} records it as its own"
    # A rename's new folder carries the old name's marker until it is rewritten (core.planning.renames
    # decides about it, and refuses a profile it did not move there).
    renaming = name in inputs.observed.renames
    if name != DEFAULT_PROFILE and live is not None and live.exists and inputs.inventory.owns(bot_key(name)) and not renaming:
        return None, "it carries no owner marker: it was made again outside hermes-fleet after this fleet's profile went"
    return None


def planted_marker(inputs: Inputs, name: str) -> str | None:
    """Why profile `name`'s owner marker cannot be believed, or None. A marker is a file in the
    profile, which its bot can write: a well-formed marker naming another fleet or another profile,
    in a profile this fleet's inventory owns and no other fleet's inventory records, claims what no
    inventory backs. That bot is in error (never a conflict, which would refuse the whole apply);
    `--adopt` writes this fleet's marker again (docs/reliability.md#ownership)."""
    obs = inputs.observed
    live = obs.live.get(name)
    key = bot_key(name)
    if name == DEFAULT_PROFILE or live is None or not live.exists or name in obs.renames:
        return None
    if not inputs.inventory.owns(key) or key in obs.foreign:
        return None
    fleet = inputs.state.fleet
    if live.marker is not None and live.marker.get("fleet") != fleet:
        says = f"fleet {live.marker['fleet']!r}"
    elif live.stray_marker is not None:
        says = f"profile {live.stray_marker['profile']!r} of fleet {live.stray_marker['fleet']!r}"
    else:
        return None
    return (
        f"its owner marker {live.marker_path or live.path} names {says}, but fleet {fleet!r} owns the bot "
        "by its inventory and no other fleet records it: the marker was written inside the profile (a bot can "
        "write its own folder); check the profile, then re-run with --adopt to write this fleet's marker again"
    )


def plan_bot(inputs: Inputs, bot: DesiredBot) -> ObjectChange:
    obs = inputs.observed
    fleet = inputs.state.fleet
    key = bot_key(bot.name)
    live = obs.live[bot.name]
    origin = str(bot.origin)

    def change(
        action: Action, code: Reason, reason: str, fields: list[FieldChange] | None = None, drifted: bool = False
    ) -> ObjectChange:
        return ObjectChange(
            kind=Kind.BOT,
            name=bot.name,
            action=action,
            code=code,
            reason=reason,
            fields=tuple(fields or ()),
            origin=origin,
            drift=drifted,
        )

    planted = planted_marker(inputs, bot.name)
    if planted and not inputs.options.adopt:
        return change(Action.ERROR, Reason.MARKER_MISMATCH, planted)
    owned = owned_by(inputs, bot.name)
    foreign = (obs.foreign.get(key) or (live.marker or {}).get("fleet")) if not owned and not planted else None
    if foreign and foreign != fleet:
        return change(
            Action.CONFLICT, Reason.FOREIGN_OWNER, f"profile is owned by fleet {foreign!r}; two fleets never manage one object"
        )
    if live.errors:  # before the marker is judged: a spoiled one is this bot's error, not a stranger's profile
        return change(Action.ERROR, Reason.UNREADABLE, "; ".join(live.errors))
    dispute = ownership_dispute(inputs, bot.name) if inputs.inventory.owns(key) else None
    if dispute is not None and not inputs.options.adopt:
        return change(
            Action.CONFLICT,
            Reason.UNMANAGED,
            f"profile {bot.name!r} exists but {dispute[1]}; re-run with --adopt to take it over",
        )
    if bot.name in obs.secret_errors:
        return change(Action.ERROR, Reason.SECRET_UNAVAILABLE, obs.secret_errors[bot.name])
    inherits = {k for k in inputs.state.install_env if f"env:{k}" not in inputs.state.root_only}
    if "" in obs.secret_errors and bot.name != DEFAULT_PROFILE and inherits - set(bot.env):
        # Planned without the missing key, the bot would lose it: it waits for the secret instead.
        return change(Action.ERROR, Reason.SECRET_UNAVAILABLE, f"inherits install-wide {obs.secret_errors['']}")
    want = bot_desired(inputs.state, obs, bot)
    desired = want.fields
    applied = inputs.inventory.applied(key) if owned else {}
    secret_keys = want.secret_keys
    if not live.exists and bot.name != DEFAULT_PROFILE:
        if live.tombstoned:
            return change(
                Action.ERROR,
                Reason.TOMBSTONED,
                f"profiles/.deleted/{bot.name} marks this profile as "
                "deleted by Hermes; remove the tombstone with `hermes profile create` or rename the bot",
            )
        fields = diff_fields(
            desired, live, applied={}, secret_keys=secret_keys, inventory=inputs.inventory, inherited=want.inherited
        )
        if owned:
            return change(
                Action.CREATE, Reason.RECREATED, "profile was deleted outside hermes-fleet; recreating it", fields, drifted=True
            )
        return change(Action.CREATE, Reason.NEW, "profile does not exist", fields)
    fields = diff_fields(
        desired, live, applied=applied, secret_keys=secret_keys, inventory=inputs.inventory, inherited=want.inherited
    )
    if owned:
        kept = inherited_left(inputs, bot.name)
        fields = [f for f in fields if not (f.op is Op.REMOVE and f.field in kept)]
        return change(
            Action.UPDATE if fields else Action.NOOP,
            Reason.MANAGED,
            "managed by this fleet",
            fields,
            any(f.drift for f in fields),
        )
    if not inputs.options.adopt:
        return change(
            Action.CONFLICT,
            Reason.UNMANAGED,
            f"profile {bot.name!r} exists but is not managed by fleet {fleet!r}; re-run with --adopt to take it over",
            fields,
        )
    return change(Action.ADOPT, Reason.ADOPTED, "existing profile taken over (--adopt)", fields)


def plan_orphan(inputs: Inputs, name: str) -> ObjectChange:
    def orphan(action: Action, code: Reason, reason: str) -> ObjectChange:
        return ObjectChange(kind=Kind.BOT, name=name, action=action, code=code, reason=reason)

    if name == DEFAULT_PROFILE:
        return orphan(
            Action.RELEASE,
            Reason.RELEASED_DEFAULT,
            "removed from the manifests; the default profile is never deleted, only released from this fleet",
        )
    live = inputs.observed.live.get(name)
    if live is not None and not live.exists:
        return orphan(Action.RELEASE, Reason.ALREADY_GONE, "removed from the manifests and already gone from the home")
    if live is not None and live.errors:  # a spoiled marker is this bot's error, not a stranger's profile
        return orphan(Action.ERROR, Reason.UNREADABLE, "; ".join(live.errors))
    dispute = ownership_dispute(inputs, name)
    if dispute is not None:
        return orphan(
            Action.RELEASE,
            Reason.FOREIGN_OWNER,
            f"removed from the manifests; not deleted: {dispute[1]} (only this fleet's record goes)",
        )
    if not inputs.options.prune:
        return orphan(
            Action.ORPHAN, Reason.REMOVED, "removed from the manifests; `apply --prune` moves it to a restorable backup"
        )
    return orphan(
        Action.DELETE,
        Reason.PRUNED,
        "removed from the manifests (--prune): moved to a backup under "
        ".hermes-fleet/backups, restorable with `hermes-fleet restore`",
    )
