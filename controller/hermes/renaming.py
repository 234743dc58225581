"""What a profile rename changes besides the folder, as pure functions (docs/hermes/rename.md).

The Honcho host block rule is `hermes_cli/profiles.py:_migrate_honcho_profile_host` (0.19.0); the
job names and routine prompts are the Desktop's Bot Mode forms (docs/hermes/bot-mode.md), which
`hermes profile rename` leaves as they were and hermes-fleet rewrites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# config.yaml keys whose value is a profile name; a rename leaves them as they are
# (docs/hermes/rename.md#config-keys-that-name-a-profile).
PROFILE_KEYS = ("kanban.orchestrator_profile", "kanban.default_assignee")


def honcho_hosts(old: str) -> tuple[str, str]:
    """The host keys a profile's Honcho block may have: `hermes_<name>`, then the legacy `hermes.<name>`."""
    return f"hermes_{old}", f"hermes.{old}"


def has_honcho_host(data: Any, old: str) -> bool:
    hosts = data.get("hosts") if isinstance(data, Mapping) else None
    return isinstance(hosts, Mapping) and any(key in hosts for key in honcho_hosts(old))


def honcho_renamed(data: Any, old: str, new: str) -> dict[str, Any] | None:
    """The Honcho config with the old profile's host block under `hermes_<new>` (aiPeer kept as the
    old bare name when the block had none); None when there is nothing to move, or the new key is
    taken (Hermes then leaves the file alone)."""
    if not has_honcho_host(data, old):
        return None
    assert isinstance(data, Mapping)
    hosts = dict(data["hosts"])
    new_key = f"hermes_{new}"
    if new_key in hosts:
        return None
    source = next(key for key in honcho_hosts(old) if key in hosts)
    block = hosts.pop(source)
    if isinstance(block, Mapping) and "aiPeer" not in block:
        block = {**block, "aiPeer": old}
    hosts[new_key] = block
    return {**data, "hosts": hosts}


def _delegation(bot: str) -> re.Pattern[str]:
    # `hermes -p 'bot'` (Bot Mode's quoted form) or `hermes -p bot` followed by a space or the end.
    return re.compile(rf"(hermes\s+(?:-p|--profile)\s+)('{re.escape(bot)}'|{re.escape(bot)})(?=[\s'\"]|$)")


def retarget_job(job: dict[str, Any], old: str, new: str) -> bool:
    """Rename a job of the moved cron store in place: `[bot:<old>] ` names and `hermes -p <old>`
    in its prompt now name the new profile. Returns True when the job changed. Its id is kept."""
    changed = False
    name = job.get("name")
    prefix = f"[bot:{old}] "
    if isinstance(name, str) and name.startswith(prefix):
        job["name"] = f"[bot:{new}] " + name[len(prefix) :]
        changed = True
    prompt = job.get("prompt")
    if isinstance(prompt, str):
        pattern = _delegation(old)

        def swap(match: re.Match[str]) -> str:
            quoted = match.group(2).startswith("'")
            return match.group(1) + (f"'{new}'" if quoted else new)

        retargeted = pattern.sub(swap, prompt)
        retargeted = retargeted.replace(f"for agent '{old}'.", f"for agent '{new}'.")
        if retargeted != prompt:
            job["prompt"] = retargeted
            changed = True
    return changed
