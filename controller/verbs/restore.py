"""`restore`: list the backups prune made, or bring one back."""

from __future__ import annotations

import argparse

from controller.adapters import profiles
from controller.adapters.home import resolve_root
from controller.errors import ExitCode


def cmd_restore(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    if not args.backup:
        backups = profiles.list_backups(root)
        if not backups:
            print(f"No backups under {profiles.backups_dir(root)}.")
        for b in backups:
            print(f"{b.path.name}\tprofile {b.name}\tfleet {b.fleet}\t{b.created_at}")
        return ExitCode.OK
    restored = profiles.restore_profile(root, args.backup)
    print(
        f"Restored {restored}. It is still marked as owned by its fleet: keep it in the manifests, "
        "or the next apply lists it as an orphan."
    )
    return ExitCode.OK
