"""`restore`: list the backups prune made, or bring one back."""

from __future__ import annotations

import argparse
import json

from controller.adapters import inventory, profiles
from controller.adapters.home import resolve_root
from controller.errors import ExitCode
from controller.verbs import common, reporting


def cmd_restore(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    as_json = getattr(args, "output", "text") == "json"
    if not args.backup:
        backups = profiles.list_backups(root)
        if as_json:
            _json(
                args,
                home=str(root),
                backups=[
                    {"backup": b.path.name, "path": str(b.path), "profile": b.name, "fleet": b.fleet, "created_at": b.created_at}
                    for b in backups
                ],
            )
            return ExitCode.OK
        if not backups:
            print(f"No backups under {profiles.backups_dir(root)}.")
        for b in backups:
            print(f"{b.path.name}\tprofile {b.name}\tfleet {b.fleet}\t{b.created_at}")
        return ExitCode.OK
    restored = profiles.restore_profile(root, args.backup)
    marker = inventory.read_marker(root, restored.name) or {}
    fleet = str(marker.get("fleet") or "its fleet")
    if as_json:
        _json(args, home=str(root), restored={"profile": restored.name, "path": str(restored), "fleet": marker.get("fleet")})
        return ExitCode.OK
    print(
        f"Restored {restored}. It still carries the owner marker of fleet {fleet!r}, and apply leaves it alone "
        f"until bot {restored.name!r} is back in that fleet's manifests; then the next apply manages it again."
    )
    return ExitCode.OK


def _json(args: argparse.Namespace, **fields: object) -> None:
    reporting.write(json.dumps({"schemaVersion": reporting.JSON_SCHEMA_VERSION, "kind": "restore", **fields}, indent=2) + "\n")
    common.wrote_report(args)
