"""Restoring a pruned bot: the full undo of `apply --prune`.

Prune moves the profile into a backup and keeps, in the backup's record, the fleet's inventory
entries of the bot and its routines (their job ids and last-applied values). A restore moves the
profile back, under the apply lock, and hands those entries to the fleet's inventory, set aside
(`Inventory.restored`): the restored bot is left alone while the manifests lack it (so a `--prune`
run does not prune it again), and when it is back in them, its own and its routines' ownership
come back with it (`Inventory.reclaim`, in `reconciling.plan_home`), so that apply converges
without `--adopt`.
"""

from __future__ import annotations

from pathlib import Path

from controller.adapters import locking, profiles
from controller.adapters.profiles import BackupInfo
from controller.engine import records
from controller.engine.applying.bots import owned_with
from controller.hermes import naming


def restore(root: Path, backup: str, *, lock_timeout: float = 10.0) -> tuple[BackupInfo, int]:
    """Move the backup back into place; (its record, how many inventory entries were kept for it)."""
    with locking.apply_lock(root, timeout=lock_timeout, purpose="restore"):
        info = profiles.restore_profile(root, backup)
        kept = {
            key: entry
            for key, entry in sorted(info.records.items())
            if isinstance(entry, dict) and owned_with(key, info.name)  # only the bot's own entries
        }
        if kept and info.fleet and not naming.profile_name_problem(info.fleet):
            inventory = records.load(root, info.fleet)
            inventory.restored[info.name] = {**inventory.restored.get(info.name, {}), **kept}
            records.save(root, inventory)
        profiles.discard_backup(info)
    return info, len(kept) if info.fleet else 0
