"""The whole error hierarchy of hermes-fleet, and the exit-code contract.

    ControllerError            exit 1  base; carries .hint, the next thing to do
    ├── ManifestError          exit 2  bad input: a manifest or an argument; carries diagnostics
    ├── UsageError             exit 2  bad command-line arguments
    ├── ScheduleError          exit 2  a schedule Hermes would refuse (raised by hermes.schedules)
    ├── ConflictError          exit 3  an object this fleet does not own, or a concurrent writer
    │   ├── LockHeld           exit 3  another hermes-fleet run holds the home's lock
    │   ├── ChangedUnderUs     exit 3  a file changed between our read and our write (retried first)
    │   └── ContainmentError   exit 3  a path we would write leads out of what the fleet owns (a symlink)
    ├── HermesStateError       exit 1  a file in the home (Hermes' or our own state) could not be read
    │                                  or written: read-only, permission denied, disk full, a folder in
    │                                  the way, too large, not a regular file; names the path and the fix
    ├── RefusedValue           exit 1  a value Hermes cannot carry (a line break in a .env value, a
    │                                  one-shot time in the past, a workdir that is not a folder)
    ├── SecretUnavailable      exit 1  a secret reference cannot be read on this machine
    ├── SourceError            exit 1  the reconciler's source (files, git) could not be read
    ├── RoomApplyError         exit 1  a room could not be converged (its cause attached)
    ├── RoomLinkError          exit 1  another machine's gateway could not issue or revoke a seat's grant
    └── GatewayError           exit 1  talking to a Hermes gateway; mapped once in adapters.gateway.classify,
        │                              `.outcome` (GatewayOutcome) says what is known about its effect:
        ├── GatewayUnavailable         transient: nothing listening, reset, timeout before sending
        ├── GatewayRefused             permanent: a typed refusal
        │   ├── GatewayAuthError       the credential was refused
        │   └── GatewayIncompatible    the gateway lacks a method or speaks another protocol
        └── GatewayOutcomeUnknown      a write whose reply was lost: settled by reading, never resent
    (ConflictError also has RoomChanged: a room kept changing on the gateway during the apply.)

Outside the tree: `TooLarge` and `NotRegular` (OSError: bounded refused a read; adapters map them
like any OSError), `ArgumentError` (argparse refused the command line; cli reports it, exit 2) and
`Terminated` (SIGTERM).

Each adapter maps the failures of what it wraps (OSError, sqlite3 errors, parse errors, the
gateway's codes) to these classes once, where it calls the outside (`adapters.fsio.state_error`
for an OSError); nothing above the adapters catches OSError or branches on message text.
`cli.run()` catches only `ControllerError`; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
from enum import IntEnum, StrEnum
from typing import Any


class ExitCode(IntEnum):
    """One exit-code contract for every verb (docs/cli.md)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    CONFLICT = 3
    CHANGES = 4  # only with --detailed-exitcode
    DENIED = 5  # only with plan --deny-widening: the plan widens a bot's capabilities


class ControllerError(Exception):
    """Something the user can act on went wrong."""

    exit_code = ExitCode.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}; {self.hint}"


