"""The command line: argparse -> verb function -> rendered result -> exit code.

Every verb returns an `ExitCode` (docs/cli.md); `main()` catches `ControllerError` and prints
`what failed; what to do` without a traceback (unless --debug). Heavy modules (pydantic,
ruamel.yaml) are imported inside the verbs so `hermes-fleet --help` starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from controller import __version__, redact
from controller.errors import ArgumentError, ControllerError, ExitCode, Terminated

OUTPUTS_VALIDATE = ("text", "json", "github", "junit")
OUTPUTS_PLAN = ("text", "json")

# The verbs whose `-o json` is an output format, and the `kind` of the JSON document each prints.
JSON_KINDS = {
    "validate": "validate",
    "plan": "plan",
    "diff": "plan",
    "apply": "apply",
    "status": "status",
    "restore": "restore",
    "init": "init",
    "history": "history",
    "rollback": "rollback",
}

EPILOG = """exit codes: 0 success / no changes, 1 operation failed, 2 bad input (invalid manifest or
arguments), 3 conflict (object not owned by this fleet, another apply holds the lock, or the home is suspended),
4 changes pending (plan --detailed-exitcode), 5 widening denied (plan --deny-widening). Docs: docs/cli.md"""


class Parser(argparse.ArgumentParser):
    """argparse, except that a usage error also becomes a JSON document when -o json was asked for."""

    def error(self, message: str) -> Any:  # argparse's signature is NoReturn
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise ArgumentError(message)


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A time option: `30s`, `5m`, `1h`, `1h30m`, `500ms`, or bare seconds (`2`, `0.5`) -> seconds."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            raise argparse.ArgumentTypeError(f"invalid duration {text!r}: use 30s, 5m, 1h, 1h30m, 500ms or seconds") from None
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: it must be a finite time of 0 or more")
    return seconds


def _non_negative(text: str) -> int:
    """A count option: a whole number of 0 or more."""
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: use a whole number of 0 or more")
    return value


def _completer(what: str) -> Callable[..., list[str]]:
    """Names for shell completion (bot, fleet, host, backup, entry), read only when a shell asks."""

    def complete(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
        from controller.verbs import completion

        return completion.complete(what, prefix, parsed_args)

    return complete


def _names(action: argparse.Action, what: str) -> None:
    action.completer = _completer(what)  # type: ignore[attr-defined]  # argcomplete reads this attribute


def _add_manifest_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        dest="files",
        metavar="PATH",
        required=True,
        help="manifest files or folders (several after one -f, or -f repeated); '-' reads stdin",
    )
    _add_recursive_arg(p)
    _names(p.add_argument("--fleet", metavar="NAME", help="fleet name for documents that do not name one"), "fleet")


def _add_recursive_arg(p: argparse.ArgumentParser) -> None:
    # A folder given with -f is always read with its sub-folders; -R stays accepted for kubectl habit.
    p.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="accepted for kubectl habit: folders are always read with their sub-folders",
    )


def _add_gateway_args(p: argparse.ArgumentParser) -> None:
    """Rooms live on a running gateway (docs/rooms.md); default: found through the home's control socket."""
    p.add_argument(
        "--gateway",
        metavar="URL",
        help="the gateway that owns the rooms (default: the running gateway of --home, found without starting one)",
    )
    p.add_argument(
        "--gateway-token-env",
        metavar="NAME",
        help="environment variable holding the credential for --gateway (never passed on the command line)",
    )
    p.add_argument(
        "--gateway-timeout", type=duration, default=10.0, metavar="DURATION", help="per-call gateway timeout (default 10s)"
    )


def _add_home_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", metavar="DIR", help="the Hermes root (default: Hermes' own rules: $HERMES_HOME, else ~/.hermes)")


def _add_force_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="apply even though the home is suspended (hermes-fleet suspend)")


def setup_suspend(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Suspend the home: watch plans and reports but changes nothing, and apply and rollback refuse "
        "(exit 3) without --force, until `hermes-fleet resume`. Who, when and why are recorded in "
        "<home>/.hermes-fleet/suspended.json."
    )
    _add_home_arg(p)
    p.add_argument("--reason", metavar="TEXT", help="why (shown by status, watch, apply and the webhooks)")


def setup_resume(p: argparse.ArgumentParser) -> None:
    p.description = "Resume a suspended home: watch applies again from its next pass."
    _add_home_arg(p)


