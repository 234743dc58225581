"""The Hermes plugin: `hermes apply -f bots.yaml` and `hermes fleet <verb>` inside Hermes.

Hermes (0.19.0 and main) loads pip plugins from the `hermes_agent.plugins` entry-point group
and calls `register(ctx)` in every process that discovers plugins, gateways included, so
`register` only records the commands: no imports of heavy modules, no I/O. Hermes ignores a
handler's return value, so each handler calls `sys.exit` with our exit code. Under
`hermes -p X apply`, HERMES_HOME points at profile X; `--home` still defaults to Hermes' root
(docs/hermes/files.md#plugins).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

PLUGIN_NAME = "fleet"


def register(ctx: Any) -> None:
    ctx.register_cli_command(
        "apply",
        help="hermes-fleet: converge this Hermes home onto fleet manifests",
        setup_fn=_setup_apply,
        handler_fn=None,
        description="Apply hermes-fleet manifests (same as `hermes-fleet apply`). Exit codes: 0 ok, 1 failed, "
        "2 bad input, 3 conflict.",
    )
    ctx.register_cli_command(
        "fleet",
        help="hermes-fleet: validate, plan, apply, status, schema, restore, history, rollback, suspend, resume",
        setup_fn=_setup_fleet,
        handler_fn=None,
        description="Every hermes-fleet verb, e.g. `hermes fleet plan -f bots.yaml`.",
    )


def _exiting(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], None]:
    def handler(args: argparse.Namespace) -> None:
        from controller import cli

        args.func = func
        sys.exit(cli.run(args))

    return handler


def _setup_apply(parser: argparse.ArgumentParser) -> None:
    from controller import cli

    cli.add_global_args(parser)
    cli.setup_apply(parser)
    parser.set_defaults(func=_exiting(cli.VERBS["apply"][3]))


def _setup_fleet(parser: argparse.ArgumentParser) -> None:
    from controller import cli

    cli.add_global_args(parser)
    sub = parser.add_subparsers(dest="fleet_verb", metavar="VERB")
    sub.required = True
    cli.add_verbs(sub, wrap=_exiting)
