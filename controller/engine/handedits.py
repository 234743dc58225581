"""Hand edits to unmanaged keys: the baseline recorded after an apply, and what `status` finds.

`record` runs at the end of an apply (engine/reconciling.py): each profile the apply wrote, and
each managed profile without a baseline yet, is read again and its unmanaged keys recorded as
digests (core/handedits.py, adapters/baselines.py). A bot's baseline recorded before profile.yaml
was one of the files gets that file alone at the next apply (its `since`), not the others afresh.
A profile the apply left alone keeps its baseline, so a hand edit stays listed by `status` (and a
`watch` pass that changes nothing does not hide it) until an apply writes that profile again.
Information only: never drift.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from controller.adapters import baselines, profilemeta
from controller.adapters import inventory as inventory_file
from controller.adapters.home import ProfileLayout
from controller.core import handedits
from controller.core.inventory import Inventory, split_key
from controller.core.types import WRITING_ACTIONS, Kind, LiveProfile
from controller.errors import ControllerError
from controller.hermes import DEFAULT_PROFILE

MAX_SHOWN_KEYS = 10  # keys named per file in the text of `status` (-o json names them all)


def managed_profiles(inventory: Inventory) -> dict[str, list[str]]:
    """profile -> the applied field names of the objects the fleet manages in it (the root profile
    carries the install-wide settings and, when declared, the `default` bot)."""
    out: dict[str, list[str]] = {}
    for key, entry in inventory.objects.items():
        kind, name = split_key(key)
        if kind not in ("bot", "install"):
            continue
        profile = name if kind == "bot" else DEFAULT_PROFILE
        out.setdefault(profile, []).extend(entry.get("applied", {}))
    return out


def digests_of(live: LiveProfile, fields: Iterable[str], salt: str) -> dict[str, handedits.Digests]:
    fields = list(fields)
    managed = handedits.managed_keys(fields)
    out = {}
    if live.config is not None:
        out[handedits.CONFIG] = handedits.config_digests(live.config, managed[handedits.CONFIG], salt)
    if live.env is not None:
        out[handedits.ENV] = handedits.env_digests(live.env, managed[handedits.ENV], salt)
    profile = profile_digests(live, fields, salt)
    if profile is not None:
        out[handedits.PROFILE] = profile
    return out


def profile_digests(live: LiveProfile, fields: list[str], salt: str) -> handedits.Digests | None:
    """The unmanaged keys of a bot's profile.yaml (read again: the observation keeps only what the
    plan compares); None when it is no managed file of the profile, or cannot be read."""
    if not handedits.manages_profile_yaml(fields):
        return None
    try:
        data = profilemeta.ProfileMeta.load(ProfileLayout(live.path).meta).as_dict()  # bounded; {} when absent
    except ControllerError:
        return None  # status lists the profile's read error elsewhere
    return handedits.config_digests(data, handedits.managed_keys(fields)[handedits.PROFILE], salt)


def written_profiles(changes: Iterable[Any]) -> set[str]:
    """The profiles an apply's done objects wrote (a bot's, or the root for the install-wide settings)."""
    out = set()
    for change in changes:
        if change.action in WRITING_ACTIONS and change.kind in (Kind.BOT, Kind.INSTALL):
            out.add(change.name if change.kind is Kind.BOT else DEFAULT_PROFILE)
    return out


def record(root: Path, inventory: Inventory, written: set[str], observe: Any) -> None:
    """Record the baseline of each profile in `written`, and of each managed profile that has none;
    `observe(name)` reads a profile (engine.observing.observe_profile). A profile that cannot be
    read is left without a baseline (status then lists nothing for it)."""
    old, _ = baselines.read(root, inventory.fleet)
    profiles = dict(old["profiles"]) if old else {}
    maps = dict(old["maps"]) if old else {}
    managed = managed_profiles(inventory)
    for name in [p for p in profiles if p not in managed]:
        del profiles[name]
    at = inventory_file.now_iso()
    for name, fields in sorted(managed.items()):
        if name in profiles and name not in written:
            _add_profile_yaml(profiles[name], maps, fields, lambda n=name: observe(n), inventory.salt, at)
            continue
        profiles.pop(name, None)
        try:
            live = observe(name)
        except ControllerError:
            continue
        if not live.exists or live.errors:
            continue
        files = {}
        for file, digests in digests_of(live, fields, inventory.salt).items():
            ref = handedits.map_id(digests)
            maps[ref] = digests
            files[file] = ref
        profiles[name] = {"at": at, "files": files}
    used = {ref for entry in profiles.values() for ref in entry["files"].values()}
    data = {
        "schemaVersion": baselines.VERSION,
        "fleet": inventory.fleet,
        "maps": {r: maps[r] for r in used},
        "profiles": profiles,
    }
    baselines.write(root, inventory.fleet, data)


def _add_profile_yaml(entry: dict[str, Any], maps: dict[str, Any], fields: list[str], observe: Any, salt: str, at: str) -> None:
    """A bot's profile.yaml into its baseline, when recorded before that file was (the others keep
    theirs: recording them afresh would hide their hand edits)."""
    if handedits.PROFILE in entry["files"] or not handedits.manages_profile_yaml(fields):
        return
    try:
        live = observe()
    except ControllerError:
        return
    digests = profile_digests(live, fields, salt) if live.exists else None
    if digests is None:
        return
    ref = handedits.map_id(digests)
    maps[ref] = digests
    entry["files"] = {**entry["files"], handedits.PROFILE: ref}
    entry["since"] = {**entry.get("since", {}), handedits.PROFILE: at}


class Finder:
    """What `status` reports of one fleet: the hand edits of each managed profile it is shown."""

    def __init__(self, root: Path, inventory: Inventory) -> None:
        self.inventory = inventory
        self.baseline, self.problem = baselines.read(root, inventory.fleet)
        self.managed = managed_profiles(inventory)
        self.found: dict[str, list[dict[str, Any]]] = {}

    def look(self, name: str, live: LiveProfile) -> None:
        """Compare one profile's live files with its baseline (once per profile)."""
        if self.baseline is None or name in self.found or name not in self.managed:
            return
        entry = self.baseline["profiles"].get(name)
        if entry is None:
            return
        now = digests_of(live, self.managed[name], self.inventory.salt)
        edits = []
        for file, ref in sorted(entry["files"].items()):
            if file not in now:
                continue
            found = handedits.compare(file, self.baseline["maps"][ref], now[file])
            if found:
                edits.append(_as_json(name, found, entry.get("since", {}).get(file, entry["at"])))
        self.found[name] = edits

    def report(self) -> list[dict[str, Any]]:
        return [edit for name in sorted(self.found) for edit in self.found[name]]


