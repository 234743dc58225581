"""`restore`: list the backups prune made, or bring one back (with its fleet's ownership)."""

from __future__ import annotations

import argparse

from controller.adapters import profiles
from controller.adapters.home import resolve_root
from controller.engine import restoring
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
    info, given_back = restoring.restore(root, args.backup)
    owned = f"fleet {info.fleet!r} owns it again ({given_back} inventory record(s) restored)" if info.fleet else "no fleet"
    print(
        f"Restored {profiles.profile_dir(root, info.name)}; {owned}. Keep it in the manifests and apply: "
        "it converges without --adopt (left out of them, the next apply lists it as an orphan)."
    )
    return ExitCode.OK
