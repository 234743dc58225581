"""The whole error hierarchy of hermes-fleet, and the exit-code contract.

    ControllerError            exit 1  base; carries .hint, the next thing to do
    ├── ManifestError          exit 2  bad input: a manifest or an argument; carries diagnostics
    ├── UsageError             exit 2  bad command-line arguments
    ├── ConflictError          exit 3  an object this fleet does not own, or a concurrent writer
    ├── HermesStateError       exit 1  a live Hermes file could not be read or written safely
    ├── sources.SourceError    exit 1  the reconciler's source (files, git) could not be read
    ├── rooms.RoomApplyError   exit 1  a room could not be converged (its cause attached)
    └── gateway.GatewayError   exit 1  talking to a Hermes gateway; mapped once in gateway.classify:
        ├── GatewayUnavailable         transient: nothing listening, reset, timeout before sending
        ├── GatewayRefused             permanent: a typed refusal (Auth, Incompatible below it)
        └── GatewayOutcomeUnknown      a write whose reply was lost: settled by reading, never resent

The subclasses outside this module live beside the code that raises them. `cli.main()` catches
only `ControllerError`; anything else is a bug and keeps its traceback under `--debug`.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """One exit-code contract for every verb (docs/cli.md)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    CONFLICT = 3
    CHANGES = 4  # only with --detailed-exitcode


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

    def __init__(self, diagnostics: list, *, message: str | None = None) -> None:  # list[Diagnostic]
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__(message or f"{len(errors)} error(s) in the manifests")


class UsageError(ControllerError):
    """The command line itself is wrong."""

    exit_code = ExitCode.BAD_INPUT


class ConflictError(ControllerError):
    """An object is in the way that this fleet does not own, or another writer holds the lock."""

    exit_code = ExitCode.CONFLICT


class HermesStateError(ControllerError):
    """A live Hermes file is unreadable or unsafe to write (it is left untouched)."""

    exit_code = ExitCode.FAILED

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path
