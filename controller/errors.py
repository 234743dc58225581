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
    └── adapters.gateway.GatewayError  exit 1  talking to a Hermes gateway; mapped once in gateway.classify:
        ├── GatewayUnavailable         transient: nothing listening, reset, timeout before sending
        ├── GatewayRefused             permanent: a typed refusal
        │   ├── GatewayAuthError       the credential was refused
        │   └── GatewayIncompatible    the gateway lacks a method or speaks another protocol
        └── GatewayOutcomeUnknown      a write whose reply was lost: settled by reading, never resent

Each adapter maps the failures of what it wraps (OSError, sqlite3 errors, parse errors, the
gateway's codes) to these classes once, where it calls the outside (`adapters.fsio.state_error`
for an OSError); nothing above the adapters catches OSError or branches on message text.
`cli.run()` catches only `ControllerError`; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from enum import IntEnum
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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where SIGINT raises KeyboardInterrupt, so both clean up the same way: the
    write in progress removes its temp file, a half-built profile its staging folder, the locks go.
    Not a ControllerError: `cli.run` reports it as an interruption (exit 143)."""
