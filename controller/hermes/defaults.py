"""Hermes' built-in defaults for the config keys a fleet manages.

Hermes' `save_config()` drops keys whose value equals its `DEFAULT_CONFIG`, so a missing key
often means "the default". Drift compares a missing key with `default_for` so that such a drop
never shows up as drift. Values are facts typed from the hermes-agent 0.19.0 source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The config schema version a config.yaml of Hermes 0.19.0 carries (DEFAULT_CONFIG["_config_version"]).
# `hermes config check` and `hermes doctor` compare a file's raw value with it (a missing one counts
# as 0) and ask for a migration while it is lower (docs/hermes/files.md#config-version).
CONFIG_VERSION_KEY = "_config_version"
CONFIG_VERSION = 33

# hermes_cli/config.py DEFAULT_CONFIG (0.19.0, _config_version 33), flattened to dotted keys.
HERMES_0_19_DEFAULTS: dict[str, Any] = {
    "checkpoints.enabled": False,
    "checkpoints.max_snapshots": 20,
    "checkpoints.max_total_size_mb": 500,
    "checkpoints.max_file_size_mb": 10,
    "checkpoints.auto_prune": True,
    "checkpoints.retention_days": 7,
    "checkpoints.delete_orphans": True,
    "checkpoints.min_interval_hours": 24,
    # tools/approval.py falls back to "manual" when the key is unreadable, but a readable config
    # always has this value merged in from DEFAULT_CONFIG.
    "approvals.mode": "smart",
    "approvals.timeout": 60,
    "approvals.cron_mode": "deny",
    "approvals.deny": [],
    "memory.memory_enabled": True,
    "memory.user_profile_enabled": True,
    "memory.memory_char_limit": 2200,
    "memory.user_char_limit": 1375,
    "toolsets": ["hermes-cli"],
    "agent.disabled_toolsets": [],
    "agent.max_turns": 90,
    "tts.provider": "edge",
    "timezone": "",
    "mcp.auto_reload_on_config_change": True,
    "cron.output_retention": 50,
    "cron.max_parallel_jobs": None,
    "gateway.api_server.max_concurrent_runs": 10,
}

# Not in DEFAULT_CONFIG, but every 0.19 reader treats the missing key as this value
# (agent/skill_utils.py, tools/skills_tool.py: `skills_cfg.get("disabled", [])`).
HERMES_0_19_READER_DEFAULTS: dict[str, Any] = {
    "skills.disabled": [],
}

# Bot Mode keys from hermes-agent main; 0.19.0 has none of them (docs/hermes/bot-mode.md#loop-guard).
MAIN_BOT_MODE_DEFAULTS: dict[str, Any] = {
    "agent.bot_mode_protocol": True,
    "gateway.bot_loop_guard.enabled": True,
    "gateway.bot_loop_guard.max_events": 20,
    "gateway.bot_loop_guard.window_seconds": 300,
    "gateway.bot_loop_guard.cooldown_seconds": 600,
}

DEFAULTS: dict[str, Any] = {
    **HERMES_0_19_DEFAULTS,
    **HERMES_0_19_READER_DEFAULTS,
    **MAIN_BOT_MODE_DEFAULTS,
}


def default_for(dotted: str) -> tuple[bool, Any]:
    """(known?, Hermes' default) for a dotted key."""
    if dotted in DEFAULTS:
        return True, _copy(DEFAULTS[dotted])
    return False, None


def lookup(tree: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    """(present?, value) of a dotted key in plain config data; a non-map on the way counts as absent."""
    node: Any = tree
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _copy(value: Any) -> Any:
    # Callers may mutate what they get; the table must stay intact.
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


# What Hermes' own config migrations write into an existing file (hermes_cli/config.py
# migrate_config, 0.19.0; docs/hermes/effect-research.md#export-defaults): each restates what
# Hermes does when the key is absent, so it is Hermes' bookkeeping, not a user's setting.
MIGRATION_WRITTEN: dict[str, tuple[Any, ...]] = {
    "display.tool_progress": ("all",),
    "agent.verify_on_stop": (False, "auto"),
    "plugins.enabled": ([],),
}


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps YAML's types apart (`true` is not `1`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def is_hermes_default(dotted: str, value: Any) -> bool:
    """Whether `value` at `dotted` is what Hermes uses anyway (its default, or a migration's restatement)."""
    known, default = default_for(dotted)
    return (known and _same(default, value)) or any(_same(v, value) for v in MIGRATION_WRITTEN.get(dotted, ()))


def without_defaults(tree: Mapping[str, Any], prefix: str = "", *, keep: frozenset[str] = frozenset()) -> dict[str, Any]:
    """`tree` without the leaves that equal Hermes' defaults (maps left empty are dropped too);
    dotted keys in `keep` stay whatever their value (a fleet declared them on purpose)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            kept = without_defaults(value, dotted + ".", keep=keep)
            if kept:
                out[key] = kept
        elif dotted in keep or not is_hermes_default(dotted, value):
            out[key] = value
    return out


def config_version_of(value: Any) -> int:
    """A raw `_config_version` as Hermes reads it: an int >= 0, anything else is 0
    (hermes_cli/config.py `_coerce_config_version`, 0.19.0)."""
    if isinstance(value, bool):
        return 0
    try:
        return max(int(value), 0)
    except (TypeError, ValueError, OverflowError):
        return 0
