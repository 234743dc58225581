"""What the verbs share: manifests from -f, options and gateway settings from the arguments."""

from __future__ import annotations

import argparse

from controller.adapters.gateway import GatewayOptions
from controller.adapters.home import resolve_root
from controller.core.types import Options
from controller.errors import ManifestError
from controller.manifests import desired, reading
from controller.manifests.validating import ValidationResult


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
    result = load(args)
    if result.errors or result.state is None:
        raise ManifestError(result.diagnostics)
    result.state = desired.for_host(result.state, reading.selected_host(getattr(args, "host", None), result.state))
    return result


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
    values = {name: bool(getattr(args, name, False)) for name in ("prune", "adopt", "yes")}
    values["rooms"] = not getattr(args, "no_rooms", False)
    values.update(overrides)
    return Options(**values)
