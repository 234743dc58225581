"""The reconciler: `hermes-fleet watch` keeps a Hermes home converged on manifests or a git repo.

Flux-style loop: reconcile on a source change (adapters.filewatch, debounced) and every --interval
(with jitter). What a pass applies or reports, what stays stalled and how long to wait are the
policy in core.watching; this module is the loop around it, with the clock, the rng and the
notifier passed in. One reconciler per home (adapters.watchlock), a status file under the home
(engine.watchstatus), one log line per event (engine.watchlog), optional /healthz and /metrics
(engine.healthserver, engine.metrics), clean shutdown on SIGTERM/SIGINT. A selection (--bot, -l)
narrows what is planned, applied, checked and reported to its bots (passmemo.PassMemo.select).
"""

from __future__ import annotations

import random
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from controller.adapters import filewatch, suspension, webhooks
from controller.adapters.sources import GitSource, LocalSource, Snapshot
from controller.codes import WatchResult as R
from controller.core import health as health_core
from controller.core import watching as policy
from controller.core.types import Action
from controller.core.types import Options as PlanOptions
from controller.core.watching import Effect, LoopState, Options, Run
from controller.engine import history, notifying, observecache, passmemo, reconciling, watchstatus
from controller.engine.metrics import Metrics
from controller.engine.watchlog import Log, ProgressLog
from controller.errors import ControllerError, SourceError
from controller.manifests import desired, loading, reading, validating

__all__ = ["KEEP_RUNS", "Clock", "Log", "Options", "ProgressLog", "Reconciler", "Run"]

KEEP_RUNS = 20


@dataclass(frozen=True)
class Clock:
    wall: Callable[[], float] = time.time  # Unix time: run times, next run, metrics
    monotonic: Callable[[], float] = time.monotonic  # durations and the pass deadline

    def stamp(self) -> str:
        return datetime.fromtimestamp(self.wall(), UTC).isoformat(timespec="seconds")


