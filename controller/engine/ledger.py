"""The ledger: what this run does to the fleet's records.

The plan reads a frozen `core.inventory.Inventory` (part of `Inputs`, which nothing changes). The
ledger starts as a copy of it; apply records each object here as it lands (its ownership, the
values it applied, a new job's id, a rename, a release), `records.save` writes it to the
inventory file, and the run ends by adding itself to its history (reconciling.finish_inventory).

A record read from the inventory stays frozen until apply writes it: `entry(key)` gives a fresh
plain copy to write into, so the plan's inventory never sees the change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controller.core.inventory import FrozenDict, Inventory, document, reclaimed_records, renamed_records


class Ledger:
    def __init__(self, inventory: Inventory) -> None:
        self.planned = inventory  # what the plan read, as it was (its salt keys the secret hashes)
        self.fleet = inventory.fleet
        self.salt = inventory.salt
        self.objects: dict[str, Mapping[str, Any]] = dict(inventory.objects)
        self.last_apply: Mapping[str, Any] | None = inventory.last_apply
        self.history: list[Mapping[str, Any]] = list(inventory.history)
        self.restored: dict[str, Mapping[str, Any]] = dict(inventory.restored)
        self.host = inventory.host
        self.exists = inventory.exists

    def owns(self, key: str) -> bool:
        return key in self.objects

    def get(self, key: str) -> Mapping[str, Any] | None:
        return self.objects.get(key)

    def applied(self, key: str) -> Mapping[str, Any]:
        applied: Mapping[str, Any] = self.objects.get(key, {}).get("applied", {})
        return applied

    def items(self) -> Iterable[tuple[str, Mapping[str, Any]]]:
        return self.objects.items()

    def entry(self, key: str) -> dict[str, Any]:
        """The record of `key` to write into (a new one when there is none): never the frozen one."""
        current = self.objects.get(key)
        if isinstance(current, dict) and not isinstance(current, FrozenDict):
            return current
        fresh = dict(current or {})
        self.objects[key] = fresh
        return fresh

    def drop(self, key: str) -> None:
        self.objects.pop(key, None)

    def rename_bot(self, old: str, new: str) -> list[str]:
        """Move a bot's records from `old` to `new` (core.inventory.renamed_records); the moved keys."""
        self.objects, moved = renamed_records(self.objects, old, new)
        return moved

    def reclaim(self, bots: Iterable[str]) -> list[str]:
        self.objects, self.restored, keys = reclaimed_records(self.objects, self.restored, bots)
        return keys

    def keep_restored(self, bot: str, records: Mapping[str, Any]) -> None:
        """Set a restored bot's records aside (engine/restoring.py), merged with any kept before."""
        self.restored[bot] = {**self.restored.get(bot, {}), **records}

    def add_run(self, record: Mapping[str, Any], host: str | None) -> None:
        self.last_apply = record
        self.history.append(record)
        self.host = host

    def to_json(self) -> dict[str, Any]:
        return document(self.fleet, self.salt, self.objects, self.last_apply, self.history, self.restored, self.host)

    def inventory(self) -> Inventory:
        """What the ledger holds, as the frozen value the planner reads."""
        return Inventory(
            fleet=self.fleet,
            salt=self.salt,
            objects=self.objects,
            last_apply=self.last_apply,
            history=tuple(self.history),
            exists=self.exists,
            restored=self.restored,
            host=self.host,
        )
