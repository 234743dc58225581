"""The inventory between the core's value type and its file: load, save, other fleets."""

from __future__ import annotations

from pathlib import Path

from controller.adapters import inventory as inventory_file
from controller.core.inventory import Inventory


def load(root: Path, fleet: str) -> Inventory:
    data = inventory_file.read(root, fleet)
    return Inventory(fleet=fleet) if data is None else Inventory.from_json(fleet, data)


def save(root: Path, inventory: Inventory) -> None:
    inventory_file.write(root, inventory.fleet, inventory.to_json())
    inventory.exists = True