class Reconciler:
    def __init__(
        self,
        root: Path,
        source: LocalSource | GitSource,
        options: Options,
        log: Log,
        *,
        clock: Clock | None = None,
        rng: policy.Rng | None = None,
        notifier: webhooks.Notifier | None = None,
    ) -> None:
        self.root, self.source, self.options, self.log = root, source, options, log
        self.clock = clock or Clock()
        self.rng = rng or random.Random()
        self.notifier = notifier  # fed after every pass
        self.metrics = Metrics(options.host or socket.gethostname(), options.interval, options.selection.describe())
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.runs: list[Run] = []
        self.state = LoopState()
        self.next_run_at: float | None = None
        self.fleet: str | None = options.fleet
        self.plan_options = PlanOptions(prune=options.prune, yes=options.yes, rooms=options.rooms)
        self.webhooks: tuple[object, ...] | None = None  # the manifests' webhooks the notifier was configured for
        self.health: health_core.Health | None = None
        # What the webhooks last heard (kept in the status file, so `--once` and restarts do not repeat it).
        self.seen_run: Run | None = None
        self.seen_findings: tuple[health_core.Finding, ...] = ()
        self.pass_started: float | None = None  # clock.monotonic() of the pass in progress
        self.observations = observecache.WatchObservations(root, options.full_every)
        self.pass_cache = self.observations.cache
        self.kept = passmemo.PassMemo(options.selection)  # what a pass takes again while its inputs are unchanged

    # --- one pass --------------------------------------------------------------------------------

    def reconcile(self, trigger: policy.Trigger) -> Run:
        started = self.pass_started = self.clock.monotonic()
        try:
            with loading.gc_paused():  # no cyclic collector's scan of what is kept (passmemo.py)
                run, effect = self._reconcile(trigger)
        except Exception as exc:  # a bug must not end the reconciler (under systemd: a crash loop)
            self.log.event("internal_error", error=f"{type(exc).__name__}: {exc}", hint="please report it; retrying")
            traceback.print_exc(file=sys.stderr)
            message = f"internal error: {type(exc).__name__}: {exc}"
            run, effect = Run(at=self.clock.stamp(), trigger=trigger, result=R.PARTIAL, message=message), Effect.KEEP
        finally:
            self.pass_started = None
        run.seconds = round(self.clock.monotonic() - started, 4)
        self.state = policy.after_pass(self.state, run, effect)
        if isinstance(self.source, GitSource) and self.state.last_good_revision:
            self.source.last_good = self.state.last_good_revision  # a force-push past it is refused
        self.runs = [*self.runs, run][-KEEP_RUNS:]
        self.log.event(
            "reconciled",
            trigger=trigger,
            result=run.result,
            revision=run.revision,  # in full, as in the status file and /metrics (docs/watch.md#revisions)
            changed=run.changed,
            failed=run.failed,
            drift=run.drift,
            seconds=run.seconds,
            message=run.message,
        )
        self._after_run(run)
        return run

    def _after_run(self, run: Run) -> None:
        """Health check, metrics and notifications; never fails the pass (docs/watch.md, Notifications)."""
        good = self.state.last_good_revision
        self.metrics.record(run, now=self.clock.wall(), failures=self.state.failures, good_revision=good)
        if self.fleet is None:
            return
        events = notifying.run_events(self.seen_run, run, self.fleet, str(self.root), self.metrics.host)
        self.seen_run = run
        if self.options.health and run.result is not R.SOURCE_ERROR:
            try:
                checked = self.kept.health(self.root, self.fleet, self.pass_cache)
            except (ControllerError, OSError) as exc:
                self.log.event("health_error", message=str(exc))
            else:
                host, findings = self.metrics.host, checked.findings
                events += notifying.health_events(self.seen_findings, findings, self.fleet, str(self.root), host)
                self.health, self.seen_findings = checked, checked.findings
                self.metrics.observe_health(checked)
        if self.notifier is not None:
            for found in events:
                self.notifier.post(notifying.selected(found, self.options.selection.describe()))

    def _configure_webhooks(self, state: desired.DesiredState) -> None:
        if self.notifier is None or state.notifications == self.webhooks:
            return
        targets, problems = notifying.targets(state)
        for problem in problems:
            self.log.event("notify_config_error", message=problem)
        self.notifier.configure(targets)
        self.webhooks = state.notifications

    def _reconcile(self, trigger: policy.Trigger) -> tuple[Run, Effect]:
        now = self.clock.stamp()
        self.pass_cache.trusted = False  # a pass ending before begin_pass (stalled) checks health by stat key
        suspended = suspension.read(self.root)
        self.metrics.observe_suspended(suspended is not None)
        try:
            snap = self._snapshot()
        except SourceError as exc:
            failed = policy.source_failure(stopping=self.stop.is_set(), transient=exc.transient)
            return Run(at=now, trigger=trigger, result=failed, message=str(exc)), Effect.KEEP
        if policy.is_stalled(self.state, snap.revision):
            return Run(
                at=now, trigger=trigger, result=R.STALLED, revision=snap.revision, message=policy.STILL_STALLED
            ), Effect.KEEP
        try:
            result = self.kept.manifests.load(snap, fleet=self.options.fleet, skip=self.root)
        except ControllerError as exc:  # e.g. the folder no longer holds any manifest: stall, do not crash
            message = f"cannot read the manifests: {exc}"
            return Run(at=now, trigger=trigger, result=R.STALLED, revision=snap.revision, message=message), Effect.STALL
        if result.errors or result.state is None:
            first = "; ".join(d.render() for d in result.errors[:3]) or "no manifest documents"
            message = f"invalid manifests, nothing applied ({len(result.errors)} error(s)): {first}"
            return Run(at=now, trigger=trigger, result=R.STALLED, revision=snap.revision, message=message), Effect.STALL
        state = desired.for_host(result.state, reading.selected_host(self.options.host, result.state))
        self.fleet = state.fleet
        self.metrics.observe_slice(state.fleet, self.kept.select(state))
        self._configure_webhooks(state)
        tried = Run(at=now, trigger=trigger, result=R.PARTIAL, revision=snap.revision, digest=state.digest)
        self.pass_cache = self.observations.begin_pass()  # engine/observecache.py
        try:
            held = suspended.describe() if suspended else None
            return self._converge(now, trigger, snap, state, result, held), Effect.SETTLE
        except ControllerError as exc:  # busy, stalled (a conflict, an unknown --bot) or partial
            failed, effect = policy.failed_pass(exc)
            return replace(tried, result=failed, message=str(exc)), effect
        finally:
            self.observations.end_pass(self.pass_cache)

    def _snapshot(self) -> Snapshot:
        if isinstance(self.source, GitSource):
            return self.source.snapshot(allow_rewrite=self.options.allow_history_rewrite)
        return self.source.snapshot()

    def _converge(
        self,
        now: str,
        trigger: policy.Trigger,
        snap: Snapshot,
        state: desired.DesiredState,
        loaded: validating.ValidationResult,
        suspended: str | None,
    ) -> Run:
        last = self.kept.inventories.load(self.root, state.fleet).last_apply or {}
        where: policy.Where = {"at": now, "trigger": trigger, "revision": snap.revision, "digest": state.digest}
        chosen = self.options.selection.describe()  # an apply of other bots is no apply of these
        if not policy.must_apply(last, state.digest, self_heal=self.options.self_heal, suspension=suspended, selection=chosen):
            planned = self.kept.plan(self.root, state, loaded.files, self.plan_options, self.pass_cache)
            self.metrics.observe_routines(self.kept.routine_health(planned))
            moved = policy.revision_moved(last, snap.revision)
            run = policy.report(planned.plan, moved=moved, suspension=suspended, **where)
            if run is not None:
                if run.result is R.DRIFT:
                    self.log.event("drift_detected", objects=run.drift, hint="apply, or run watch with --self-heal")
                return run
        return self._apply(snap, state, loaded, where)

    def _apply(
        self, snap: Snapshot, state: desired.DesiredState, loaded: validating.ValidationResult, where: policy.Where
    ) -> Run:
        opts = self.options
        snapshot = history.snapshot(
            loaded,
            fleet_arg=opts.fleet,
            host=reading.selected_host(opts.host, loaded.state) if loaded.state else None,
            command="watch",
            revision=snap.revision if isinstance(self.source, GitSource) else None,
        )
        on_progress = ProgressLog(self.log, clock=self.clock.monotonic)
        request = reconciling.ApplyRequest(
            root=self.root, state=state, files=loaded.files, options=self.plan_options, lock_timeout=opts.lock_timeout,
            revision=snap.revision, should_stop=self.stop.is_set, snapshot=snapshot, on_progress=on_progress,
            cache=self.pass_cache, selection=opts.selection,
        )  # fmt: skip
        planned, results = reconciling.apply_once(request)
        if results.replaced_dir:
            self.log.event("replaced_kept", files=len(results.replaced), folder=results.replaced_dir)
        self.metrics.observe_routines(policy.routine_health(planned.plan, planned.inputs.observed.jobs))
        outcome = policy.Applied(
            done=len(results.done),
            failed=[f"{o.change.key}: {o.error}" for o in results.failed],
            pruned=[o.change.key for o in results.done if o.change.action is Action.DELETE],
            abandoned=bool(results.abandoned),
            wrote=bool(results.outcomes),
        )
        return policy.applied(planned.plan, outcome, **where)

    # --- the loop --------------------------------------------------------------------------------

    def write_status(self) -> None:
        problem = watchstatus.write_status(self.root, watchstatus.payload(self, self.clock.stamp()))
        if problem is not None:
            self.log.event("status_not_written", error=problem)

    def healthz(self) -> tuple[bool, dict[str, object]]:
        last = self.runs[-1] if self.runs else None
        late = policy.overrun(self.pass_started, self.clock.monotonic(), self.options.pass_deadline)
        return policy.healthz(last, self.state.failures, late)

    def render_metrics(self, accept: str) -> tuple[bytes, str]:
        return self.metrics.render(accept)

    def delay_after(self, run: Run) -> float:
        self.state, delay = policy.delay_after(self.state, run, self.options, self.rng)
        self.metrics.failures = self.state.failures
        return delay

    def loop(self) -> None:
        watcher = self._start_watcher()
        self.observations.start(self.stop)
        trigger: policy.Trigger = "start"
        try:
            while not self.stop.is_set():
                run = self.reconcile(trigger)
                delay = self.delay_after(run)
                self.next_run_at = self.clock.wall() + delay
                self.write_status()
                woke = self.wake.wait(delay)
                self.wake.clear()
                if self.stop.is_set():
                    break
                trigger = policy.next_trigger(woke=woke, failures=self.state.failures)
        finally:
            self.stop.set()
            if watcher is not None:
                watcher.join(timeout=5)
            self.next_run_at = None
            self.write_status()
            self.log.event("stopped", runs=len(self.runs))

    def _start_watcher(self) -> threading.Thread | None:
        if not isinstance(self.source, LocalSource):
            return None

        def changed(files: list[str]) -> None:
            self.log.event("source_changed", files=files)
            self.wake.set()

        return filewatch.start(self.root, self.source, stop=self.stop, debounce_ms=self.options.debounce_ms, on_change=changed)
