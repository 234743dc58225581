"""`restore`: list the backups prune made, or bring one back (with its fleet's ownership)."""

from __future__ import annotations

import argparse
import json

from controller.adapters import profiles
from controller.adapters.home import profile_dir, resolve_root
from controller.engine import restoring
from controller.errors import ExitCode
from controller.verbs import common, reporting, suspend


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
    suspend.refuse_if_suspended(root, force=args.force, verb="restore")
    info, kept = restoring.restore(root, args.backup)
    path = profile_dir(root, info.name)
    if as_json:
        restored = {"profile": info.name, "path": str(path), "fleet": info.fleet or None, "records_kept": kept}
        _json(args, home=str(root), restored=restored)
        return ExitCode.OK
    fleet = repr(info.fleet) if info.fleet else "its fleet"
    print(
        f"Restored {path}. It carries the owner marker of fleet {fleet}, and apply leaves it alone until bot "
        f"{info.name!r} is back in that fleet's manifests; then the next apply manages it again, without "
        f"--adopt ({kept} inventory record(s) of the bot and its routines kept for that)."
    )
    return ExitCode.OK


def _json(args: argparse.Namespace, **fields: object) -> None:
    reporting.write(json.dumps({"schemaVersion": reporting.JSON_SCHEMA_VERSION, "kind": "restore", **fields}, indent=2) + "\n")
    common.wrote_report(args)
