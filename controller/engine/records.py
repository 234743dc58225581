"""The inventory between the core's value type and its file: load (a frozen Inventory), save (a
run's Ledger), other fleets; and the salt of a new inventory (core makes no random values)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from controller.adapters import inventory as inventory_file
from controller.adapters import obscache
from controller.core.inventory import Inventory
from controller.core.types import LiveProfile
from controller.engine.ledger import Ledger
from controller.errors import HermesStateError
from controller.manifests import reading


def new_salt() -> str:
    """The key of a new inventory's secret hashes (core.inventory.Inventory.secret_hash)."""
    return secrets.token_hex(16)


def load(root: Path, fleet: str) -> Inventory:
    data = inventory_file.read(root, fleet)
    if data is None:
        return Inventory(fleet=fleet, salt=new_salt())
    _check_bot_fields(root, fleet, data["objects"])
    host = data.get("host")
    if host is not None and not (isinstance(host, str) and reading.HOST_NAME.match(host)):
        # The slice this home was converged as: never guessed (a plan for the wrong slice orphans bots).
        path = inventory_file.inventory_path(root, fleet)
        raise HermesStateError(
            f"{path}: `host` is not a host name (the slice this home was converged as)",
            path=str(path),
            hint='set it to the host this home runs (e.g. "host": "office"), or remove the key and apply with --host',
        )
    return Inventory.from_json(fleet, data, salt=new_salt())


class InventoryMemo:
    """A watch loop's inventory, read again only when its file's stat key moved since the last
    read or was racy then (adapters/obscache.py: the rule of the observation cache). The
    Inventory is frozen: a pass, its health check and the next pass may share it."""

    def __init__(self) -> None:
        self._held: tuple[str, str, tuple[obscache.Key, ...], Inventory] | None = None

    def load(self, root: Path, fleet: str) -> Inventory:
        path = str(inventory_file.inventory_path(root, fleet))
        keys = obscache.stat_keys([path])  # taken before the read
        held = self._held
        if held is not None and keys is not None and held[:3] == (fleet, path, keys):
            return held[3]
        read_ns = time.time_ns()
        inventory = load(root, fleet)
        fresh = keys is not None and keys[0] is not None and not obscache.racy(keys, read_ns)
        self._held = (fleet, path, keys, inventory) if keys is not None and fresh else None
        return inventory


def _check_bot_fields(root: Path, fleet: str, objects: dict[str, Any]) -> None:
    """Every field a bot's record says was applied is one a plan knows (a hand-edited inventory
    must be a located error, not a traceback in the planner)."""
    for key, entry in objects.items():
        if key.startswith("bot/"):
            for name in entry.get("applied", {}):
                if name.partition(":")[0] not in LiveProfile.FIELD_SPACES:
                    path = inventory_file.inventory_path(root, fleet)
                    raise HermesStateError(
                        f"{path}: `applied` of {key!r} names {name!r}, not a field hermes-fleet writes",
                        path=str(path),
                        hint="restore it from a backup, or move it away and apply with --adopt to rebuild it",
                    )


def save(root: Path, ledger: Ledger) -> None:
    inventory_file.write(root, ledger.fleet, ledger.to_json())
    ledger.exists = True
