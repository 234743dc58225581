"""The command line: argparse -> verb function -> rendered result -> exit code.

Every verb returns an `ExitCode` (docs/cli.md); `main()` catches `ControllerError` and prints
`what failed; what to do` without a traceback (unless --debug). Heavy modules (pydantic,
ruamel.yaml) are imported inside the verbs so `hermes-fleet --help` starts fast.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from controller import __version__
from controller.errors import ControllerError, ExitCode

OUTPUTS_VALIDATE = ("text", "json", "github", "junit")
OUTPUTS_PLAN = ("text", "json")

EPILOG = """exit codes: 0 success / no changes, 1 operation failed, 2 bad input (invalid manifest or
arguments), 3 conflict (object not owned by this fleet, or another apply holds the lock),
4 changes pending (plan --detailed-exitcode). Docs: docs/cli.md"""


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
    p.add_argument("-R", "--recursive", action="store_true", help="search folders recursively")
    p.add_argument("--fleet", metavar="NAME", help="fleet name for documents that do not name one")


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
    p.add_argument("--gateway-timeout", type=float, default=10.0, metavar="SECONDS", help="per-call gateway timeout (default 10)")


def _add_home_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", metavar="DIR", help="the Hermes root (default: Hermes' own rules: $HERMES_HOME, else ~/.hermes)")


def _add_hermes_version_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hermes-version",
        metavar="X.Y.Z",
        help="the Hermes version this home is used with (default: detected; see docs/hermes/versions.md)",
    )


def _add_host_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        metavar="NAME",
        help="apply only this machine's slice of a multi-host fleet (default: this machine's hostname, "
        "when any object names a host)",
    )


def add_global_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="colour in text output")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        p.set_defaults(func=wrap(func))


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
    _add_gateway_args(p)
    _add_hermes_version_arg(p)
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")


def setup_plan(p: argparse.ArgumentParser) -> None:
    _add_converge_args(p)
    p.add_argument("--detailed-exitcode", action="store_true", help="exit 4 when changes are pending")
    p.add_argument("--prune", action="store_true", help="include deletions of owned objects gone from the manifests")
    p.add_argument("--adopt", action="store_true", help="plan to take over same-named objects this fleet does not own")


def setup_apply(p: argparse.ArgumentParser) -> None:
    _add_converge_args(p)
    p.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    p.add_argument("--prune", action="store_true", help="delete owned objects gone from the manifests (backed up)")
    p.add_argument("--yes", action="store_true", help="allow a prune above the guard fraction")
    p.add_argument("--adopt", action="store_true", help="take over same-named objects this fleet does not own")
    p.add_argument(
        "--lock-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for another apply to finish (default 10)",
    )


def setup_status(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    p.add_argument("--fleet", metavar="NAME", help="only this fleet (default: every fleet in the home)")
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        dest="files",
        metavar="PATH",
        help="also compare against these manifests for drift",
    )
    p.add_argument("-R", "--recursive", action="store_true")
    p.add_argument("-o", "--output", choices=OUTPUTS_PLAN, default="text")
    _add_gateway_args(p)


def setup_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", metavar="DIR", help="where to build the demo home (default: a new temporary folder)")
    p.add_argument("--force", action="store_true", help="allow a non-empty --home")


def setup_export(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    p.add_argument("--fleet", default="exported", metavar="NAME", help="fleet name of the manifests (default: exported)")
    p.add_argument("--bot", action="append", dest="bots", metavar="NAME", help="only this bot (repeatable)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="FILE", help="one Fleet file (default: stdout)")
    out.add_argument("--split", metavar="DIR", help="a folder per kind, SOUL.md as soul_file, avatars as files")
    _add_gateway_args(p)
    p.add_argument("--no-rooms", action="store_true", help="do not ask the gateway for rooms")


def setup_watch(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-f", "--filename", action="extend", nargs="+", dest="files", metavar="PATH", help="manifest files or folders to watch"
    )
    p.add_argument("-R", "--recursive", action="store_true", help="search folders recursively")
    p.add_argument("--git", metavar="URL", help="watch a git repository instead of local files")
    p.add_argument("--ref", default="main", help="branch, tag or commit of --git (default main)")
    p.add_argument("--path", default=".", help="folder inside the repository holding the manifests")
    p.add_argument("--ssh-key", metavar="FILE", help="private key for an ssh:// remote (else your git credentials)")
    p.add_argument(
        "--allow-history-rewrite",
        action="store_true",
        help="accept a force-pushed ref (default: report it and keep the last good revision)",
    )
    p.add_argument("--fleet", metavar="NAME", help="fleet name for documents that do not name one")
    _add_home_arg(p)
    _add_host_arg(p)
    p.add_argument(
        "--interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="reconcile (and fetch) every SECONDS, with 10%% jitter (default 300)",
    )
    p.add_argument("--self-heal", action="store_true", help="correct drift (default: report it)")
    p.add_argument("--prune", action="store_true", help="delete owned objects gone from the manifests (as apply --prune)")
    p.add_argument("--yes", action="store_true", help="allow a prune above the guard fraction")
    p.add_argument("--once", action="store_true", help="one reconcile, then exit with apply's exit codes (cron use)")
    p.add_argument("--log-format", choices=("text", "json"), default="text")
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
    p.add_argument("--lock-timeout", type=float, default=10.0, metavar="SECONDS")


def setup_restore(p: argparse.ArgumentParser) -> None:
    _add_home_arg(p)
    p.add_argument("backup", nargs="?", help="backup folder name or path (omit to list backups)")


def _lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        import importlib

        return int(getattr(importlib.import_module(module), name)(args))

    return run


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
    "plan": ("show what apply would change, including drift", ["diff"], setup_plan, _lazy("controller.verbs.plan", "cmd_plan")),
    "apply": ("converge the Hermes home onto the manifests", [], setup_apply, _lazy("controller.verbs.plan", "cmd_apply")),
    "status": ("managed objects, last apply, drift summary", [], setup_status, _lazy("controller.verbs.status", "cmd_status")),
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
    "watch": (
        "keep the home converged on manifests or a git repo (the reconciler)",
        [],
        setup_watch,
        _lazy("controller.verbs.watch", "cmd_watch"),
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
        for diag in diagnostics:
            print(diag.render(), file=sys.stderr)
        errors = sum(1 for d in diagnostics if d.severity == "error")
        print(f"hermes-fleet: {errors} error(s) in the manifests; nothing was changed", file=sys.stderr)
        return
    print(f"hermes-fleet: error: {exc}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 2 for bad arguments, 0 for --help
        return int(exc.code or 0)
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run a parsed verb; a ControllerError becomes its message and exit code (no traceback)."""
    try:
        return int(args.func(args))
    except ControllerError as exc:
        if args.debug:
            traceback.print_exc()
        _report_error(exc, args)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("hermes-fleet: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return int(ExitCode.OK)
