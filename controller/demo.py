"""`hermes-fleet demo`: apply the embedded demo fleet to a scratch Hermes home and show the result.

The first thing a new user runs: validate -> plan -> apply -> plan again (no changes) -> status,
all against a fresh temporary home (or `--home DIR`), never `~/.hermes` unless asked for.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from controller import cli
from controller.adapters.home import HomeLayout, StateLayout
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
    # The manifests stay with the home (in its hermes-fleet folder, which Hermes ignores), so the
    # commands printed at the end work as printed, and one `rm -rf` removes everything.
    fleet = materialise(HomeLayout(home).state / StateLayout.DEMO)
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
    print(next_steps(home, fleet))
    return ExitCode.OK


def next_steps(home: Path, fleet: Path) -> str:
    """What to run next, each line exactly as it works here: this install's CLI, the kept manifests,
    the real `hermes` if there is one (else how to get it), and how to remove the demo."""
    me, h, f = cli_command(), shlex.quote(str(home)), shlex.quote(str(fleet))
    lines = [
        f"\nThe demo fleet lives in {home}; its manifests are in {fleet.parent}.",
        "Next (each line runs as printed):",
        f"  {me} plan -f {f} --home {h}      # edit the manifest, then see the plan",
        f"  {me} apply -f {f} --home {h}",
        f"  {me} status --home {h}",
        f"  {me} export --home {h}           # the home as manifests again",
    ]
    hermes = hermes_command()
    if hermes is not None:
        lines.append("Look at it with Hermes itself:")
        lines += [
            f"  HERMES_HOME={h} {hermes} {rest}"
            for rest in ("profile list", "-p researcher config", "-p researcher sessions list", "-p researcher cron list --all")
        ]
    else:
        lines.append(
            "Hermes itself is not installed here (no `hermes` on PATH). Get it with `pipx install hermes-agent` "
            "(or, in a clone of hermes-fleet, `bash .ci/install-hermes`, which prints where it put `hermes`); then "
            f"`HERMES_HOME={h} hermes profile list` shows the demo bots."
        )
    if me != "hermes-fleet":
        lines.append("hermes-fleet is not on your PATH: call it as above, or install it (README.md, Install).")
    lines.append("Rooms (group chats) need a running Hermes gateway for the home; see docs/rooms.md.")
    lines.append(f"Remove the demo with: rm -rf {h}")
    return "\n".join(lines)


def cli_command() -> str:
    """How to call this very installation of hermes-fleet from a shell."""
    beside = Path(sys.executable).parent / "hermes-fleet"  # the console script of this environment
    on_path = shutil.which("hermes-fleet")
    if beside.is_file():
        if on_path and Path(on_path).resolve() == beside.resolve():
            return "hermes-fleet"
        return shlex.quote(str(beside))
    return f"{shlex.quote(sys.executable)} -m controller"


def hermes_command() -> str | None:
    """The real `hermes`: on PATH, else where `.ci/install-hermes` (and so `scripts/test`) puts it."""
    if shutil.which("hermes"):
        return "hermes"
    venv = os.environ.get("HERMES_FLEET_HERMES_VENV") or str(Path.home() / ".cache" / "hermes-fleet" / "hermes-agent-0.19.0")
    candidate = Path(venv) / "bin" / "hermes"
    return shlex.quote(str(candidate)) if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _show(arg: str) -> str:
    return arg if " " not in arg else repr(arg)