def _add_hermes_version_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hermes-version",
        metavar="X.Y.Z",
        help="the Hermes version this home is used with (default: detected; see docs/hermes/versions.md)",
    )


def _add_host_arg(p: argparse.ArgumentParser) -> None:
    host = p.add_argument(
        "--host",
        metavar="NAME",
        help="apply only this machine's slice of a multi-host fleet (default: this machine's hostname, "
        "when any object names a host)",
    )
    _names(host, "host")


def _add_rehost_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rehost",
        action="store_true",
        help="converge a home recorded as one host as another slice (--host NAME), on purpose",
    )


def add_global_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text output")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hermes-fleet",
        description="Declarative configuration for Hermes Agent bot fleets.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hermes-fleet {__version__}")
    add_global_args(parser)
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    add_verbs(sub)
    return parser


def add_verbs(sub: Any, wrap: Callable[[Callable[[argparse.Namespace], int]], Any] = lambda f: f) -> None:
    """Every verb's parser; `wrap` adapts the verb functions (the Hermes plugin makes them exit)."""
    for name, (help_text, aliases, setup, func) in VERBS.items():
        p = sub.add_parser(
            name, aliases=aliases, help=help_text, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        setup(p)
        p.set_defaults(func=wrap(func), verb_name=name)


def setup_validate(p: argparse.ArgumentParser) -> None:
    _add_manifest_args(p)
    p.add_argument("-o", "--output", choices=OUTPUTS_VALIDATE, default="text")
    p.add_argument("--strict", action="store_true", help="warnings fail too (exit 2)")


def setup_schema(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", help="only this document kind (Fleet, Bot, Section, Room, Routine, Peer, Policy)")


def _add_converge_args(p: argparse.ArgumentParser) -> None:
    """What plan and apply share: manifests, home, host slice, gateway, output format."""
    _add_manifest_args(p)
    _add_home_arg(p)
    _add_host_arg(p)
    _add_rehost_arg(p)
    _add_gateway_args(p)
    _add_hermes_version_arg(p)
    p.add_argument(
        "--no-rooms",
        action="store_true",
        help="leave rooms out: do not ask the gateway, plan and change no room (for a host without a gateway)",
    )
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")
    _add_view_args(p)
    _add_selector_args(p)


BOT_HELP = "only this bot and its routines (repeatable); install-wide settings and rooms are left out"
LABEL_HELP = "only bots with these labels (repeatable, or key=value,key2=value2: all must match)"


def _add_selector_args(p: argparse.ArgumentParser, bot_help: str = BOT_HELP, label_help: str = LABEL_HELP) -> None:
    """--bot and -l: only these bots' objects (docs/cli.md#selectors)."""
    _names(p.add_argument("--bot", action="append", dest="bots", metavar="NAME", help=bot_help), "bot")
    p.add_argument("-l", "--selector", action="append", dest="labels", metavar="KEY=VALUE", help=label_help)


def _add_view_args(p: argparse.ArgumentParser) -> None:
    """How much of a plan text output shows (docs/cli.md#plan-views); -o json is always complete."""
    view = p.add_mutually_exclusive_group()
    view.add_argument("--detail", action="store_true", help="show every field of every object (the full diff)")
    view.add_argument("-q", "--quiet", action="store_true", help="show the summary only (and what failed)")


def setup_plan(p: argparse.ArgumentParser) -> None:
    _add_converge_args(p)
    p.add_argument("--detailed-exitcode", action="store_true", help="exit 4 when changes are pending")
    p.add_argument(
        "--deny-widening",
        action="store_true",
        help="exit 5 when the plan widens a bot's capabilities (toolsets, MCP servers, approvals); "
        "one line per kind of widening (--detail: per change)",
    )
    p.add_argument("--prune", action="store_true", help="include deletions of owned objects gone from the manifests")
    p.add_argument("--adopt", action="store_true", help="plan to take over same-named objects this fleet does not own")
    p.add_argument("--out", metavar="FILE", help="also save the plan, with what it was made against, for `apply --plan FILE`")
    _add_no_cache_arg(p)


def _add_no_cache_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache", action="store_true", help="read every file of the home in full, not what the observation cache holds"
    )


def setup_apply(p: argparse.ArgumentParser) -> None:
    _add_converge_args(p)
    p.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    p.add_argument(
        "--prune",
        action="store_true",
        help="delete owned objects gone from the manifests (bots are moved to a restorable backup)",
    )
    p.add_argument("--yes", action="store_true", help="allow a prune above the guard fraction")
    p.add_argument("--adopt", action="store_true", help="take over same-named objects this fleet does not own")
    p.add_argument(
        "--plan",
        metavar="FILE",
        help="apply exactly this saved plan (plan --out); refused (exit 3) when the manifests or the home changed since",
    )
    p.add_argument(
        "--notify",
        action="store_true",
        help="post a failure or a prune to the manifests' notification webhooks (as watch does)",
    )
    _add_force_arg(p)
    p.add_argument(
        "--lock-timeout",
        type=duration,
        default=10.0,
        metavar="DURATION",
        help="how long to wait for another apply to finish (default 10s)",
    )


def setup_status(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    _names(p.add_argument("--fleet", metavar="NAME", help="only this fleet (default: every fleet in the home)"), "fleet")
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        dest="files",
        metavar="PATH",
        help="also compare against these manifests for drift",
    )
    _add_recursive_arg(p)
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")
    _add_selector_args(p, label_help=LABEL_HELP + "; needs -f (labels are in the manifests)")
    _add_gateway_args(p)
    _add_no_cache_arg(p)


def setup_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", metavar="DIR", help="where to build the demo home (default: a new temporary folder)")
    p.add_argument("--force", action="store_true", help="allow a non-empty --home")


def setup_init(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the repository folder (default: the current folder)")
    p.add_argument("--fleet", metavar="NAME", help="the fleet name (default: from the folder's name)")
    p.add_argument(
        "--source",
        metavar="URL",
        help="git URL of hermes-fleet for the pre-commit hook and the CI install (default: the origin of the "
        "checkout hermes-fleet runs from)",
    )
    p.add_argument("--rev", metavar="REV", help="tag or commit of --source (default: that checkout's commit)")
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")


def setup_export(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    fleet = p.add_argument(
        "--fleet",
        metavar="NAME",
        help="fleet name of the manifests (default: the fleet that manages the home, if exactly one does; else exported)",
    )
    _names(fleet, "fleet")
    _names(p.add_argument("--bot", action="append", dest="bots", metavar="NAME", help="only this bot (repeatable)"), "bot")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="FILE", help="one Fleet file (default: stdout)")
    out.add_argument("--split", metavar="DIR", help="a folder per kind, SOUL.md as soul_file, avatars as files")
    _add_gateway_args(p)
    p.add_argument("--no-rooms", action="store_true", help="do not ask the gateway for rooms")


def setup_watch(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--filename", action="extend", nargs="+", dest="files", metavar="PATH", help="manifest files or folders to watch"
    )
    _add_recursive_arg(p)
    p.add_argument("--git", metavar="URL", help="watch a git repository instead of local files")
    p.add_argument("--ref", default="main", help="branch, tag or commit of --git (default main)")
    p.add_argument("--path", default=".", help="folder inside the repository holding the manifests")
    p.add_argument("--ssh-key", metavar="FILE", help="private key for an ssh:// remote (else your git credentials)")
    p.add_argument(
        "--git-timeout",
        type=duration,
        default=60.0,
        metavar="DURATION",
        help="end a git command (fetch, checkout) that takes longer; the pass fails and is retried (default 60s)",
    )
    p.add_argument(
        "--allow-history-rewrite",
        action="store_true",
        help="accept a force-pushed ref (default: report it and keep the last good revision)",
    )
    _names(p.add_argument("--fleet", metavar="NAME", help="fleet name for documents that do not name one"), "fleet")
    _add_home_arg(p)
    _add_host_arg(p)
    p.add_argument(
        "--interval",
        type=duration,
        default=300.0,
        metavar="DURATION",
        help="reconcile (and fetch) every DURATION (30s, 5m, 1h or seconds), with 10%% jitter (default 5m)",
    )
    _add_selector_args(
        p,
        "converge and report on only this bot and its routines (repeatable); install-wide settings and rooms are left out",
        "converge and report on only the bots with these labels (repeatable, or key=value,key2=value2: all must match)",
    )
    p.add_argument("--self-heal", action="store_true", help="correct drift (default: report it)")
    p.add_argument("--prune", action="store_true", help="delete owned objects gone from the manifests (as apply --prune)")
    p.add_argument("--yes", action="store_true", help="allow a prune above the guard fraction")
    p.add_argument("--once", action="store_true", help="one reconcile, then exit with apply's exit codes (cron use)")
    p.add_argument(
        "--no-rooms",
        action="store_true",
        help="leave rooms out: do not ask the gateway, change no room (for a host without a gateway)",
    )
    p.add_argument("--log-format", choices=("text", "json", "journal"), default="text")
    p.add_argument(
        "--full-every",
        type=_non_negative,
        default=10,
        metavar="N",
        help="read every file of the home in full every N passes, the observation cache's safety net (default 10; 0: never)",
    )
    p.add_argument(
        "--health-port", type=int, metavar="PORT", help="serve /healthz and /metrics on PORT (127.0.0.1 unless --health-bind)"
    )
    p.add_argument(
        "--health-bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address for --health-port (default 127.0.0.1; any other needs a token)",
    )
    p.add_argument(
        "--health-token-env",
        metavar="NAME",
        help="require 'Authorization: Bearer <token>', the token read from environment variable NAME",
    )
    p.add_argument(
        "--health-token-file", metavar="FILE", help="require 'Authorization: Bearer <token>', the token read from FILE"
    )
    p.add_argument(
        "--lock-timeout", type=duration, default=10.0, metavar="DURATION", help="wait this long for an apply (default 10s)"
    )
    p.add_argument(
        "--notify-timeout",
        type=duration,
        default=3.0,
        metavar="DURATION",
        help="at exit, how long to keep delivering queued notifications (default 3s)",
    )


def setup_restore(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    _names(p.add_argument("backup", nargs="?", help="backup folder name or path (omit to list backups)"), "backup")
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")
    _add_force_arg(p)


def setup_history(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List the applies recorded for a fleet (apply, watch, rollback), or show one. Entries are kept in "
        "<home>/.hermes-fleet/history/<fleet>/ (the newest $HERMES_FLEET_HISTORY_KEEP, default 50)."
    )
    p.add_argument("action", nargs="?", choices=("list", "show"), default="list", help="list (default) or show N")
    _names(p.add_argument("number", nargs="?", type=int, metavar="N", help="the entry to show"), "entry")
    _add_home_arg(p)
    _names(p.add_argument("--fleet", metavar="NAME", help="the fleet (default: the one fleet with a history)"), "fleet")
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")


def setup_rollback(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Apply the manifests an earlier apply converged to (default: the newest earlier entry that applied "
        "other manifests cleanly), with apply's guards: the lock, --dry-run, and --yes before anything is deleted. "
        "Secrets are resolved from their references now."
    )
    _names(
        p.add_argument("--to", type=int, metavar="N", help="the history entry to go back to (see `hermes-fleet history`)"),
        "entry",
    )
    _add_home_arg(p)
    _names(p.add_argument("--fleet", metavar="NAME", help="the fleet (default: the one fleet with a history)"), "fleet")
    host = p.add_argument("--host", metavar="NAME", help="apply this machine's slice (default: the slice the entry applied)")
    _names(host, "host")
    _add_rehost_arg(p)
    _add_gateway_args(p)
    _add_hermes_version_arg(p)
    p.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    p.add_argument("--yes", action="store_true", help="allow the rollback to delete bots the entry did not have (backed up)")
    p.add_argument("--no-prune", action="store_true", help="keep bots and routines the entry did not have (as orphans)")
    _add_force_arg(p)
    p.add_argument("--no-rooms", action="store_true", help="leave rooms out: do not ask the gateway, change no room")
    p.add_argument(
        "--lock-timeout", type=duration, default=10.0, metavar="DURATION", help="wait this long for another apply (default 10s)"
    )
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")
    _add_view_args(p)


COMPLETION_HELP = """Print the script that turns on tab completion for hermes-fleet (verbs, options, files, and
the names of bots, fleets, hosts and backups). Turn it on for every new shell:

  bash:  echo 'eval "$(hermes-fleet completion bash)"' >> ~/.bashrc
  zsh:   echo 'eval "$(hermes-fleet completion zsh)"' >> ~/.zshrc
  fish:  hermes-fleet completion fish > ~/.config/fish/completions/hermes-fleet.fish

or for this shell only: eval "$(hermes-fleet completion bash)" (fish: hermes-fleet completion fish | source).
Bot names come from the manifests of -f (else of ./fleet/) and the profiles of the Hermes home."""


def setup_completion(p: argparse.ArgumentParser) -> None:
    p.description = COMPLETION_HELP
    p.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to print the script for")
    p.add_argument("--prog", default="hermes-fleet", help="the command name to complete (default hermes-fleet)")


def _lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return int(getattr(_import_quietly(module), name)(args))

    return run


def _import_quietly(module: str) -> Any:
    """Import a verb's module with the cyclic garbage collector paused.

    Importing `apply` builds about 30,000 long-lived objects (classes, functions, pydantic
    schemas) and no garbage to speak of; the collector ran about 70 times over them, 15 ms of a
    10-bot apply's 0.35 s (docs/performance.md#start-up). freeze() + unfreeze() then moves them to
    the oldest generation without a scan, where they stay collectable.
    """
    import gc
    import importlib

    if module in sys.modules or not gc.isenabled():
        return importlib.import_module(module)
    gc.disable()
    try:
        return importlib.import_module(module)
    finally:
        gc.freeze()
        gc.unfreeze()
        gc.enable()


_full_plan = _lazy("controller.verbs.plan", "cmd_plan")


def _plan(args: argparse.Namespace) -> int:
    """`plan`: the settled plan when nothing it was made from changed (verbs/fastplan.py), else in full."""
    from controller.verbs import fastplan

    code = fastplan.answer(args)
    return _full_plan(args) if code is None else code


VERBS: dict[str, tuple[str, list[str], Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {
    "validate": (
        "check manifests offline (schema + semantic rules)",
        [],
        setup_validate,
        _lazy("controller.verbs.validate", "cmd_validate"),
    ),
    "schema": (
        "print the JSON Schema of the manifest format",
        [],
        setup_schema,
        _lazy("controller.verbs.validate", "cmd_schema"),
    ),
    "plan": ("show what apply would change, including drift", ["diff"], setup_plan, _plan),
    "apply": ("converge the Hermes home onto the manifests", [], setup_apply, _lazy("controller.verbs.plan", "cmd_apply")),
    "status": ("managed objects, last apply, drift summary", [], setup_status, _lazy("controller.verbs.status", "cmd_status")),
    "init": (
        "scaffold a fleet repository: manifests, schema, pre-commit hook, CI workflow",
        [],
        setup_init,
        _lazy("controller.verbs.init", "cmd_init"),
    ),
    "demo": (
        "apply a built-in demo fleet to a scratch Hermes home and show the result",
        [],
        setup_demo,
        _lazy("controller.demo", "cmd_demo"),
    ),
    "export": (
        "write manifests for an existing Hermes home (adopt a hand-built fleet into git)",
        [],
        setup_export,
        _lazy("controller.verbs.export", "cmd_export"),
    ),
    "completion": (
        "print the shell script that turns on tab completion (bash, zsh, fish)",
        [],
        setup_completion,
        _lazy("controller.verbs.completion", "cmd_completion"),
    ),
    "watch": (
        "keep the home converged on manifests or a git repo (the reconciler)",
        [],
        setup_watch,
        _lazy("controller.verbs.watch", "cmd_watch"),
    ),
    "history": (
        "list the applies recorded for a fleet, or show one (history show N)",
        [],
        setup_history,
        _lazy("controller.verbs.history", "cmd_history"),
    ),
    "rollback": (
        "apply the manifests of an earlier apply again (default: the state before the latest)",
        [],
        setup_rollback,
        _lazy("controller.verbs.history", "cmd_rollback"),
    ),
    "suspend": (
        "pause the reconciler on this home: watch changes nothing, apply needs --force",
        [],
        setup_suspend,
        _lazy("controller.verbs.suspend", "cmd_suspend"),
    ),
    "resume": (
        "end a suspension: watch applies again",
        [],
        setup_resume,
        _lazy("controller.verbs.suspend", "cmd_resume"),
    ),
    "restore": (
        "bring back a bot that prune moved to a backup",
        [],
        setup_restore,
        _lazy("controller.verbs.restore", "cmd_restore"),
    ),
}


def _report_error(exc: ControllerError, args: argparse.Namespace | None) -> None:
    diagnostics = getattr(exc, "diagnostics", None)
    if diagnostics:
        from controller.diagnostics import capped, omitted_line

        shown, omitted = capped(diagnostics)
        for diag in shown:
            print(diag.render(), file=sys.stderr)
        if omitted:
            print(omitted_line(omitted), file=sys.stderr)
        errors = sum(1 for d in diagnostics if d.severity == "error")
        print(f"hermes-fleet: {errors} error(s) in the manifests; nothing was changed", file=sys.stderr)
        return
    print(f"hermes-fleet: error: {exc}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # a shell asks for completions (`hermes-fleet completion`)
        import argcomplete

        argcomplete.autocomplete(parser)  # prints them and exits
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except ArgumentError as exc:
        verb = _json_verb_in(argv)
        if verb is not None:
            _print_json_error(
                JSON_KINDS[verb], error_type="UsageError", exit_code=ExitCode.BAD_INPUT, message=exc.message, hint="see --help"
            )
        return int(ExitCode.BAD_INPUT)
    except SystemExit as exc:  # argparse: 0 for --help and --version
        return int(exc.code or 0)
    return run(args)


def _on_sigterm(signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough; a second must not interrupt the cleanup
    raise Terminated()


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # e.g. run inside another program's thread
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: argparse.Namespace) -> int:
    """Run a parsed verb with every write to stdout and stderr masked (controller/redact.py)."""
    with _masked(args):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run a parsed verb; a ControllerError becomes its message and exit code (no traceback).

    Under `-o json` a verb that fails before printing its report prints one JSON error document
    on stdout instead (docs/cli.md, "JSON on every path"), so stdout always holds one document.
    """
    try:
        with _sigterm_as_interrupt():
            return int(args.func(args))
    except ControllerError as exc:
        if args.debug:
            traceback.print_exc()
        _report_error(exc, args)
        if _json_pending(args):
            diagnostics = getattr(exc, "diagnostics", None) or []
            _print_json_error(
                _json_kind(args),
                error_type=type(exc).__name__,
                exit_code=exc.exit_code,
                message=exc.message,
                hint=exc.hint or "",
                diagnostics=diagnostics,
                args=args,
            )
        return int(exc.exit_code)
    except KeyboardInterrupt as exc:
        name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        code = 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
        print(
            f"hermes-fleet: interrupted ({name}); every file is either old or new, nothing half-written: "
            "run the command again to finish",
            file=sys.stderr,
        )
        if _json_pending(args):
            _print_json_error(
                _json_kind(args),
                error_type="Interrupted",
                exit_code=code,
                message=f"interrupted ({name})",
                hint="run the command again",
                args=args,
            )
        return code
    except BrokenPipeError:
        return int(ExitCode.OK)


UNMASKED_VERBS = ("schema", "completion")  # print this program's own text, never a value read from a file


def _masked(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """Every write of the verb to stdout and stderr masked (controller/redact.py), errors included."""
    if getattr(args, "verb_name", None) in UNMASKED_VERBS:
        return contextlib.nullcontext()
    return redact.masked_output()


def _json_kind(args: argparse.Namespace) -> str:
    verb = getattr(args, "verb_name", None) or "apply"  # `hermes apply` (the plugin) has no verb name
    if verb == "apply" and getattr(args, "dry_run", False):
        return "dry-run"
    return JSON_KINDS.get(verb, verb)


def _json_pending(args: argparse.Namespace) -> bool:
    verb = getattr(args, "verb_name", None) or "apply"
    return verb in JSON_KINDS and getattr(args, "output", None) == "json" and not getattr(args, "report_written", False)


def _json_verb_in(argv: list[str]) -> str | None:
    """The verb of a command line that argparse refused, if it asked for -o json."""
    verb = next((a for a in argv if a in JSON_KINDS), None)
    if verb is None:
        return None
    rest = argv[argv.index(verb) + 1 :]
    for i, token in enumerate(rest):
        if token in ("-o", "--output") and i + 1 < len(rest) and rest[i + 1] == "json":
            return verb
        if token in ("-ojson", "--output=json"):
            return verb
    return None


def _print_json_error(
    kind: str,
    *,
    error_type: str,
    exit_code: int,
    message: str,
    hint: str,
    diagnostics: Sequence[Any] = (),
    args: argparse.Namespace | None = None,
) -> None:
    payload: dict[str, Any] = {"schemaVersion": 1, "kind": kind}
    if kind == "validate":
        payload["valid"] = False
    payload["error"] = {"type": error_type, "exit_code": int(exit_code), "message": message, "hint": hint}
    from controller.diagnostics import capped

    shown, omitted = capped(diagnostics)  # like every output: the first MAX_SHOWN, and how many more
    payload["diagnostics"] = [d.to_json() for d in shown]
    if omitted:
        payload["omitted"] = omitted
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    sys.stdout.flush()
    if args is not None:
        args.report_written = True
