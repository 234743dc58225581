"""Restoring a pruned bot: the full undo of `apply --prune`.

Prune moves the profile into a backup and keeps, in the backup's record, the fleet's inventory
entries of the bot and its routines (their job ids and last-applied values). A restore moves the
profile back and gives those entries back to the fleet's inventory, under the apply lock, so the
next apply of the manifests that had the bot converges without `--adopt`.
"""

from __future__ import annotations

from pathlib import Path

from controller.adapters import locking, profiles
from controller.adapters.profiles import BackupInfo
from controller.engine import records
from controller.engine.applying.bots import owned_with
from controller.hermes import naming


def restore(root: Path, backup: str, *, lock_timeout: float = 10.0) -> tuple[BackupInfo, int]:
    """Move the backup back into place and return (its record, how many inventory entries came back)."""
    with locking.apply_lock(root, timeout=lock_timeout, purpose="restore"):
        info = profiles.restore_profile(root, backup)
        given_back = 0
        if info.fleet and not naming.profile_name_problem(info.fleet):
            inventory = records.load(root, info.fleet)
            for key, entry in sorted(info.records.items()):
                # Only the bot's own entries; anything the fleet recorded meanwhile wins.
                if isinstance(entry, dict) and owned_with(key, info.name) and key not in inventory.objects:
                    inventory.objects[key] = entry
                    given_back += 1
            if given_back:
                records.save(root, inventory)
        profiles.discard_backup(info)
    return info, given_back
