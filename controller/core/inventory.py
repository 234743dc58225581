"""The inventory as a value: what a fleet owns and the values it last applied (pure).

Keys name objects: `install/root`, `bot/<name>`, `routine/<bot>/<title>`, `room/<name>`. The
last-applied values make plans three-way (desired / live / last applied), which is how drift is
told apart from a change in the manifests. Secret values are kept only as keyed hashes. Reading
and writing the file is `controller.adapters.inventory`; this module never touches the disk.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
INSTALL_KEY = "install/root"
HISTORY_KEPT = 10


def bot_key(name: str) -> str:
    return f"bot/{name}"


def routine_key(bot: str, title: str) -> str:
    return f"routine/{bot}/{title}"


def room_key(name: str) -> str:
    return f"room/{name}"


def object_key(kind: str, name: str) -> str:
    """The inventory key of a plan object (`install` has one key whatever its name)."""
    return INSTALL_KEY if kind == "install" else f"{kind}/{name}"


def split_key(key: str) -> tuple[str, str]:
    """(kind, name) of an inventory key; a routine's name is `<bot>/<title>`."""
    kind, _, name = key.partition("/")
    return kind, name


def routine_name(bot: str, title: str) -> str:
    """A routine's plan name: `<bot>/<title>`."""
    return f"{bot}/{title}"


def routine_parts(name: str) -> tuple[str, str]:
    """(bot, title) of a routine's plan name (a title may itself contain `/`)."""
    bot, _, title = name.partition("/")
    return bot, title


def new_salt() -> str:
    return secrets.token_hex(16)


@dataclass
class Inventory:
    fleet: str
    salt: str = field(default_factory=new_salt)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_apply: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    exists: bool = False
    # Records of restored bots (bot -> {key: entry}), kept aside until the bot is back in the
    # manifests: until then it is left alone (a `--prune` run does not prune it again), then its
    # own and its routines' ownership come back with it (`reclaim`).
    restored: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # The machine this home was last converged as (`--host`; None: the whole fleet, or never
    # recorded). A plan for another slice is refused until `--rehost` (engine/reconciling.py).
    host: str | None = None

    def owns(self, key: str) -> bool:
        return key in self.objects

    def applied(self, key: str) -> dict[str, Any]:
        applied: dict[str, Any] = self.objects.get(key, {}).get("applied", {})
        return applied

    def secret_hash(self, value: str) -> str:
        """A keyed hash: detects a changed secret without storing it."""
        return "hmac:" + hmac.new(self.salt.encode(), value.encode(), hashlib.sha256).hexdigest()[:32]

    def owned_bots(self) -> list[str]:
        return sorted(name for kind, name in map(split_key, self.objects) if kind == "bot")

    def keys_of(self, kind: str) -> list[str]:
        return sorted(k for k in self.objects if split_key(k)[0] == kind)

    def reclaim(self, bots: Iterable[str]) -> list[str]:
        """Give back the records of restored bots that are in the manifests again; returns their keys.
        A record the fleet made meanwhile wins."""
        keys = []
        for bot in sorted(set(bots) & set(self.restored)):
            for key, entry in self.restored.pop(bot).items():
                if key not in self.objects:
                    self.objects[key] = entry
                    keys.append(key)
        return keys

    def rename_bot(self, old: str, new: str) -> list[str]:
        """Move a bot's records (its own and its routines') from `old` to `new`; returns the new keys.
        A record already under the new name wins (a rename never overwrites what the fleet made)."""
        moved = []
        prefix = f"routine/{old}/"
        for key in [k for k in self.objects if k == bot_key(old) or k.startswith(prefix)]:
            entry = self.objects.pop(key)
            target = bot_key(new) if key == bot_key(old) else routine_key(new, key[len(prefix) :])
            if target not in self.objects:
                self.objects[target] = {**entry, "renamed_from": old} if target == bot_key(new) else entry
                moved.append(target)
        return moved

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION,
            "fleet": self.fleet,
            "salt": self.salt,
            "last_apply": self.last_apply,
            "history": self.history[-HISTORY_KEPT:],
            "objects": self.objects,
            **({"restored": self.restored} if self.restored else {}),
            **({"host": self.host} if self.host else {}),
        }

    @classmethod
    def from_json(cls, fleet: str, data: dict[str, Any]) -> Inventory:
        return cls(
            fleet=fleet,
            salt=str(data.get("salt") or new_salt()),
            objects=data["objects"],
            last_apply=data.get("last_apply"),
            history=list(data.get("history") or []),
            exists=True,
            restored=restored if isinstance(restored := data.get("restored"), dict) else {},
            host=host if isinstance(host := data.get("host"), str) and host else None,
        )
