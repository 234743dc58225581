"""The reconciler's policy (controller/core/watching.py), in-process: a fake clock (plain numbers),
a fake rng that records what it was asked and answers a fixed point of the range, real plans.

Every row asserts: what a report-only pass says, when a pass applies, what stays stalled, the
backoff and jitter, and /healthz. The loop around it runs end to end in tests/watch/."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from controller.codes import WatchResult as R
from controller.core import watching as policy
from controller.core.types import Action, Kind, ObjectChange, Plan, Reason, RunResult
from controller.core.watching import Effect, LoopState, Options, Run
from controller.errors import ConflictError, ControllerError, LockHeld, UnknownBot

NOOP = ObjectChange(kind=Kind.BOT, name="alpha", action=Action.NOOP, code=Reason.MANAGED)
PENDING = ObjectChange(
    kind=Kind.BOT, name="beta", action=Action.UPDATE, code=Reason.MANAGED
)  # the manifests say more than the home
HAND_EDIT = ObjectChange(kind=Kind.BOT, name="beta", action=Action.UPDATE, code=Reason.MANAGED, drift=True)
UNREACHABLE = ObjectChange(
    kind=Kind.ROOM, name="Ops", action=Action.ERROR, code=Reason.MANAGED, reason="pending: gateway unreachable"
)
TAKEN = ObjectChange(
    kind=Kind.BOT, name="gamma", action=Action.CONFLICT, code=Reason.FOREIGN_OWNER, reason="owned by fleet 'other'"
)
SUSPENDED = "suspended by ops@box at 2026-12-03T12:00:00+00:00: migrating"


def plan(*changes: ObjectChange) -> Plan:
    return Plan("acme", "sha256:d1", changes)


@dataclass
class FakeRng:
    """Answers `at` (0 = the low end, 1 = the high end) of the range it is asked for."""

    at: float
    asked: list[tuple[float, float]] = field(default_factory=list)

    def uniform(self, a: float, b: float) -> float:
        self.asked.append((a, b))
        return a + (b - a) * self.at


# --- apply or report -----------------------------------------------------------------------------

OK_APPLY = {"digest": "sha256:d1", "result": RunResult.OK, "revision": "r1"}


@pytest.mark.parametrize(
    ("last", "self_heal", "suspension", "expected"),
    [
        (OK_APPLY, False, None, False),  # same manifests, last apply ok: plan only
        (OK_APPLY, True, None, True),  # --self-heal applies every pass
        ({**OK_APPLY, "digest": "sha256:old"}, False, None, True),  # the manifests changed
        ({**OK_APPLY, "result": RunResult.PARTIAL}, False, None, True),  # the last apply did not finish
        ({}, False, None, True),  # never applied
        ({}, True, SUSPENDED, False),  # suspended: never, whatever else holds
        ({**OK_APPLY, "digest": "sha256:old"}, False, SUSPENDED, False),
    ],
)
def test_when_a_pass_applies_without_planning_first(
    last: dict[str, str], self_heal: bool, suspension: str | None, expected: bool
) -> None:
    assert policy.must_apply(last, "sha256:d1", self_heal=self_heal, suspension=suspension) is expected


@pytest.mark.parametrize(
    ("last_selection", "selection", "expected"),
    [
        ("", "", False),  # the whole fleet's apply, a reconciler of every bot
        ("", "--bot a", False),  # a whole apply covers any selection
        ("--bot a", "--bot a", False),  # this selection's own apply
        ("--bot a", "", True),  # an apply of a only: every other bot may still be pending
        ("--bot a", "-l team=ops", True),  # another selection's apply
    ],
)
def test_an_apply_of_other_bots_is_no_apply_of_these(last_selection: str, selection: str, expected: bool) -> None:
    last = {**OK_APPLY, "selection": last_selection} if last_selection else OK_APPLY
    assert policy.must_apply(last, "sha256:d1", self_heal=False, suspension=None, selection=selection) is expected
    assert policy.must_apply(last, "sha256:d1", self_heal=False, suspension=SUSPENDED, selection=selection) is False


@pytest.mark.parametrize(
    ("error", "result", "effect"),
    [
        (LockHeld("another run holds the lock"), R.BUSY, Effect.KEEP),
        (UnknownBot("--bot 'bx': no bot of fleet 'acme' has that name"), R.STALLED, Effect.STALL),
        (ConflictError("conflict on bot/a"), R.CONFLICT, Effect.STALL),
        (ControllerError("a write failed"), R.PARTIAL, Effect.KEEP),
    ],
)
def test_what_an_error_makes_of_a_pass(error: ControllerError, result: R, effect: Effect) -> None:
    assert policy.failed_pass(error) == (result, effect)


@pytest.mark.parametrize(
    ("changes", "moved", "suspension", "result", "drift", "message"),
    [
        ((NOOP,), False, None, "in-sync", [], ""),
        (
            (NOOP, HAND_EDIT),
            False,
            None,
            "drift",
            ["bot/beta"],
            "1 object(s) differ from the manifests (reported, not corrected)",
        ),
        (
            (NOOP, HAND_EDIT),
            True,
            None,
            "drift",
            ["bot/beta"],
            "1 object(s) differ",
        ),  # a hand edit is never applied on a new revision
        ((NOOP, PENDING), True, None, None, None, None),  # a new revision, no hand edit: apply after all
        ((NOOP, PENDING), False, None, "drift", ["bot/beta"], "1 object(s) differ"),
        ((NOOP, HAND_EDIT, UNREACHABLE), False, None, "partial", ["bot/beta"], "room/Ops: pending: gateway unreachable"),
        ((NOOP, TAKEN), False, None, "conflict", [], "bot/gamma: owned by fleet 'other'"),
        (
            (NOOP,),
            False,
            SUSPENDED,
            "suspended",
            [],
            "suspended by ops@box at 2026-12-03T12:00:00+00:00: migrating, nothing changed",
        ),
        ((NOOP, PENDING), True, SUSPENDED, "suspended", ["bot/beta"], "nothing changed; 1 object(s) would change"),
        ((NOOP, TAKEN), False, SUSPENDED, "conflict", [], "owned by fleet 'other'"),  # still said while suspended
    ],
)
def test_what_a_report_only_pass_says(
    changes: tuple[ObjectChange, ...],
    moved: bool,
    suspension: str | None,
    result: str | None,
    drift: list[str] | None,
    message: str | None,
) -> None:
    run = policy.report(
        plan(*changes), at="T", trigger="interval", revision="r2", digest="sha256:d1", moved=moved, suspension=suspension
    )
    if result is None:
        assert run is None
        return
    assert run is not None
    assert (run.result, run.drift, run.revision, run.digest, run.at) == (result, drift, "r2", "sha256:d1", "T")
    assert message in run.message
    assert run.failed == (1 if result == "partial" else 0)


@pytest.mark.parametrize(
    ("outcome", "result", "changed", "failed", "pruned", "message"),
    [
        (policy.Applied(done=2, failed=[], pruned=[], abandoned=False, wrote=True), "applied", 2, 0, [], ""),
        (policy.Applied(done=0, failed=[], pruned=[], abandoned=False, wrote=False), "in-sync", 0, 0, [], ""),
        (policy.Applied(done=1, failed=[], pruned=["bot/old"], abandoned=False, wrote=True), "applied", 1, 0, ["bot/old"], ""),
        (
            policy.Applied(done=1, failed=["bot/b: denied"], pruned=["bot/old"], abandoned=False, wrote=True),
            "partial", 1, 1, ["bot/old"], "bot/b: denied",
        ),
        (
            policy.Applied(done=1, failed=[], pruned=["bot/old"], abandoned=True, wrote=True),
            "interrupted", 1, 0, [], "stopped between two objects on request",
        ),
    ],
)  # fmt: skip
def test_what_an_apply_says(
    outcome: policy.Applied, result: str, changed: int, failed: int, pruned: list[str], message: str
) -> None:
    run = policy.applied(plan(NOOP), outcome, at="T", trigger="change", revision="r2", digest="sha256:d1")
    assert (run.result, run.changed, run.failed, run.pruned) == (result, changed, failed, pruned)
    assert message in run.message and (message or run.message == "")


def test_an_apply_counts_the_plans_own_errors_as_failed() -> None:
    outcome = policy.Applied(done=1, failed=[], pruned=[], abandoned=False, wrote=True)
    run = policy.applied(plan(NOOP, UNREACHABLE), outcome, at="T", trigger="start", revision="r", digest="d")
    assert (run.result, run.failed, run.message) == ("partial", 1, "room/Ops: pending: gateway unreachable")


@pytest.mark.parametrize(
    ("stopping", "transient", "result"),
    [(True, True, "interrupted"), (True, False, "interrupted"), (False, True, "source-error"), (False, False, "stalled")],
)
def test_a_source_that_could_not_be_read(stopping: bool, transient: bool, result: str) -> None:
    assert policy.source_failure(stopping=stopping, transient=transient) == result


def test_routine_health_reads_the_jobs_of_managed_routines() -> None:
    failing = ObjectChange(kind=Kind.ROUTINE, name="alpha/Morning", action=Action.NOOP, code=Reason.MANAGED, ref="j1")
    fine = ObjectChange(kind=Kind.ROUTINE, name="alpha/Evening", action=Action.NOOP, code=Reason.MANAGED, ref="j2")
    unwritten = ObjectChange(kind=Kind.ROUTINE, name="alpha/Night", action=Action.CREATE, code=Reason.MANAGED)  # no job yet
    jobs = {"alpha": [{"id": "j1", "last_status": "error"}, {"id": "j2", "last_status": "ok"}]}
    assert policy.routine_health(plan(failing, fine, unwritten), jobs) == {
        ("alpha", "Morning"): True,
        ("alpha", "Evening"): False,
    }


# --- stalls and the last good revision ------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "result", "effect", "stalled", "good"),
    [
        (LoopState(), "stalled", Effect.STALL, "r2", None),  # invalid manifests at r2: wait for a change
        (LoopState(stalled_revision="r2"), "stalled", Effect.KEEP, "r2", None),  # still r2
        (LoopState(stalled_revision="r1", last_good_revision="r0"), "applied", Effect.SETTLE, None, "r2"),
        (LoopState(last_good_revision="r0"), "drift", Effect.SETTLE, None, "r2"),  # the revision is applied
        (LoopState(last_good_revision="r0"), "suspended", Effect.SETTLE, None, "r0"),  # r2 was not applied
        (LoopState(last_good_revision="r0"), "conflict", Effect.SETTLE, None, "r0"),  # a plan that apply would refuse
        (LoopState(last_good_revision="r0"), "conflict", Effect.STALL, "r2", "r0"),  # apply refused it
        (LoopState(stalled_revision="r1", last_good_revision="r0"), "busy", Effect.KEEP, "r1", "r0"),
    ],
)
def test_what_a_pass_leaves_stalled_and_good(
    before: LoopState, result: str, effect: Effect, stalled: str | None, good: str | None
) -> None:
    after = policy.after_pass(before, Run(at="T", trigger="interval", result=R(result), revision="r2"), effect)
    assert (after.stalled_revision, after.last_good_revision) == (stalled, good)
    assert policy.is_stalled(after, "r2") is (stalled == "r2")


# --- backoff and jitter -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failures", "result", "after", "delay"),
    [
        (0, "partial", 1, 2.0),  # retry_min
        (1, "source-error", 2, 4.0),  # doubled per failure in a row
        (2, "busy", 3, 8.0),
        (5, "partial", 6, 60.0),  # 64 s capped at the interval
        (40, "partial", 41, 60.0),  # no overflow, still capped
    ],
)
def test_backoff_after_transient_failures(failures: int, result: str, after: int, delay: float) -> None:
    rng = FakeRng(0.5)
    state, waited = policy.delay_after(
        LoopState(failures=failures), Run(at="T", trigger="t", result=R(result)), Options(interval=60.0), rng
    )
    assert (state.failures, waited) == (after, delay)
    assert rng.asked == []  # no jitter on a retry


@pytest.mark.parametrize(
    ("at", "interval", "jitter", "delay"),
    [
        (0.0, 300.0, 0.1, 270.0),  # the low end: interval - 10 %
        (1.0, 300.0, 0.1, 330.0),  # the high end
        (0.5, 300.0, 0.1, 300.0),
        (0.0, 300.0, 0.0, 300.0),  # no jitter
        (0.0, 0.01, 0.5, 0.05),  # never below 50 ms
    ],
)
def test_jitter_spreads_the_interval(at: float, interval: float, jitter: float, delay: float) -> None:
    rng = FakeRng(at)
    state, waited = policy.delay_after(
        LoopState(failures=3), Run(at="T", trigger="t", result=R.APPLIED), Options(interval=interval, jitter=jitter), rng
    )
    assert state.failures == 0  # a settled pass ends the run of failures
    assert waited == pytest.approx(delay)
    spread = interval * jitter
    assert rng.asked == [(-spread, spread)]


def test_a_seeded_rng_gives_the_same_spread_within_bounds() -> None:
    first = [
        policy.delay_after(LoopState(), Run(at="T", trigger="t", result=R.IN_SYNC), Options(), random.Random(7))[1]
        for _ in range(3)
    ]
    assert len(set(first)) == 1 and 270.0 <= first[0] <= 330.0


@pytest.mark.parametrize(
    ("woke", "failures", "trigger"),
    [(True, 0, "change"), (True, 3, "change"), (False, 2, "retry"), (False, 0, "interval")],
)
def test_the_next_trigger(woke: bool, failures: int, trigger: str) -> None:
    assert policy.next_trigger(woke=woke, failures=failures) == trigger


# --- /healthz --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("started", "now", "late"),
    [(None, 1000.0, None), (100.0, 700.0, None), (100.0, 701.5, 1.5), (100.0, 100.0, None)],
)
def test_overrun_with_a_fake_clock(started: float | None, now: float, late: float | None) -> None:
    assert policy.overrun(started, now, 600.0) == late


@pytest.mark.parametrize(
    ("last", "failures", "late", "healthy", "body"),
    [
        (None, 0, None, True, {"status": "ok", "last_result": "starting"}),
        ("applied", 4, None, True, {"status": "ok", "last_result": "applied"}),
        ("partial", 5, None, False, {"status": "unhealthy", "last_result": "partial"}),
        ("stalled", 0, None, False, {"status": "unhealthy", "last_result": "stalled"}),
        ("conflict", 0, None, False, {"status": "unhealthy", "last_result": "conflict"}),
        ("suspended", 0, None, True, {"status": "ok", "last_result": "suspended"}),
        ("in-sync", 0, 12.34, False, {"status": "unhealthy", "last_result": "in-sync", "overrun_seconds": 12.3}),
    ],
)
def test_healthz(last: str | None, failures: int, late: float | None, healthy: bool, body: dict[str, object]) -> None:
    run = Run(at="T", trigger="t", result=R(last)) if last else None
    assert policy.healthz(run, failures, late) == (healthy, body)


def test_the_policy_module_has_no_clock_or_dice() -> None:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(policy))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported.isdisjoint({"time", "random", "os", "datetime", "socket", "threading"}), imported
