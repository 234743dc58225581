"""The reconciler's policy, without a clock or dice of its own (docs/watch.md).

Pure functions of (state, event, now, rng): what a pass reports when it only plans, when it
applies, what it leaves stalled, how long the loop waits next (backoff after a transient failure,
jitter otherwise) and whether /healthz is healthy. `engine/watching.py` is the loop that feeds them
the real clock, a seeded `random.Random` and the plans it made; tests feed a fake clock and a fake
rng (tests/core/test_watching_policy.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypedDict

from controller.codes import Trigger as Trigger  # re-exported: the loop names it policy.Trigger
from controller.codes import WatchResult as R
from controller.core.selection import EVERY_BOT, Selection
from controller.core.types import WRITING_ACTIONS, Kind, Plan, RunResult
from controller.errors import ConflictError, ControllerError, LockHeld, UnknownBot

RESULTS = tuple(R)
GOOD_RESULTS = (R.APPLIED, R.IN_SYNC, R.DRIFT)  # the revision is applied (drift: a hand edit since)
TRANSIENT_RESULTS = (R.PARTIAL, R.SOURCE_ERROR, R.BUSY)  # retried with backoff
STILL_STALLED = "still waiting for the source to change"
UNHEALTHY_AFTER = 5  # transient failures in a row that make /healthz unhealthy


@dataclass(kw_only=True)
class Options:
    interval: float = 300.0
    jitter: float = 0.1
    self_heal: bool = False
    prune: bool = False
    yes: bool = False
    fleet: str | None = None
    host: str | None = None
    lock_timeout: float = 10.0
    retry_min: float = 2.0
    allow_history_rewrite: bool = False
    debounce_ms: int = 300
    health: bool = True  # check runtime health after each pass (metrics, alerts on transitions)
    rooms: bool = True  # False: --no-rooms, rooms are left out (the gateway is not asked, no room changes)
    pass_deadline: float = 600.0  # a pass running longer makes /healthz unhealthy (docs/watch.md)
    full_every: int = 10  # read the home in full every N passes (engine/observecache.py); 0: never
    selection: Selection = EVERY_BOT  # --bot/-l: only these bots are converged and reported (docs/watch.md#selectors)


class Where(TypedDict):
    """Where and when a pass ran: what `report` and `applied` put in its Run."""

    at: str
    trigger: Trigger
    revision: str
    digest: str


@dataclass(kw_only=True)
class Run:
    at: str
    trigger: Trigger
    result: R
    revision: str = ""
    digest: str = ""
    changed: int = 0
    failed: int = 0
    drift: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    pruned: list[str] = field(default_factory=list)  # objects this pass deleted (--prune)

    @property
    def transient(self) -> bool:
        return self.result in TRANSIENT_RESULTS


class Effect(StrEnum):
    """What a pass does to the stalled revision."""

    STALL = "stall"  # invalid manifests or a refused apply: wait for the source to change
    SETTLE = "settle"  # planned or applied: any stall is over
    KEEP = "keep"  # ended before it could tell (source error, busy, a failed write)


@dataclass(frozen=True, kw_only=True)
class LoopState:
    failures: int = 0  # transient failures in a row
    stalled_revision: str | None = None
    last_good_revision: str | None = None


class Rng(Protocol):
    def uniform(self, a: float, b: float) -> float: ...


# --- the source ----------------------------------------------------------------------------------


def source_failure(*, stopping: bool, transient: bool) -> R:
    """A source that could not be read: a stop request, a retry, or a stall until it changes."""
    return R.INTERRUPTED if stopping else R.SOURCE_ERROR if transient else R.STALLED


def is_stalled(state: LoopState, revision: str) -> bool:
    return revision == state.stalled_revision


# --- apply or report ------------------------------------------------------------------------------


def must_apply(
    last_apply: Mapping[str, Any], digest: str, *, self_heal: bool, suspension: str | None, selection: str = ""
) -> bool:
    """Apply without looking: --self-heal, manifests changed since the last apply (this machine's
    slice: its digest), that apply did not finish, or it was for other bots (`selection`: this
    reconciler's, as described; a run without one covers every bot). Never while the home is
    suspended (`suspension`: who suspended it, when and why, in words)."""
    if suspension is not None:
        return False
    covered = last_apply.get("selection", "") in ("", selection)
    return self_heal or last_apply.get("digest") != digest or last_apply.get("result") != RunResult.OK or not covered


def revision_moved(last_apply: Mapping[str, Any], revision: str) -> bool:
    return bool(last_apply.get("revision", revision) != revision)


def changed_objects(plan: Plan) -> list[str]:
    return [c.key for c in plan.changes if c.action in WRITING_ACTIONS]


def unsettled(plan: Plan) -> R | None:
    """The result of a report-only pass whose plan holds what apply would refuse or fail on: an
    object it could not check (a room while the gateway is unreachable: partial, retried) or a
    conflict (another owner took a bot); None when the plan says what the home is."""
    if plan.errors:
        return R.PARTIAL
    if plan.conflicts:
        return R.CONFLICT
    return None


def causes(plan: Plan, failed: Sequence[str] = ()) -> str:
    """The first three reasons a pass did not settle, for the run's message."""
    found = [*failed, *(f"{c.key}: {c.reason}" for c in [*plan.errors, *plan.conflicts])]
    return "; ".join(found[:3])


def report(
    plan: Plan, *, at: str, trigger: Trigger, revision: str, digest: str, moved: bool, suspension: str | None
) -> Run | None:
    """The run of a pass that only planned; None when it should apply after all (a new revision
    whose pending changes are no hand edit, e.g. a secret file's new value). Suspended: never."""
    drift = changed_objects(plan)
    if suspension is None and drift and moved and not plan.drifted:
        return None
    run = Run(at=at, trigger=trigger, result=R.IN_SYNC, revision=revision, digest=digest, drift=drift)
    if (found := unsettled(plan)) is not None:
        return replace(run, result=found, failed=len(plan.errors), message=causes(plan))
    if suspension is not None:
        pending = f"; {len(drift)} object(s) would change" if drift else ""
        return replace(run, result=R.SUSPENDED, message=f"{suspension}, nothing changed{pending}")
    if drift:
        return replace(run, result=R.DRIFT, message=f"{len(drift)} object(s) differ from the manifests (reported, not corrected)")
    return run


@dataclass(frozen=True, kw_only=True)
class Applied:
    """What one apply did, as the engine saw it."""

    done: int
    failed: Sequence[str]  # "<object>: <error>" per object that failed
    pruned: Sequence[str]
    abandoned: bool  # stopped between two objects on request
    wrote: bool  # any object changed


def applied(plan: Plan, outcome: Applied, *, at: str, trigger: Trigger, revision: str, digest: str) -> Run:
    result = R.APPLIED if outcome.wrote else R.IN_SYNC
    run = Run(at=at, trigger=trigger, result=result, revision=revision, digest=digest, changed=outcome.done)
    failed = len(outcome.failed) + len(plan.errors)
    if outcome.abandoned:
        message = "stopped between two objects on request; the next run finishes the job"
        return replace(run, result=R.INTERRUPTED, failed=failed, message=message)
    if failed:
        return replace(run, result=R.PARTIAL, failed=failed, message=causes(plan, outcome.failed), pruned=list(outcome.pruned))
    return replace(run, pruned=list(outcome.pruned))


def routine_health(plan: Plan, jobs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[tuple[str, str], bool]:
    """(bot, routine) -> whether its cron job's last run failed, for each managed routine with a job."""
    out: dict[tuple[str, str], bool] = {}
    for change in plan.changes:
        if change.kind is Kind.ROUTINE and change.ref:
            job = next((j for j in jobs.get(change.bot, ()) if str(j.get("id")) == change.ref), None)
            if job is not None:
                out[(change.bot, change.title)] = job.get("last_status") == "error"
    return out


# --- after the pass -------------------------------------------------------------------------------


def failed_pass(exc: ControllerError) -> tuple[R, Effect]:
    """What an error that ended a pass makes of it: another run holds the lock (busy, retried); a
    `--bot` the fleet has no bot of, or a conflict (stalled until the source changes); else partial."""
    if isinstance(exc, LockHeld):
        return R.BUSY, Effect.KEEP
    if isinstance(exc, UnknownBot):
        return R.STALLED, Effect.STALL
    if isinstance(exc, ConflictError):
        return R.CONFLICT, Effect.STALL
    return R.PARTIAL, Effect.KEEP


def after_pass(state: LoopState, run: Run, effect: Effect) -> LoopState:
    """The stalled and last good revisions once `run` ended with `effect`."""
    if effect is Effect.STALL:
        return replace(state, stalled_revision=run.revision)
    if effect is Effect.KEEP:
        return state
    good = run.revision if run.result in GOOD_RESULTS else state.last_good_revision
    return replace(state, stalled_revision=None, last_good_revision=good)


def delay_after(state: LoopState, run: Run, options: Options, rng: Rng) -> tuple[LoopState, float]:
    """Seconds to the next pass: after a transient failure retry_min doubled per failure in a row
    (capped at the interval); otherwise the interval, spread by ±jitter so machines drift apart."""
    if run.transient:
        failures = state.failures + 1
        # Capped exponent: after ~1,000 failed passes in a row, 2**n no longer converts to a float.
        return replace(state, failures=failures), min(options.interval, options.retry_min * (1 << min(failures - 1, 32)))
    spread = options.interval * options.jitter
    return replace(state, failures=0), max(0.05, options.interval + rng.uniform(-spread, spread))


def next_trigger(*, woke: bool, failures: int) -> Trigger:
    return "change" if woke else ("retry" if failures else "interval")


def overrun(started: float | None, now: float, deadline: float) -> float | None:
    """Seconds the pass in progress (started at monotonic `started`) has run past its deadline."""
    if started is None:
        return None
    late = now - started - deadline
    return late if late > 0 else None


def healthz(last: Run | None, failures: int, late: float | None) -> tuple[bool, dict[str, object]]:
    """/healthz: unhealthy while stalled or in conflict, after UNHEALTHY_AFTER transient failures in
    a row, or while a pass overruns its deadline."""
    result = last.result if last is not None else "starting"
    healthy = result not in (R.STALLED, R.CONFLICT) and failures < UNHEALTHY_AFTER and late is None
    body: dict[str, object] = {"status": "ok" if healthy else "unhealthy", "last_result": result}
    if late is not None:
        body["overrun_seconds"] = round(late, 1)
    return healthy, body
