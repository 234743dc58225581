"""`hermes-fleet demo`: apply the embedded demo fleet to a scratch Hermes home and show the result.

The first thing a new user runs: validate -> plan -> apply -> plan again (no changes) -> status,
all against a fresh temporary home (or `--home DIR`), never `~/.hermes` unless asked for.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from controller import cli
from controller.errors import ExitCode, UsageError

DEMO_FILES = ("demo-fleet.yaml", "demo-soul-researcher.md")


def materialise(folder: Path) -> Path:
    """Copy the demo manifests into `folder` and make a throwaway peer key for them."""
    folder.mkdir(parents=True, exist_ok=True)
    data = resources.files("controller") / "data"
    for name in DEMO_FILES:
        (folder / name).write_text((data / name).read_text(encoding="utf-8"), encoding="utf-8")
    key = folder / "demo-peer.key"
    key.write_text(secrets.token_urlsafe(24) + "\n", encoding="utf-8")
    key.chmod(0o600)
    return folder / "demo-fleet.yaml"


def cmd_demo(args: argparse.Namespace) -> int:
    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="hermes-fleet-demo-"))
    if args.home and home.exists() and any(home.iterdir()) and not args.force:
        raise UsageError(f"{home} is not empty", hint="pick an empty folder, or pass --force to apply on top of it")
    manifests = Path(tempfile.mkdtemp(prefix="hermes-fleet-demo-manifests-"))
    try:
        fleet = materialise(manifests)
        common = ["-f", str(fleet), "--home", str(home), "--color", args.color]
        steps = [
            ("validate", ["--color", args.color, "validate", "-f", str(fleet)]),
            ("apply", ["--color", args.color, "apply", *common[:4]]),
            ("plan (again: nothing to do)", ["--color", args.color, "plan", *common[:4], "--detailed-exitcode"]),
            ("status", ["--color", args.color, "status", "--home", str(home)]),
        ]
        for title, argv in steps:
            print(f"\n$ hermes-fleet {' '.join(_show(a) for a in argv)}    # {title}", flush=True)
            code = cli.main(argv)
            sys.stdout.flush()
            if code not in (ExitCode.OK,):
                print(f"demo: step '{title}' exited {code}", file=sys.stderr)
                return code
    finally:
        shutil.rmtree(manifests, ignore_errors=True)
    print(
        f"\nThe demo fleet lives in {home}. Look at it with Hermes itself, e.g.\n"
        f"  HERMES_HOME={home} hermes profile list\n"
        f"  HERMES_HOME={home} hermes -p researcher config\n"
        f"  HERMES_HOME={home} hermes -p researcher sessions list\n"
        f"  HERMES_HOME={home} hermes -p researcher cron list --all\n"
        "Rooms (group chats) need a running Hermes gateway for the home; see docs/rooms.md."
    )
    return ExitCode.OK


def _show(arg: str) -> str:
    return arg if " " not in arg else repr(arg)
