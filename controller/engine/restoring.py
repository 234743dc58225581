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

from controller.adapters import inventory as inventory_file
from controller.adapters import locking, profiles
from controller.adapters.profiles import BackupInfo
from controller.core.inventory import bot_key
from controller.engine import records
from controller.engine.applying.bots import owned_with
from controller.engine.ledger import Ledger
from controller.errors import ConflictError
from controller.hermes import naming


def restore(root: Path, backup: str, *, lock_timeout: float = 10.0) -> tuple[BackupInfo, int]:
    """Move the backup back into place; (its record, how many inventory entries were kept for it)."""
    with locking.apply_lock(root, timeout=lock_timeout, purpose="restore"):
        info = profiles.restore_profile(root, backup, check=lambda found: _sole_owner(root, found))
        kept = {
            key: entry
            for key, entry in sorted(info.records.items())
            if isinstance(entry, dict) and owned_with(key, info.name)  # only the bot's own entries
        }
        if kept and info.fleet and not naming.profile_name_problem(info.fleet):
            ledger = Ledger(records.load(root, info.fleet))
            ledger.keep_restored(info.name, kept)
            records.save(root, ledger)
        profiles.discard_backup(info)
    return info, len(kept) if info.fleet else 0


def _sole_owner(root: Path, info: BackupInfo) -> None:
    """Refuse (ConflictError) to bring back a profile that another fleet owns meanwhile: the
    restored profile carries the marker of the backup's fleet, and a bot has one owner."""
    for other in inventory_file.all_fleets(root):
        if other == info.fleet:
            continue
        theirs = records.load(root, other)
        if theirs.owns(bot_key(info.name)) or info.name in theirs.restored:
            raise ConflictError(
                f"cannot restore {info.name!r} for fleet {info.fleet!r}: fleet {other!r} owns a bot of that name "
                "now; a bot is owned by one fleet",
                hint=f"remove bot {info.name!r} from fleet {other!r} (apply its manifests without it, with --prune), "
                "or restore after renaming that bot",
            )