def _as_json(profile: str, edits: handedits.Edits, since: str) -> dict[str, Any]:
    whole = handedits.WHOLE in (*edits.added, *edits.removed, *edits.changed)
    return {
        "profile": profile,
        "object": "install/root" if profile == DEFAULT_PROFILE else f"bot/{profile}",
        "file": edits.file,
        "since": since,
        "added": list(edits.added),
        "removed": list(edits.removed),
        "changed": list(edits.changed),
        "whole_file": whole,  # too many keys to name: the file's unmanaged keys changed, as one
    }


def text_line(edit: dict[str, Any]) -> str:
    """`bot/alpha config.yaml: approvals.mode (changed), model.default (added) since the apply of <time>`"""
    if edit["whole_file"]:
        keys = "its unmanaged keys (more than can be named one by one)"
    else:
        named = [(k, "changed") for k in edit["changed"]] + [(k, "added") for k in edit["added"]]
        named += [(k, "removed") for k in edit["removed"]]
        shown = ", ".join(f"{_printable(k)} ({how})" for k, how in named[:MAX_SHOWN_KEYS])
        more = f" and {len(named) - MAX_SHOWN_KEYS:,} more" if len(named) > MAX_SHOWN_KEYS else ""
        keys = shown + more
    return f"{edit['object']} {edit['file']}: {keys} since the apply of {edit['since']}"


def _printable(key: str) -> str:
    """A key as written, or quoted when it holds what a terminal would act on (a key is the bot's text)."""
    return key if key.isprintable() and " " not in key else repr(key)
