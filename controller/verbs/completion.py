"""`completion bash|zsh|fish`: the shell script that turns on tab completion, and the completers.

argcomplete (docs/cli.md, "Shell completion") walks the same argparse parser the CLI runs, so
verbs, options, choices and paths complete in all three shells without a second description of
the command line. The completers below add names only the data knows: bots, fleets and hosts
declared in the manifests of `-f` (or of `fleet/` in the current folder when the verb has no
`-f`), the home's profiles and fleets, `restore`'s backups and the apply history's entry numbers. They never raise: a completion
that cannot read something offers less.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controller.errors import ExitCode

SHELLS = ("bash", "zsh", "fish")
DEFAULT_FOLDER = "fleet"  # the folder `init` makes and the README uses


def cmd_completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode([args.prog], shell=args.shell))
    return ExitCode.OK


def complete(what: str, prefix: str, parsed_args: argparse.Namespace) -> list[str]:
    """Names of kind `what` (bot, fleet, host, backup, entry) that start with `prefix`."""
    try:
        names = _NAMES[what](parsed_args)
    except Exception:  # a completion must never print a traceback into the shell
        return []
    return sorted(n for n in set(names) if n.startswith(prefix))


def _manifest_data(parsed_args: argparse.Namespace) -> list[Any]:
    from controller.manifests import loading

    files = getattr(parsed_args, "files", None) or ([DEFAULT_FOLDER] if Path(DEFAULT_FOLDER).is_dir() else [])
    files = [f for f in files if f != "-"]
    if not files:
        return []
    documents, _ = loading.load_files(loading.discover(files))
    return [doc.data for doc in documents if isinstance(doc.data, dict)]


def _declared(parsed_args: argparse.Namespace, kind: str) -> list[str]:
    """Names the manifests declare: bots (Fleet spec.bots, Bot documents), fleets, hosts."""
    out: list[Any] = []
    for data in _manifest_data(parsed_args):
        meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
        bots = [b for b in spec.get("bots") or [] if isinstance(b, dict)] if data.get("kind") == "Fleet" else []
        if kind == "fleet":
            out.append(meta.get("name") if data.get("kind") == "Fleet" else meta.get("fleet"))
        elif kind == "bot":
            out += [b.get("name") for b in bots]
            if data.get("kind") == "Bot":
                out.append(meta.get("name"))
        elif kind == "host":
            out += [b.get("host") for b in bots]
            out += [x.get("host") for x in (spec.get("peers") or []) + (spec.get("rooms") or []) if isinstance(x, dict)]
            if data.get("kind") in ("Bot", "Room", "Peer"):
                out.append(spec.get("host"))
    return [n for n in out if isinstance(n, str) and n]


def _home(parsed_args: argparse.Namespace) -> Path:
    from controller.adapters.home import resolve_root

    return resolve_root(getattr(parsed_args, "home", None))


def _bots(parsed_args: argparse.Namespace) -> list[str]:
    from controller.adapters import profiles

    return _declared(parsed_args, "bot") + profiles.live_profiles(_home(parsed_args))


def _fleets(parsed_args: argparse.Namespace) -> list[str]:
    from controller.adapters import inventory

    return _declared(parsed_args, "fleet") + inventory.all_fleets(_home(parsed_args))


def _hosts(parsed_args: argparse.Namespace) -> list[str]:
    return _declared(parsed_args, "host")


def _backups(parsed_args: argparse.Namespace) -> list[str]:
    from controller.adapters import profiles

    return [b.path.name for b in profiles.list_backups(_home(parsed_args))]


def _entries(parsed_args: argparse.Namespace) -> list[str]:
    """The apply history's entry numbers (`rollback --to`, `history show`), newest first."""
    from controller.adapters import history

    root = _home(parsed_args)
    fleets = [parsed_args.fleet] if getattr(parsed_args, "fleet", None) else history.fleets(root)
    if len(fleets) != 1:
        return []
    return [str(n) for n in reversed(history.sequence_numbers(root, fleets[0]))]


_NAMES = {"bot": _bots, "fleet": _fleets, "host": _hosts, "backup": _backups, "entry": _entries}
