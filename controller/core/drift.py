"""Drift: one rule for `plan` and `status` (pure).

A managed field has drifted when its live value differs from what this fleet last applied.
Values are compared in their recorded form (`comparable`): secrets as keyed hashes, a SOUL as its
sha256, a routine's prompt in either Bot Mode form, a room's members as a sorted list. The
planner marks a FieldChange as drift with these functions, and `status` lists drifted fields with
the same ones, so the two can never disagree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from controller.core import jobs
from controller.core.inventory import Inventory
from controller.core.types import LiveProfile
from controller.hermes import defaults

_CONFIG_VERSION_FIELD = f"config:{defaults.CONFIG_VERSION_KEY}"
# Texts the Desktop trims wherever it reads them (labels.ts displayName, user-sections.ts):
# surrounding spaces change nothing it shows (docs/hermes/bot-mode.md#titles).
_TRIMMED = frozenset({"meta:title", "meta:sectionName"})


def is_secret_record(was: Any) -> bool:
    """A recorded value that is a keyed hash: the field was applied as a secret."""
    return isinstance(was, str) and was.startswith("hmac:")


def comparable(name: str, value: Any, *, secret: bool, inventory: Inventory) -> Any:
    """The form stored as last-applied and compared: hashes for secrets and souls."""
    if value is None:
        return None
    if secret:
        return inventory.secret_hash(str(value))
    if name == "soul":
        return "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()
    if name in _TRIMMED and isinstance(value, str):
        return value.strip()
    if name == _CONFIG_VERSION_FIELD and defaults.config_version_of(value) >= defaults.CONFIG_VERSION:
        # A later Hermes migrating the file bumps the version: the file is still (at least) in
        # the schema the fleet wrote, so that is not drift (docs/hermes/files.md#config-version).
        return defaults.CONFIG_VERSION
    return value


def live_record(name: str, live: LiveProfile, *, secret: bool, inventory: Inventory) -> tuple[bool, Any]:
    """(present?, recorded form) of one profile field as it is live."""
    present, value = live.value(name)
    return present, comparable(name, value, secret=secret, inventory=inventory) if present else None


def field_drifted(name: str, was: Any, live: LiveProfile, inventory: Inventory) -> bool:
    """A profile field (config, .env, profile.yaml, ui_meta, SOUL, avatar, Bot Chat) has drifted."""
    return bool(live_record(name, live, secret=is_secret_record(was), inventory=inventory)[1] != was)


def profile_drift(applied: Mapping[str, Any], live: LiveProfile, inventory: Inventory) -> list[str]:
    """The managed fields of a bot (or of the install-wide settings) that drifted."""
    return [name for name, was in applied.items() if field_drifted(name, was, live, inventory)]


def job_field_drifted(key: str, was: Any, have: Any) -> bool:
    return not jobs.same(key, have, was)


def routine_drift(applied: Mapping[str, Any], job: Mapping[str, Any]) -> list[str]:
    """The managed fields of a routine whose cron job differs from the last apply."""
    live = jobs.live_fields(job)
    return [key for key, was in applied.items() if job_field_drifted(key, was, live.get(key))]


def room_field_drifted(was: Any, have: Any) -> bool:
    return was is not None and was != have


def room_drift(applied: Mapping[str, Any], live_fields: Mapping[str, Any]) -> list[str]:
    """The managed fields of a room (name, members, who_answers) that differ from the last apply."""
    return [key for key, was in applied.items() if room_field_drifted(was, live_fields.get(key))]
