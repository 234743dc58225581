"""`plan` answered from the settled plan (adapters/settled.py) while nothing it was made from changed.

The last converged `apply` kept what `plan` would print for its home, with every input that plan
read. When this `plan` asks for the same inputs (PLAN_INPUTS), in the same environment, with the
same hermes-fleet, and every recorded file and folder still has its stat key, the kept output is
printed as it was made: manifests are not validated and the home is not observed. Anything else,
and `--no-cache`, `--out` or HERMES_FLEET_NO_CACHE=1, plans in full. This module imports only
what that check needs (docs/performance.md#the-settled-plan).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from controller.adapters import settled
from controller.adapters.home import resolve_root
from controller.errors import ControllerError
from controller.verbs.terminal import use_color

# The arguments of `plan` that change what it plans; each other one only changes how it is shown
# (RENDER_ONLY) or turns this shortcut off (OFF). tests/integration/test_settled_plan.py checks
# that every argument of `plan` is in exactly one of them.
PLAN_INPUTS = (
    "adopt", "bots", "files", "fleet", "gateway", "gateway_timeout", "gateway_token_env", "hermes_version",
    "home", "host", "labels", "no_rooms", "prune", "recursive", "rehost",
)  # fmt: skip
RENDER_ONLY = ("color", "debug", "deny_widening", "detail", "detailed_exitcode", "func", "output", "quiet", "verb", "verb_name")
OFF = ("no_cache", "out")
VIEWS = ("default", "quiet", "detail")
NO_CACHE_ENV = "HERMES_FLEET_NO_CACHE"  # as adapters/obscache.py


def params(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """What this plan is made from, of its arguments (the home resolved)."""
    chosen: dict[str, Any] = {name: getattr(args, name, None) for name in PLAN_INPUTS}
    chosen["home"] = str(root)
    chosen["files"] = [os.fspath(f) for f in chosen["files"] or []]
    return chosen


def reads_stdin(args: argparse.Namespace) -> bool:
    """`-f -`: manifests read from stdin, which no stat key vouches for (never kept, never replayed)."""
    return "-" in [os.fspath(f) for f in getattr(args, "files", None) or []]


def view_of(args: argparse.Namespace) -> str:
    return "quiet" if getattr(args, "quiet", False) else "detail" if getattr(args, "detail", False) else "default"


def output_key(output: str, view: str = "default", color: bool = False) -> str:
    return "json" if output == "json" else f"text:{view}:{int(color)}"


def answer(args: argparse.Namespace) -> int | None:
    """The exit code after printing the settled plan, or None: plan in full."""
    if any(getattr(args, name, None) for name in OFF) or os.environ.get(NO_CACHE_ENV) == "1":
        return None
    if args.output not in ("text", "json") or reads_stdin(args):
        return None
    try:
        root = resolve_root(args.home)
    except ControllerError:
        return None
    try:
        memo = settled.load(root)
        if memo is None or not memo.holds(params(args, root)):
            return None
    except Exception:  # a memo this check cannot take (hostile input): plan in full
        return None
    shown = memo.outputs.get(output_key(args.output, view_of(args), use_color(sys.stdout, args.color)))
    if shown is None:
        return None
    sys.stdout.write(shown)
    sys.stdout.flush()
    sys.stderr.write(memo.outputs.get("stderr", ""))
    if args.output == "json":
        args.report_written = True
    return 0
