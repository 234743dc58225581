"""The domain's value types: what a plan is made of and what the planner is given (pure, frozen).

Every kind, field operation, action, reason and run result is a StrEnum, so code never takes
strings apart to learn what something is, and `plan -o json` carries codes CI can gate on
(docs/cli.md, "Reason codes"). Nothing here reads a file or the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Any

from controller.core.inventory import Inventory, object_key, routine_parts
from controller.hermes import DEFAULT_PROFILE, defaults
from controller.manifests.desired import DesiredState


class Kind(StrEnum):
    """What an object of a plan is."""

    INSTALL = "install"  # the install-wide settings (root profile)
    BOT = "bot"
    ROUTINE = "routine"
    ROOM = "room"


class Op(StrEnum):
    """What happens to one field."""

    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


class Action(StrEnum):
    """What happens to one object."""

    CREATE = "create"
    UPDATE = "update"
    ADOPT = "adopt"
    RENAME = "rename"  # a bot's profile moved to its new name (renamed_from), then updated
    DELETE = "delete"
    NOOP = "no-op"
    ORPHAN = "orphan"  # owned, gone from the manifests, kept because --prune was not given
    RELEASE = "release"  # gone from the manifests and never deleted (the default profile)
    CONFLICT = "conflict"
    ERROR = "error"


WRITING_ACTIONS = (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.RENAME, Action.DELETE, Action.RELEASE)


class Reason(StrEnum):
    """Why an object got its action: stable codes for CI (`plan -o json` → `reason_code`)."""

    NEW = "new"  # not there yet: created
    MANAGED = "managed"  # owned by this fleet: updated or unchanged
    INSTALL_SETTINGS = "install-settings"  # the root profile's install-wide settings
    RENAMED = "renamed"  # a routine or room found under its renamed_from name
    PROFILE_RENAMED = "profile-renamed"  # a bot's profile renamed from its renamed_from (or a rename finished)
    RENAME_REFUSED = "rename-refused"  # a bot rename that would take what is not ours, or race a gateway
    RECREATED = "recreated"  # owned, but deleted outside hermes-fleet: made again (drift)
    ADOPTED = "adopted"  # an existing object taken over with --adopt
    ID_EXISTS = "id-exists"  # a room with this fleet's own id exists (a lost create reply): taken over
    UNMANAGED = "unmanaged"  # exists, not owned by this fleet: conflict until --adopt
    FOREIGN_OWNER = "foreign-owner"  # owned by another fleet: conflict
    AMBIGUOUS = "ambiguous"  # several live objects could be the one to adopt: conflict
    PRUNE_GUARD = "prune-guard"  # a prune above the guard: conflict until --yes
    TOMBSTONED = "tombstoned"  # Hermes marks the profile as deleted
    UNREADABLE = "unreadable"  # a live file could not be read
    MARKER_MISMATCH = "marker-mismatch"  # an owned profile's marker names another fleet or profile, no inventory backs it
    SECRET_UNAVAILABLE = "secret-unavailable"  # a referenced secret cannot be read on this machine
    WAITS_FOR_BOT = "waits-for-bot"  # a bot it needs is in conflict or error
    REMOTE_MEMBERS = "remote-members"  # a member on another machine cannot be seated (this gateway or its peer)
    REMOTE_SEAT = "remote-seat"  # a bot of this machine seated in a room another machine's gateway owns
    GATEWAY_PENDING = "gateway-pending"  # the gateway could not be asked; nothing is assumed
    GATEWAY_UNSUPPORTED = "gateway-unsupported"  # the gateway lacks a method or its worker
    PEER_MEMBERS = "peer-members"  # the room has members on other machines: the gateway refuses that edit
    REMOVED = "removed"  # gone from the manifests, kept until --prune (orphan)
    PRUNED = "pruned"  # gone from the manifests, deleted with --prune
    RELEASED_DEFAULT = "released-default"  # the default profile is released, never deleted
    ALREADY_GONE = "already-gone"  # gone from the manifests and from the home already
    GOES_WITH_BOT = "goes-with-bot"  # a routine released with its bot
    ONE_SHOT_DONE = "one-shot-done"  # a one-shot routine ran and Hermes removed it
    MENTION_COLLISION = "mention-collision"  # an @-tag this plan gives a bot is another live profile's too


class RunResult(StrEnum):
    """The outcome of one apply, as recorded in the inventory's history."""

    OK = "ok"
    PARTIAL = "partial"


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldChange:
    field: str  # namespace:key, e.g. config:model.default, env:OPENROUTER_API_KEY, meta:title
    op: Op
    old: Any
    new: Any
    secret: bool = False
    drift: bool = False
    inherited: bool = False  # comes from the install-wide settings, not the bot's own

    @property
    def space(self) -> str:
        return self.field.partition(":")[0]

    @property
    def key(self) -> str:
        return self.field.partition(":")[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectChange:
    kind: Kind
    name: str  # a bot, a room, or `<bot>/<title>` for a routine
    action: Action
    code: Reason
    reason: str = ""  # the same, in words, with the details
    fields: tuple[FieldChange, ...] = ()
    origin: str = ""
    drift: bool = False
    ref: str = ""  # the live identity, where it is not the name (a cron job's id, a room id)

    @property
    def key(self) -> str:
        return object_key(self.kind, self.name)

    @property
    def bot(self) -> str:
        """The bot a routine belongs to (its own name for a bot)."""
        return routine_parts(self.name)[0] if self.kind is Kind.ROUTINE else self.name

    @property
    def title(self) -> str:
        """A routine's title."""
        return routine_parts(self.name)[1]


@dataclass(frozen=True)
class Plan:
    fleet: str
    digest: str
    changes: tuple[ObjectChange, ...]
    prune: bool = False
    notes: tuple[str, ...] = ()
    # Extras of hermes-agent this slice needs in the Hermes install ("mcp" when a bot declares an
    # MCP server: docs/hermes/no-effect.md#mcp-library); the Ansible rollout installs them.
    hermes_extras: tuple[str, ...] = ()

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


# --- what observing found (built once by engine.observing; the planner only reads it) ------------


@dataclass(frozen=True, slots=True)
class LiveProfile:
    """One profile folder as found on disk, as plain values (the root profile for `default`)."""

    name: str
    path: Path
    exists: bool
    tombstoned: bool = False
    marker: Mapping[str, Any] | None = None
    stray_marker: Mapping[str, Any] | None = None  # a well-formed owner marker naming another profile
    marker_path: Path | None = None  # where the owner marker is (for messages)
    config: Mapping[str, Any] | None = None  # config.yaml as plain data; None: unreadable
    env: Mapping[str, str] | None = None  # .env as Hermes loads it (last binding wins)
    description: str | None = None  # profile.yaml, as Hermes reads it (stripped)
    display_name: str | None = None
    meta: Mapping[str, Any] | None = None  # ui_meta['hermes-bots'], None when absent
    soul: str | None = None
    avatar: tuple[str, str] | None = None  # (extension, sha256) of assets/avatar.<ext>
    avatar_files: tuple[str, ...] = ()
    bot_chat: bool = False
    errors: tuple[str, ...] = ()

    def config_value(self, dotted: str) -> tuple[bool, Any]:
        """The value Hermes would use: an absent key reads as Hermes' default (not drift)."""
        if self.config is None:
            return False, None
        present, value = defaults.lookup(self.config, dotted)
        return (True, value) if present else defaults.default_for(dotted)

    def config_raw(self, dotted: str) -> bool:
        """Whether the key is literally in config.yaml (not just implied by a Hermes default)."""
        return self.config is not None and defaults.lookup(self.config, dotted)[0]

    def env_value(self, key: str) -> tuple[bool, Any]:
        if self.env is None or key not in self.env:
            return False, None
        return True, self.env[key]

    def meta_value(self, key: str) -> tuple[bool, Any]:
        if self.meta is None or key not in self.meta:
            return False, None
        return True, self.meta[key]

    def profile_value(self, key: str) -> tuple[bool, Any]:
        value = self.description if key == "description" else self.display_name
        return value is not None, value

    FIELD_SPACES = frozenset({"config", "env", "meta", "profile", "soul", "avatar", "botchat", "botmode"})

    def value(self, name: str) -> tuple[bool, Any]:
        """(present?, value) of one plan field (`config:a.b`, `env:K`, `meta:title`, `soul`, ...);
        the space before `:` is one of FIELD_SPACES."""
        space, _, key = name.partition(":")
        if space == "config":
            return self.config_value(key)
        if space == "env":
            return self.env_value(key)
        if space == "meta":
            return self.meta_value(key)
        if space == "profile":
            return self.profile_value(key)
        if space == "soul":
            return self.soul is not None, self.soul
        if space == "avatar":
            return (True, f"{self.avatar[0]}:{self.avatar[1]}") if self.avatar else (False, None)
        if space == "botchat":
            return (True, True) if self.bot_chat else (False, None)
        if space == "botmode":
            return (True, True) if self.meta is not None else (False, None)
        raise KeyError(name)


@dataclass(frozen=True)
class GatewayView:
    """What the gateway said about rooms (read-only), or why it could not be asked."""

    error: str = ""  # non-empty: every room is pending with this reason
    error_code: Reason = Reason.GATEWAY_PENDING  # with `error`: not asked (pending), or cannot own rooms (unsupported)
    origin: str = ""
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    rooms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # room_id -> room (disbanded too)
    # room_id -> driver_status.peer_routes ({member_id, status, grant_sha256}), for live rooms with peer members
    routes: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    # profile -> groups.capabilities' room_link for it (this machine's bots seated in other machines' rooms)
    room_links: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    stray_profiles: tuple[str, ...] = ()  # folders under profiles/ that are not profile names (.deleted, ...)

    @property
    def methods(self) -> set[str]:
        return set(self.capabilities.get("methods") or [])

    @property
    def features(self) -> set[str]:
        return set(self.capabilities.get("features") or [])

    @property
    def driver(self) -> bool:
        return self.capabilities.get("driver") is True

    @property
    def install_id(self) -> str:
        return str(self.capabilities.get("authority_gateway_id") or "")


@dataclass(frozen=True, slots=True)
class RenameSeen:
    """What observing found for one bot rename (`renamed_from`), beyond the two profiles themselves."""

    source: str  # the old profile name
    # The profile named by the owner marker inside the *new* folder when that marker is this
    # fleet's: the old name after a rename that was cut short before the marker was rewritten.
    target_marker: str | None = None
    gateway_running: str = ""  # non-empty: why a gateway is taken to run for the old profile
    honcho: bool = False  # the old profile has a Honcho host block somewhere (incl. ~/.honcho)
    alias: bool = False  # ~/.local/bin/<old> is Hermes' wrapper alias of the old profile


@dataclass(frozen=True)
class Observed:
    """Everything read from the machine for one plan: the home, the gateway, resolved secrets."""

    live: Mapping[str, LiveProfile]  # by profile name; "default" is the root
    env_values: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # bot ("" = install) -> .env values
    secret_keys: Mapping[str, frozenset[str]] = field(default_factory=dict)  # bot ("" = install) -> secret keys
    secret_errors: Mapping[str, str] = field(default_factory=dict)  # bot -> why a secret is missing
    avatars: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # bot -> (ext, sha256) of its image
    foreign: Mapping[str, str] = field(default_factory=dict)  # object key -> other fleet owning it
    foreign_install: Mapping[str, str] = field(default_factory=dict)  # install field -> other fleet
    jobs: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)  # bot -> live cron jobs
    job_errors: Mapping[str, str] = field(default_factory=dict)  # bot -> why its cron store is unreadable
    timezones: Mapping[str, tzinfo | None] = field(default_factory=dict)  # bot -> its scheduler's zone
    rooms: GatewayView | None = None  # None: no room to look at
    hermes_version: str | None = None  # the Hermes the home is used with (None: unknown)
    hermes_version_source: str = ""  # how it was found, or why it is unknown
    managed_scope: str | None = None  # Hermes' machine-wide managed scope folder, when there is one
    managed_config: Mapping[str, Any] = field(default_factory=dict)  # its config.yaml, whose leaves win
    renames: Mapping[str, RenameSeen] = field(default_factory=dict)  # new bot name -> its rename's facts
    # Whether the Python that runs Hermes has the `mcp` library (asked only when a bot declares an
    # MCP server; None: not asked, or no answer) and which interpreter was asked (or why none was).
    mcp_library: bool | None = None
    mcp_where: str = ""
    # Live profiles of the home outside the fleet's view (neither declared nor owned): name ->
    # (ui_meta title, display_name), for the @-tags the Desktop gives them (planning/tags.py).
    others: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class Options:
    prune: bool = False
    adopt: bool = False
    yes: bool = False
    rooms: bool = True  # False: --no-rooms, rooms are left out of the plan (and the gateway is not asked)
    rehost: bool = False  # --rehost: converge a home recorded as one host as another slice


@dataclass(frozen=True)
class Inputs:
    """Everything the planner needs; it reads nothing else (no file, no clock)."""

    state: DesiredState
    inventory: Inventory
    observed: Observed
    now: datetime  # timezone-aware; the planner's only clock
    options: Options = Options()

    def live(self, name: str) -> LiveProfile:
        return self.observed.live[name]


__all__ = [
    "DEFAULT_PROFILE",
    "WRITING_ACTIONS",
    "Action",
    "FieldChange",
    "GatewayView",
    "Inputs",
    "Kind",
    "LiveProfile",
    "ObjectChange",
    "Observed",
    "Op",
    "Options",
    "Plan",
    "Reason",
    "RenameSeen",
    "RunResult",
]
