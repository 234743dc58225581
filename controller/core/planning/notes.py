"""Plan notes: what a reviewer should know that is not a change (pure).

Which Hermes the plan was made for, what every bot inherits from the install-wide settings,
and settings that the target Hermes ignores or applies differently from what the words suggest.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.core import mcp
from controller.core.types import Inputs
from controller.hermes import DEFAULT_PROFILE, defaults, versions
from controller.manifests.desired import DesiredBot

# Install-wide keys that only a Hermes with Bot Mode reads (docs/hermes/versions.md#support-matrix).
BOT_CHAT_TARGET = "bot-chat"  # the Desktop's "Send results to <bot>'s Bot Chat"
BOT_MODE_ONLY = ("gateway.bot_loop_guard.", "agent.bot_mode_protocol", "auxiliary.group_router.", "bot_peers.")


def plan_notes(inputs: Inputs) -> list[str]:
    obs = inputs.observed
    state = inputs.state
    notes: list[str] = []
    version = obs.hermes_version
    if version is None:
        notes.append(
            f"Hermes version unknown ({obs.hermes_version_source or 'not detected'}); keys are written for hermes-agent "
            f"{versions.TESTED} and main. Pass --hermes-version to say which Hermes runs this home."
        )
    elif versions.unknown_newer(version):
        notes.append(
            f"warning: Hermes {version} is newer than the newest version hermes-fleet knows ({versions.TESTED}); keys are "
            "written as for that version and main. Check docs/hermes/versions.md, or update hermes-fleet."
        )
    elif not versions.has_bot_mode(version):
        notes += _bot_mode_notes(inputs, version)
        notes += _bot_chat_delivery_notes(inputs, version)
    inheriting = [name for name in state.bots if name != DEFAULT_PROFILE]
    shared = sorted(k for k in state.install_config if f"config:{k}" not in state.root_only)
    shared += sorted(f"env:{k}" for k in state.install_env if f"env:{k}" not in state.root_only)
    if inheriting and shared:
        notes.append(
            f"install-wide settings are written into each of {len(inheriting)} bot(s) as well as the root (a bot reads only "
            f"its own profile; its own value wins): {', '.join(shared)}"
        )
    if "env:API_SERVER_KEY" in state.root_only:
        notes.append(
            "this machine accepts a peer: its gateway reads the API server settings (root .env API_SERVER_*) when it "
            "starts, so restart the gateway after they change (`hermes gateway restart`)"
        )
    notes += _managed_scope_notes(inputs)
    if (mcp_note := mcp.plan_note(state, obs.mcp_library, obs.mcp_where)) is not None:
        notes.append(mcp_note)
    notes += _config_version_notes(inputs)
    for room in state.rooms.values():
        if room.who_answers == "auto":
            notes.append(
                f"room {room.name!r}: who_answers: auto is applied as the gateway's mentions_only policy (a message that "
                "names no bot is answered by none; @-mentioned bots answer): the gateway has no automatic pick"
            )
    return notes


def _bot_chat_delivery_notes(inputs: Inputs, version: str) -> list[str]:
    """`deliver: bot-chat` on a Hermes without Bot Mode: its cron delivery has no such target
    (docs/hermes/cron.md#delivery), so each run records a delivery error and the output stays local."""
    routines = sorted(
        f"{bot.name}/{routine.name}"
        for bot in inputs.state.bots.values()
        for routine in bot.routines
        if (routine.deliver or "").strip().lower() == BOT_CHAT_TARGET
    )
    if not routines:
        return []
    return [
        f"warning: deliver: bot-chat has no reader on Hermes {version} (its cron delivery knows no 'bot-chat' target): "
        "each run records 'no delivery target resolved for deliver=bot-chat' and the output is kept only in the bot's "
        f"cron/output/<job id>/; use deliver: local, or a platform target: {', '.join(routines)}"
    ]


# Bot fields only Bot Mode reads (profile.yaml: ui_meta['hermes-bots'], display_name), by field kind.
BOT_MODE_FIELDS: tuple[tuple[str, Callable[[DesiredBot], object]], ...] = (
    ("title", lambda b: b.title),
    ("display_name", lambda b: b.display_name),
    ("avatar", lambda b: b.avatar or b.avatar_image),
    ("hidden", lambda b: b.hidden),
    ("pinned", lambda b: b.pinned),
    ("section", lambda b: b.section),
)


def _bot_mode_notes(inputs: Inputs, version: str) -> list[str]:
    """What a Hermes without Bot Mode reads nowhere: one note for the install-wide keys and one for
    the bots' Bot Mode fields, each field kind once with its bot count (docs/hermes/no-effect.md#bot-mode-metadata)."""
    state = inputs.state
    out = []
    inert = sorted(k for k in state.install_config if k.startswith(BOT_MODE_ONLY))
    if inert:
        out.append(
            f"no effect on Hermes {version}, which has no loop guard, bot-mode protocol, group router or peers "
            f"(Hermes main's gateway and agent read them): {', '.join(inert)}"
        )
    counts = [(kind, sum(1 for b in state.bots.values() if value(b) is not None)) for kind, value in BOT_MODE_FIELDS]
    used = [f"{kind} ({n} bot(s))" for kind, n in counts if n]
    if used:
        out.append(
            f"no effect on Hermes {version}, which reads no Bot Mode record (the Desktop and the gateway of Hermes main "
            f"read them from profile.yaml): {', '.join(used)}"
        )
    return out


def _managed_scope_notes(inputs: Inputs) -> list[str]:
    """Keys this fleet sets that Hermes' managed scope overrides on this machine (its leaves win over
    every profile's: docs/hermes/effect-research.md#managed-scope)."""
    obs = inputs.observed
    if obs.managed_scope is None or not obs.managed_config:
        return []
    overridden: dict[str, list[str]] = {}
    owners = [("install-wide", inputs.state.install_config)] + [(f"bot/{b.name}", b.config) for b in inputs.state.bots.values()]
    for owner, config in owners:
        for key, value in config.items():
            present, managed = defaults.lookup(obs.managed_config, key)
            if present and managed != value:
                overridden.setdefault(key, []).append(owner)
    if not overridden:
        return []
    listed = "; ".join(f"{k} ({', '.join(v)})" for k, v in sorted(overridden.items()))
    return [
        f"warning: Hermes' managed scope at {obs.managed_scope} overrides settings of this fleet on this machine, "
        f"whatever apply writes: {listed}"
    ]


def _config_version_notes(inputs: Inputs) -> list[str]:
    """Config files an older Hermes wrote whose migrations have not run: the fleet does not stamp
    `_config_version` on them (that would skip Hermes' migrations: core.planning.bots.config_version)."""
    older: list[str] = []
    for name in inputs.state.bots:
        live = inputs.observed.live.get(name)
        if live is None or live.config is None:
            continue
        present, raw = defaults.lookup(live.config, defaults.CONFIG_VERSION_KEY)
        version = defaults.config_version_of(raw)
        if present and 0 < version < defaults.CONFIG_VERSION:
            older.append(f"{name} (v{version}: `hermes -p {name} config migrate`)")
    if not older:
        return []
    return [
        f"warning: config.yaml written by an older Hermes, whose own migrations have not run (Hermes "
        f"{versions.TESTED} expects config version {defaults.CONFIG_VERSION}; `hermes config check` and `hermes doctor` "
        f"ask for them): {', '.join(older)}"
    ]
