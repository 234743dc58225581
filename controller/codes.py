"""The stable words hermes-fleet writes for machines: watch results, health codes, webhook events.

Each is a StrEnum, so a value compares and serialises as the word itself (the status file, the log,
metrics labels and webhook events keep their text) while a misspelt one is a type error. Codes that
belong to one value type live beside it instead: `core.types.Reason` (why a plan changes an
object), `core.types.RunResult` (an apply in the history), `diagnostics.DiagnosticCode`,
`errors.GatewayOutcome` (what a failed gateway call did).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

# What began a watch pass: the loop's first pass, its interval, a manifest change, a retry after a
# transient failure, or `watch --once`.
Trigger = Literal["start", "interval", "change", "retry", "once"]
# How bad a runtime health finding is (core.health; a webhook event's severity).
FindingSeverity = Literal["error", "warning"]


class WatchResult(StrEnum):
    """How one reconciler pass ended (docs/watch.md, "Results")."""

    APPLIED = "applied"  # changes were applied
    IN_SYNC = "in-sync"  # nothing to do
    DRIFT = "drift"  # the home differs and the reconciler only reports (no --self-heal)
    PARTIAL = "partial"  # some objects failed, or could not be checked; retried with backoff
    STALLED = "stalled"  # invalid manifests: waits for the source to change
    CONFLICT = "conflict"  # an object is owned by another fleet: waits for the source to change
    SOURCE_ERROR = "source-error"  # the source could not be read (git fetch, a file); retried
    BUSY = "busy"  # another apply held the lock; retried
    INTERRUPTED = "interrupted"  # stopped between two objects on request; the next pass finishes
    SUSPENDED = "suspended"  # the home is suspended (hermes-fleet suspend): planned, nothing applied

    @property
    def settled(self) -> bool:
        """The home is what the manifests say, or the difference is known and reported."""
        return self in (WatchResult.APPLIED, WatchResult.IN_SYNC, WatchResult.DRIFT)

    @property
    def transient(self) -> bool:
        """Retried soon, with backoff, without waiting for the source to change."""
        return self in (WatchResult.PARTIAL, WatchResult.SOURCE_ERROR, WatchResult.BUSY)


class HealthCode(StrEnum):
    """A runtime health finding (core.health; docs/watch.md, "Runtime health")."""

    ROUTINE_FAILED = "routine-failed"
    ROUTINE_DELIVERY_FAILED = "routine-delivery-failed"
    GATEWAY_DOWN = "gateway-down"
    TICKER_STALLED = "ticker-stalled"
    TICKER_FAILING = "ticker-failing"
    CREDENTIALS_MISSING = "credentials-missing"
    MCP_UNAVAILABLE = "mcp-unavailable"


class EventKind(StrEnum):
    """A webhook event about a reconcile pass or an apply (engine.notifying; docs/watch.md,
    "Notifications"). A health finding that appears is an event named by its HealthCode."""

    DRIFT = "drift"
    APPLY_FAILED = "apply-failed"
    STALLED = "stalled"
    RECOVERED = "recovered"
    PRUNED = "pruned"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    HEALTH_RECOVERED = "health-recovered"


# Every event a webhook may subscribe to (`notifications[].events`), in the documented order.
NOTIFICATION_EVENTS: tuple[EventKind | HealthCode, ...] = (
    EventKind.DRIFT,
    EventKind.APPLY_FAILED,
    EventKind.STALLED,
    EventKind.RECOVERED,
    EventKind.PRUNED,
    EventKind.SUSPENDED,
    EventKind.RESUMED,
    *HealthCode,
    EventKind.HEALTH_RECOVERED,
)
