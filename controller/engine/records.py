"""The inventory between the core's value type and its file: load, save, other fleets."""

from __future__ import annotations

import re
from pathlib import Path

from controller.adapters import inventory as inventory_file
from controller.core.inventory import Inventory
from controller.errors import HermesStateError

HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,253}\Z")  # models.fleet.HostName


def load(root: Path, fleet: str) -> Inventory:
    data = inventory_file.read(root, fleet)
    if data is None:
        return Inventory(fleet=fleet)
    host = data.get("host")
    if host is not None and not (isinstance(host, str) and HOST_NAME.match(host)):
        # The slice this home was converged as: never guessed (a plan for the wrong slice orphans bots).
        path = inventory_file.inventory_path(root, fleet)
        raise HermesStateError(
            f"{path}: `host` is not a host name (the slice this home was converged as)",
            path=str(path),
            hint='set it to the host this home runs (e.g. "host": "office"), or remove the key and apply with --host',
        )
    return Inventory.from_json(fleet, data)


def save(root: Path, inventory: Inventory) -> None:
    inventory_file.write(root, inventory.fleet, inventory.to_json())
    inventory.exists = True
