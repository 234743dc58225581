"""Hand edits to the keys a fleet does not manage, in the files it manages (pure).

After an apply, each managed profile's `config.yaml`, `.env` and (for a bot) `profile.yaml` are
recorded as a *baseline*: for every key the fleet does not manage (a dotted path of config.yaml or
profile.yaml, a variable of .env), a keyed digest of its value, never the value (a value may be a
secret). `status` takes the same digests of
the live files and lists the keys added, removed or changed since: information for the operator,
never drift, never corrected (docs/cli.md#status).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CONFIG = "config.yaml"
ENV = ".env"
PROFILE = "profile.yaml"
FILES = (CONFIG, ENV, PROFILE)
# What a bot's fields manage in profile.yaml (engine/applying/bots.py _write_profile_yaml,
# adapters/profilemeta.py): a description set by the fleet marks itself not "auto" (as `hermes
# profile describe --text` does), and every bot's Bot Mode record is replaced whole, with its
# revision, in the `hermes-bots` namespace (the `botmode` field; `meta:*` are keys of that record).
PROFILE_KEYS = {"profile:description": ("description", "description_auto"), "profile:display_name": ("display_name",)}
BOT_RECORD_KEYS = ("ui_meta.hermes-bots", "_ui_meta_revisions.hermes-bots")
MAX_KEYS = 2000  # keys recorded per file (Hermes' full default config has about 1,400 values)
MAX_NODES = 20_000  # maps and values walked per file (aliases expanded)
WHOLE = "*"  # a file past MAX_KEYS is recorded as one digest of all its unmanaged keys
MAX_KEY_CHARS = 200  # a longer key path is recorded by its start and a digest of the rest

Digests = dict[str, str]  # key path -> digest of its value


@dataclass(frozen=True)
class Edits:
    """The unmanaged keys of one file that differ from the baseline."""

    file: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    @property
    def count(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)


def managed_keys(applied_fields: Iterable[str]) -> dict[str, frozenset[str]]:
    """file -> the keys the fleet manages there, from the inventory's `applied` field names
    (`config:agent.max_turns`, `env:OPENAI_API_KEY`)."""
    spaces = {"config": CONFIG, "env": ENV}
    out: dict[str, set[str]] = {CONFIG: set(), ENV: set(), PROFILE: set()}
    for name in applied_fields:
        space, _, key = name.partition(":")
        if space in spaces and key:
            out[spaces[space]].add(key)
        elif name in PROFILE_KEYS:
            out[PROFILE].update(PROFILE_KEYS[name])
        elif name == "botmode" or space == "meta":
            out[PROFILE].update(BOT_RECORD_KEYS)
    return {file: frozenset(keys) for file, keys in out.items()}


def manages_profile_yaml(applied_fields: Iterable[str]) -> bool:
    """Whether profile.yaml is a managed file of the profile: a bot's (every bot carries its Bot
    Mode record there), not the root's install-wide settings alone."""
    return any(name == "botmode" or name.startswith(("profile:", "meta:")) for name in applied_fields)


def digest(salt: str, value: Any) -> str:
    """A keyed digest of a value (12 hex digits: a change is what is detected, not the value)."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hmac.new(salt.encode(), text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:12]


def config_digests(config: Mapping[str, Any], managed: frozenset[str], salt: str) -> Digests:
    """The digest of each unmanaged leaf of a config.yaml or profile.yaml (a list is one leaf; a
    managed key covers everything below it, and a key above a managed one is the managed key's own
    business)."""
    above = {".".join(key.split(".")[:n]) for key in managed for n in range(1, key.count(".") + 1)}
    leaves: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("", config)]
    walked = 0
    while stack:
        prefix, node = stack.pop()
        for key, value in node.items():
            walked += 1
            path = f"{prefix}{key}"
            if path in managed:
                continue
            if isinstance(value, dict) and value:
                stack.append((path + ".", value))
            elif path not in above:
                leaves[_bounded(path)] = value
            if walked > MAX_NODES or len(leaves) > MAX_KEYS:
                return _whole(config, managed, salt)
    return {path: digest(salt, value) for path, value in leaves.items()}


def env_digests(env: Mapping[str, str], managed: frozenset[str], salt: str) -> Digests:
    leaves = {_bounded(key): value for key, value in env.items() if key not in managed}
    if len(leaves) > MAX_KEYS:
        return {WHOLE: digest(salt, sorted(leaves.items()))}
    return {key: digest(salt, value) for key, value in leaves.items()}


def compare(file: str, before: Mapping[str, str], now: Mapping[str, str]) -> Edits:
    return Edits(
        file,
        added=tuple(sorted(k for k in now if k not in before)),
        removed=tuple(sorted(k for k in before if k not in now)),
        changed=tuple(sorted(k for k in now if k in before and now[k] != before[k])),
    )


def map_id(digests: Mapping[str, str]) -> str:
    """The id of one recorded map of digests: equal maps (bots whose unmanaged keys are alike) are stored once."""
    text = json.dumps(digests, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _bounded(path: str) -> str:
    if len(path) <= MAX_KEY_CHARS:
        return path
    return path[:MAX_KEY_CHARS] + "…" + hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _whole(config: Mapping[str, Any], managed: frozenset[str], salt: str) -> Digests:
    rest = {k: v for k, v in config.items() if k not in managed}  # top level only: bounded work
    return {WHOLE: digest(salt, rest)}
