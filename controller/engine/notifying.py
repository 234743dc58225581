"""Which events a run is worth telling someone about, and to which webhooks (docs/watch.md, Notifications).

The reconciler calls `run_events` after every pass and `health_events` after every health check;
both compare with the previous one, so a webhook hears about a *change* (drift appearing, a
routine starting to fail, the reconciler stalling or recovering), not the same state every
interval. `apply --notify` uses `apply_events` for its one run. Webhook URLs are resolved here,
like any secret reference, and handed only to adapters.webhooks.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from controller.adapters import webhooks
from controller.codes import EventKind, HealthCode
from controller.codes import WatchResult as R
from controller.core import health
from controller.errors import ControllerError
from controller.manifests import references
from controller.manifests.desired import DesiredState

BAD = (R.DRIFT, R.PARTIAL, R.CONFLICT, R.STALLED, R.SOURCE_ERROR, R.INTERRUPTED)
FAILED = (R.PARTIAL, R.CONFLICT)


def targets(state: DesiredState) -> tuple[list[webhooks.Target], list[str]]:
    """The fleet's webhooks with their URLs resolved, and why any could not be (no URL in the text)."""
    found: list[webhooks.Target] = []
    problems: list[str] = []
    with references.command_cache():
        for hook in state.notifications:
            try:
                url = references.resolve(hook.url)
            except ControllerError as exc:
                problems.append(f"webhook {hook.name}: {exc}")
                continue
            if not url.startswith(("http://", "https://")):
                problems.append(f"webhook {hook.name}: its URL is not http:// or https:// (value not shown)")
                continue
            found.append(webhooks.Target(hook.name, url, hook.format, hook.events, hook.timeout))
    return found, problems


def event(
    kind: EventKind | HealthCode, severity: str, *, fleet: str, summary: str, home: str, host: str, **details: Any
) -> webhooks.Event:
    return webhooks.Event(
        kind=kind,
        severity=severity,
        fleet=fleet,
        summary=summary,
        details=details,
        at=datetime.now(UTC).isoformat(timespec="seconds"),
        home=home,
        host=host,
        id=uuid.uuid4().hex,
    )


def selected(found: webhooks.Event, selection: str) -> webhooks.Event:
    """An event of a reconciler with a selection (`--bot b -l team=ops`, as given) says so: in its
    summary (every format shows that) and as `details.selection`."""
    if not selection:
        return found
    details = {**found.details, "selection": selection}
    return replace(found, summary=f"{found.summary} (selection {selection})", details=details)


def host_name(host: str | None) -> str:
    """What the events (and the metrics) call this machine: `--host`, else its hostname."""
    return host or socket.gethostname()


def run_events(previous: Any, run: Any, fleet: str, home: str, host: str | None = None) -> list[webhooks.Event]:
    """Events of one reconcile pass (a watching.Run), given the one before it (or None)."""
    where = host_name(host)
    prev_result = previous.result if previous is not None else None
    out: list[webhooks.Event] = []
    revision = {"revision": run.revision, "trigger": run.trigger}
    if run.result == R.DRIFT and (prev_result != R.DRIFT or sorted(previous.drift) != sorted(run.drift)):
        out.append(
            event(
                EventKind.DRIFT,
                "warning",
                fleet=fleet,
                summary=f"{len(run.drift)} object(s) differ from the manifests: {', '.join(run.drift[:10])}",
                home=home,
                host=where,
                objects=list(run.drift),
                **revision,
            )
        )
    elif run.result in FAILED and (prev_result, getattr(previous, "message", None)) != (run.result, run.message):
        out.append(
            event(
                EventKind.APPLY_FAILED,
                "error",
                fleet=fleet,
                summary=f"{run.result}: {run.message}",
                home=home,
                host=where,
                result=run.result,
                failed=run.failed,
                **revision,
            )
        )
    elif run.result == R.STALLED and (prev_result, getattr(previous, "message", None)) != (run.result, run.message):
        if run.message != "still waiting for the source to change":
            out.append(event(EventKind.STALLED, "error", fleet=fleet, summary=run.message, home=home, host=where, **revision))
    elif run.result == R.SUSPENDED and prev_result != R.SUSPENDED:
        out.append(event(EventKind.SUSPENDED, "warning", fleet=fleet, summary=run.message, home=home, host=where, **revision))
    elif run.result in (R.APPLIED, R.IN_SYNC) and prev_result in BAD:
        out.append(
            event(
                EventKind.RECOVERED,
                "info",
                fleet=fleet,
                summary=f"{run.result} again (was {prev_result})",
                home=home,
                host=where,
                previous=prev_result,
                **revision,
            )
        )
    if prev_result == R.SUSPENDED and run.result != R.SUSPENDED:
        summary = f"resumed: {run.result}"
        out.append(
            event(EventKind.RESUMED, "info", fleet=fleet, summary=summary, home=home, host=where, result=run.result, **revision)
        )
    if getattr(run, "pruned", None):
        out.append(
            event(
                EventKind.PRUNED,
                "warning",
                fleet=fleet,
                summary=f"deleted {len(run.pruned)} object(s) gone from the manifests: {', '.join(run.pruned[:10])}",
                home=home,
                host=where,
                objects=list(run.pruned),
                **revision,
            )
        )
    return out


def health_events(
    before: Sequence[health.Finding], after: Sequence[health.Finding], fleet: str, home: str, host: str | None = None
) -> list[webhooks.Event]:
    """A new finding is an event named by its code; a finding that cleared is `health-recovered`."""
    where = host_name(host)
    appeared, cleared = health.transitions(before, after)
    out = [
        event(f.code, f.severity, fleet=fleet, summary=f"{f.subject}: {f.message}", home=home, host=where, object=f.subject)
        for f in appeared
    ]
    out += [
        event(
            EventKind.HEALTH_RECOVERED,
            "info",
            fleet=fleet,
            summary=f"{f.subject}: {f.code} cleared",
            home=home,
            host=where,
            object=f.subject,
            code=f.code,
        )
        for f in cleared
    ]
    return out


def apply_events(
    fleet: str, home: str, *, failed: Sequence[str], pruned: Sequence[str], conflict: str = "", host: str | None = None
) -> list[webhooks.Event]:
    """`apply --notify`: a failure (or a refused conflict) and what a prune deleted."""
    where = host_name(host)
    out = []
    if conflict:
        out.append(
            event(EventKind.APPLY_FAILED, "error", fleet=fleet, summary=conflict, home=home, host=where, result=R.CONFLICT)
        )
    elif failed:
        out.append(
            event(
                EventKind.APPLY_FAILED,
                "error",
                fleet=fleet,
                summary=f"{len(failed)} object(s) failed: {'; '.join(failed[:5])}",
                home=home,
                host=where,
                result=R.PARTIAL,
            )
        )
    if pruned:
        out.append(
            event(
                EventKind.PRUNED,
                "warning",
                fleet=fleet,
                summary=f"deleted {len(pruned)} object(s): {', '.join(pruned[:10])}",
                home=home,
                host=where,
                objects=list(pruned),
            )
        )
    return out