class ManifestError(ControllerError):
    """The manifests are invalid; `.diagnostics` lists every problem found."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, diagnostics: list[Any], *, message: str | None = None) -> None:  # list[Diagnostic]
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__(message or f"{len(errors)} error(s) in the manifests")


class UsageError(ControllerError):
    """The command line itself is wrong."""

    exit_code = ExitCode.BAD_INPUT


class UnknownBot(UsageError):
    """A `--bot NAME` selector names no bot of the fleet (docs/cli.md#selectors): a typo would select
    nothing and read as "no changes". `watch` stalls on it until the source or the command changes."""


class ScheduleError(ControllerError):
    """A routine schedule Hermes would refuse; the message quotes Hermes' own wording."""

    exit_code = ExitCode.BAD_INPUT


class ConflictError(ControllerError):
    """An object is in the way that this fleet does not own, or another writer holds the lock."""

    exit_code = ExitCode.CONFLICT


class LockHeld(ConflictError):
    """Another hermes-fleet run holds the apply lock of this home."""


class ChangedUnderUs(ConflictError):
    """A file changed between our read and our write; the caller re-reads and tries again."""

    def __init__(self, path: object) -> None:
        super().__init__(
            f"{path} changed while hermes-fleet was updating it", hint="another Hermes writer got there first; run apply again"
        )


class ContainmentError(ConflictError):
    """A path hermes-fleet would read or write is a symlink (or leads) out of the object it belongs to:
    a profile folder that is a link, a bot's file that points into another profile or out of the
    home, a link inside `.hermes-fleet/`. Refused before anything is written (docs/reliability.md)."""

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class HermesStateError(ControllerError):
    """A live Hermes file is unreadable or unsafe to write (it is left untouched)."""

    exit_code = ExitCode.FAILED

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path


class RefusedValue(ControllerError):
    """A value Hermes cannot carry or would refuse; nothing was written for it."""


class SecretUnavailable(ControllerError):
    """A referenced secret cannot be read here; the message says which and how to provide it."""


class SourceError(ControllerError):
    """The reconciler's source could not be read (an unreachable remote, a bad ref, a rewritten history)."""

    def __init__(self, message: str, *, hint: str | None = None, transient: bool = True) -> None:
        super().__init__(message, hint=hint)
        self.transient = transient


class RoomApplyError(ControllerError):
    """A room could not be converged on the gateway."""


class RoomChanged(ConflictError):
    """The room kept changing on the gateway (or changed into something this run cannot go on with)."""


# --- talking to gateways: mapped once, in adapters.gateway.classify and adapters.roomlink ------------


class GatewayOutcome(StrEnum):
    """What is known about the effect of a gateway call that failed."""

    TRANSIENT = "transient"  # nothing happened; try again later
    PERMANENT = "permanent"  # the gateway refused; the same request fails the same way
    UNKNOWN = "unknown"  # a write was sent and its reply was lost; resolved by reading state


class GatewayError(ControllerError):
    """A gateway call failed. `outcome` tells what is known about its effect."""

    outcome = GatewayOutcome.TRANSIENT

    def __init__(self, message: str, *, hint: str | None = None, reason: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class GatewayUnavailable(GatewayError):
    """Transient: no gateway answered (absent, starting, refused, timed out, 5xx); nothing happened."""

    outcome = GatewayOutcome.TRANSIENT


class GatewayRefused(GatewayError):
    """Permanent: the gateway answered with an error; the request had no effect."""

    outcome = GatewayOutcome.PERMANENT

    def __init__(
        self, message: str, *, code: int = 0, reason: str | None = None, method: str = "", hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint, reason=reason)
        self.code = code
        self.method = method


class GatewayAuthError(GatewayRefused):
    """Permanent: the credential was refused (HTTP 401/403 at the WebSocket handshake)."""


class GatewayIncompatible(GatewayRefused):
    """Permanent: this gateway cannot do what is asked (too old, wrong protocol, method missing)."""


class GatewayOutcomeUnknown(GatewayError):
    """A write was sent and no reply came back: it may or may not have happened. Never retried blindly."""

    outcome = GatewayOutcome.UNKNOWN


class RoomLinkError(ControllerError):
    """Another machine's gateway could not issue (or revoke) a seat's grant; the message says which and why.

    `transient`: the machine could not be reached (try again later), rather than a refusal.
    """

    def __init__(self, message: str, *, hint: str | None = None, transient: bool = False) -> None:
        super().__init__(message, hint=hint)
        self.transient = transient


# --- below the tree: a refused read, an argparse refusal -------------------------------------------


class TooLarge(OSError):
    """The file is larger than the caller's limit; nothing was read."""

    def __init__(self, path: str | os.PathLike[str], size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{size:,} bytes, over the {limit:,}-byte limit", str(path))
        self.size = size
        self.limit = limit


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, a device, a socket, a folder); nothing was read."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        code = errno.EISDIR if kind == "a folder" else errno.EINVAL
        super().__init__(code, f"{kind}, not a regular file", str(path))
        self.kind = kind


class ArgumentError(Exception):
    """argparse refused the command line (exit 2); `main` reports it, as JSON too under -o json."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so both clean up the same way: the
    write in progress removes its temp file, a half-built profile its staging folder, the locks go.
    Not a ControllerError: `cli.run` reports it as an interruption (exit 143)."""
