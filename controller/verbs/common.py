"""What the verbs share: manifests from -f, options and gateway settings from the arguments.

Names given on the command line follow the rules names in manifests follow (`check_fleet`,
`check_host`): `--fleet $'acme\\n'` or `--fleet ../x` is bad input (exit 2), never a file name.
"""

from __future__ import annotations

import argparse

from controller.adapters.gateway import GatewayOptions
from controller.adapters.home import resolve_root
from controller.core.selection import Selection
from controller.core.types import Options
from controller.errors import ManifestError, UsageError
from controller.hermes import naming
from controller.manifests import desired, reading
from controller.manifests.validating import ValidationResult


def check_fleet(value: str | None, flag: str = "--fleet") -> None:
    if value is not None and naming.profile_name_problem(value):
        raise UsageError(f"{flag} {value!r} is not a valid fleet name", hint="use ^[a-z0-9][a-z0-9_-]{0,63}$, as in manifests")


def check_host(value: str | None) -> None:
    if value is not None and reading.HOST_NAME.match(value) is None:
        raise UsageError(
            f"--host {value!r} is not a valid host name", hint="use ^[A-Za-z0-9][A-Za-z0-9._-]{0,253}$, as in manifests"
        )


def load(args: argparse.Namespace) -> ValidationResult:
    """Discover, parse and validate the manifests named by -f (the Hermes home is never read as one).

    Folders are read with their sub-folders (docs/cli.md); `-R` is accepted and changes nothing.
    """
    home = resolve_root(args.home) if hasattr(args, "home") else None
    return reading.load_paths(args.files, recursive=True, fleet=getattr(args, "fleet", None), skip=home)


def load_fleets(args: argparse.Namespace) -> list[ValidationResult]:
    """Like `load`, but each fleet in the paths is validated on its own (`validate` only)."""
    return reading.load_fleets(args.files, recursive=True, fleet=getattr(args, "fleet", None))


def wrote_report(args: argparse.Namespace) -> None:
    """Mark that the verb printed its report, so an error raised later adds no second JSON document."""
    args.report_written = True


def load_valid(args: argparse.Namespace) -> ValidationResult:
    """Like `load`, but invalid manifests raise ManifestError (exit 2) before anything else runs.

    The desired state is narrowed to this machine's slice when the fleet names hosts (--host).
    """
    host = getattr(args, "host", None)
    check_host(host)
    result = load(args)
    if result.errors or result.state is None:
        raise ManifestError(result.diagnostics)
    check_rehost(args, result.state)
    result.state = desired.for_host(result.state, reading.selected_host(host, result.state))
    return result


def check_rehost(args: argparse.Namespace, state: desired.DesiredState) -> None:
    """--rehost moves a home to a slice named on purpose: never to this machine's hostname by default."""
    if getattr(args, "rehost", False) and not getattr(args, "host", None) and desired.uses_hosts(state):
        raise UsageError("--rehost needs --host NAME: the slice to converge this home as", hint="add --host NAME")


def gateway_options(args: argparse.Namespace | None) -> GatewayOptions:
    """One value per command run: a single-use --gateway-token-env ticket opens one connection for it."""
    if args is None:
        return GatewayOptions()
    cached = getattr(args, "gateway_run_options", None)
    if isinstance(cached, GatewayOptions):
        return cached
    timeout = getattr(args, "gateway_timeout", None) or 10.0
    options = GatewayOptions(getattr(args, "gateway", None), getattr(args, "gateway_token_env", None), timeout)
    args.gateway_run_options = options
    return options


def options(args: argparse.Namespace, **overrides: bool) -> Options:
    values = {name: bool(getattr(args, name, False)) for name in ("prune", "adopt", "yes", "rehost")}
    values["rooms"] = not getattr(args, "no_rooms", False)
    values.update(overrides)
    return Options(**values)


def selection(args: argparse.Namespace) -> Selection:
    """`--bot NAME` (repeatable) and `-l key=value[,key=value]` (repeatable) as a Selection."""
    names = list(getattr(args, "bots", None) or [])
    for name in names:
        if problem := naming.profile_name_problem(name):
            raise UsageError(f"--bot {name!r} is not a valid bot name: {problem}")
    labels: list[tuple[str, str]] = []
    for given in getattr(args, "labels", None) or []:
        for pair in given.split(","):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"-l {given!r}: write key=value (several as key=value,key2=value2)")
            labels.append((key.strip(), value.strip()))
    return Selection(frozenset(names), tuple(dict.fromkeys(labels)))
