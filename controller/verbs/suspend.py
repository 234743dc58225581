"""`suspend` and `resume`: pause the reconciler on one home without stopping it (docs/cli.md#suspend-and-resume).

A suspended home is planned and reported by `watch` (result `suspended`) but never changed, and
`apply` and `rollback` refuse it (exit 3) unless `--force`: like Flux's `flux suspend`, for the
hour an operator works on the machine by hand.
"""

from __future__ import annotations

import argparse
import getpass
import os
import socket
import sys
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

from controller.adapters import suspension
from controller.adapters.home import resolve_root
from controller.errors import ConflictError, ExitCode, UsageError


def cmd_suspend(args: argparse.Namespace) -> int:
    reason = _reason(args.reason or "")
    root = _existing_home(args.home)
    before = suspension.read(root)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    record = suspension.Suspension(by=_who(), at=now, reason=reason)
    suspension.write(root, record)
    if before is not None:
        print(f"{root} was already {before.describe()}; now {record.describe()}")
    else:
        print(f"{root}: {record.describe()}")
    print("watch changes nothing and apply refuses (exit 3, unless --force) until `hermes-fleet resume`")
    return ExitCode.OK


def cmd_resume(args: argparse.Namespace) -> int:
    root = _existing_home(args.home)
    before = suspension.read(root)
    if not suspension.clear(root):
        print(f"{root} is not suspended; nothing to do")
        return ExitCode.OK
    described = before.describe() if before is not None else "suspended"
    print(f"{root} resumed (was {described}); watch applies again from its next pass")
    return ExitCode.OK


def refuse_if_suspended(root: Path, *, force: bool, verb: str, dry_run: bool = False) -> None:
    """A suspended home: exit 3 naming who, when and why; with --force a note; a dry run is told."""
    held = suspension.read(root)
    if held is None:
        return
    if force:
        print(f"hermes-fleet: note: {root} is {held.describe()}; {verb} proceeds (--force)", file=sys.stderr)
        return
    if dry_run:
        print(
            f"hermes-fleet: note: {root} is {held.describe()}; {verb} would be refused (exit 3) without --force", file=sys.stderr
        )
        return
    raise ConflictError(
        f"{root} is {held.describe()}; {verb} refused, nothing was changed",
        hint="run `hermes-fleet resume` when the work on this home is done, or pass --force to apply anyway",
    )


def _existing_home(home: str | None) -> Path:
    root = resolve_root(home)
    if not root.is_dir():
        raise UsageError(f"no Hermes home at {root}", hint="give the home with --home (or set HERMES_HOME)")
    return root


def _who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (a container's arbitrary uid)
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def _reason(text: str) -> str:
    reason = text.strip()
    if len(reason) > suspension.MAX_REASON:
        raise UsageError(f"--reason is {len(reason)} characters; at most {suspension.MAX_REASON}")
    if any(unicodedata.category(c).startswith("C") for c in reason):
        raise UsageError("--reason must be one line of text (no control characters)")
    return reason
