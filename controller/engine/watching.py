"""The reconciler: `hermes-fleet watch` keeps a Hermes home converged on manifests or a git repo.

Flux-style loop: reconcile on a source change (watchfiles, debounced; editor temp files ignored)
and every --interval (with jitter). Manifests that changed since the last apply are applied;
otherwise the home is only planned, and drift is reported (default) or corrected (--self-heal).
A transient failure retries with backoff; an invalid manifest or an ownership conflict stalls
until the source changes, the last good state staying applied. One reconciler per home (a
lifetime lock), a status file under the home, one log line per event, optional /healthz and
/metrics on loopback, clean shutdown on SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import fsio, homebounds, locking, webhooks
from controller.adapters.home import check_state_path, state_dir
from controller.adapters.sources import GitSource, LocalSource, Snapshot, is_editor_temp
from controller.core import health as health_core
from controller.core.types import WRITING_ACTIONS, Action, Kind, RunResult
from controller.core.types import Options as PlanOptions
from controller.engine import health, history, notifying, observecache, observing, reconciling, records
from controller.errors import (
    ConflictError,
    ContainmentError,
    ControllerError,
    HermesStateError,
    LockHeld,
    SourceError,
    Terminated,
    UsageError,
)
from controller.manifests import desired, reading, validating
from controller.redact import redact_text, redact_url

STATUS_FILE = "watch-status.json"
KEEP_RUNS = 20
WATCH_SUFFIXES = (".yaml", ".yml", ".json", ".md", ".png", ".jpg", ".jpeg", ".webp", ".key", ".txt")


@dataclass
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


@dataclass
class Run:
    at: str
    trigger: str
    result: str  # applied | in-sync | drift | partial | stalled | conflict | source-error | interrupted
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
        return self.result in ("partial", "source-error", "busy")


class Log:
    """One line per event: `<time> <event> key=value ...`, or one JSON object with --log-format json."""

    def __init__(self, fmt: str = "text", stream: Any = None) -> None:
        self.fmt = fmt
        self.stream = stream or sys.stdout
        # Re-entrant: the SIGTERM handler logs from the main thread, possibly while it is inside event().
        self.lock = threading.RLock()

    def event(self, name: str, **fields: Any) -> None:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        if self.fmt == "json":
            line = json.dumps({"time": now, "event": name, **fields}, default=str, sort_keys=False)
        else:
            parts = [f"{k}={_text(v)}" for k, v in fields.items() if v not in (None, "", [])]
            line = f"{now} {name} " + " ".join(parts)
        with self.lock:
            self.stream.write(line.rstrip() + "\n")
            self.stream.flush()


def _text(value: Any) -> str:
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return json.dumps(text) if (" " in text or "=" in text or not text) else text


class ProgressLog:
    """An apply's progress as `apply_progress` events (done, total, object): the first once the
    apply has run `every` seconds, then one per `every` seconds; a short apply logs none."""

    def __init__(self, log: Log, every: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.every = every
        self.clock = clock
        self.last = clock()

    def __call__(self, done: int, total: int, current: str) -> None:
        now = self.clock()
        if now - self.last < self.every or not current:
            return
        self.last = now
        self.log.event("apply_progress", done=done, total=total, object=current)


RESULTS = ("applied", "in-sync", "drift", "partial", "stalled", "conflict", "source-error", "busy", "interrupted")


class Metrics:
    """The reconciler's metrics, exposed with the Prometheus client library.

    A custom collector: the values are kept here and turned into metric families at scrape time, so
    every sample carries this machine's `fleet` and `host` labels (the fleet is known only once the
    manifests have been read). Per bot: drift; per routine: whether its last run failed (Hermes'
    `last_status`, docs/hermes/cron.md#job-record, as read by the last run).
    """

    def __init__(self, host: str, interval: float = 0.0) -> None:
        from prometheus_client import CollectorRegistry

        self.lock = threading.Lock()
        self.host = host
        self.fleet = ""
        self.interval = interval
        self.runs: dict[str, int] = dict.fromkeys(RESULTS, 0)
        self.last_success = 0.0
        self.last_run_at = 0.0
        self.last_seconds = 0.0
        self.drifted = 0
        self.stalled = 0
        self.failures = 0
        self.revision = ""
        self.bots: tuple[str, ...] = ()
        self.drift: frozenset[str] = frozenset()
        self.routines: dict[tuple[str, str], bool] = {}  # (bot, routine) -> its last run failed
        self.health: health_core.Health | None = None  # the last runtime health check (engine.health)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def record(self, run: Run, *, failures: int = 0, good_revision: str | None = None) -> None:
        with self.lock:
            self.runs[run.result] = self.runs.get(run.result, 0) + 1
            self.last_seconds = run.seconds
            self.last_run_at = time.time()
            self.drifted = len(run.drift)
            self.drift = frozenset(run.drift)
            self.stalled = 1 if run.result in ("stalled", "conflict") else 0
            self.failures = failures
            if run.result in ("applied", "in-sync", "drift"):
                self.last_success = time.time()
            if good_revision:
                self.revision = good_revision

    def observe_slice(self, fleet: str, bots: list[str]) -> None:
        with self.lock:
            self.fleet = fleet
            self.bots = tuple(sorted(bots))

    def observe_routines(self, routines: dict[tuple[str, str], bool]) -> None:
        with self.lock:
            self.routines = dict(routines)

    def observe_health(self, checked: health_core.Health) -> None:
        with self.lock:
            self.health = checked

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

        with self.lock:
            base = [self.fleet, self.host]
            names = ["fleet", "host"]

            def gauge(name: str, doc: str, value: float) -> Any:
                family = GaugeMetricFamily(name, doc, labels=names)
                family.add_metric(base, value)
                return family

            runs = CounterMetricFamily("hermes_fleet_reconcile", "Reconcile runs by result.", labels=[*names, "result"])
            for result, count in sorted(self.runs.items()):
                runs.add_metric([*base, result], count)
            yield runs
            yield gauge(
                "hermes_fleet_last_success_timestamp_seconds",
                "Unix time of the last run that ended applied, in-sync or drift.",
                self.last_success,
            )
            yield gauge(
                "hermes_fleet_last_run_timestamp_seconds", "Unix time of the last run, whatever its result.", self.last_run_at
            )
            yield gauge("hermes_fleet_last_run_seconds", "Duration of the last run.", self.last_seconds)
            yield gauge("hermes_fleet_drifted_objects", "Objects that differ from the manifests (last run).", self.drifted)
            yield gauge(
                "hermes_fleet_stalled", "1 while waiting for the source to change (invalid or conflicting).", self.stalled
            )
            yield gauge(
                "hermes_fleet_consecutive_failures", "Transient failures in a row (partial, source-error, busy).", self.failures
            )
            yield gauge("hermes_fleet_interval_seconds", "The reconcile interval (--interval).", self.interval)
            bots = GaugeMetricFamily(
                "hermes_fleet_bot_drifted",
                "1 when the bot or one of its routines differs from the manifests.",
                labels=[*names, "bot"],
            )
            for bot in self.bots:
                drifted = f"bot/{bot}" in self.drift or any(k.startswith(f"routine/{bot}/") for k in self.drift)
                bots.add_metric([*base, bot], 1 if drifted else 0)
            yield bots
            routines = GaugeMetricFamily(
                "hermes_fleet_routine_failing", "1 when the routine's last run failed (Hermes last_status error).",
                labels=[*names, "bot", "routine"],
            )  # fmt: skip
            for (bot, routine), failing in sorted(self.routines.items()):
                routines.add_metric([*base, bot, routine], 1 if failing else 0)
            yield routines
            if self.revision:
                info = InfoMetricFamily("hermes_fleet_revision", "The last revision applied or found in sync.", labels=names)
                info.add_metric(base, {"revision": self.revision})
                yield info
            if self.health is not None:
                yield from _health_families(self.health, names, base)

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """The exposition the scraper asked for (Prometheus text, or OpenMetrics), and its content type."""
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


class Reconciler:
    def __init__(self, root: Path, source: LocalSource | GitSource, options: Options, log: Log) -> None:
        self.root = root
        self.source = source
        self.options = options
        self.log = log
        self.metrics = Metrics(options.host or socket.gethostname(), options.interval)
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.runs: list[Run] = []
        self.stalled_revision: str | None = None
        self.last_good_revision: str | None = None
        self.next_run_at: float | None = None
        self.failures = 0
        self.fleet: str | None = options.fleet
        self.plan_options = PlanOptions(prune=options.prune, yes=options.yes, rooms=options.rooms)
        self.notifier: webhooks.Notifier | None = None  # set by the verb; fed after every pass
        self.webhooks: tuple[object, ...] | None = None  # the manifests' webhooks the notifier was configured for
        self.health: health_core.Health | None = None
        # What the webhooks last heard (kept in the status file, so `--once` and restarts do not repeat it).
        self.seen_run: Run | None = None
        self.seen_findings: tuple[health_core.Finding, ...] = ()
        self.pass_started: float | None = None  # time.monotonic() of the pass in progress
        self.observations = observecache.WatchObservations(root, options.full_every)
        self.pass_cache = self.observations.cache

    # --- one pass --------------------------------------------------------------------------------

    def reconcile(self, trigger: str) -> Run:
        started = self.pass_started = time.monotonic()
        try:
            run = self._reconcile(trigger)
        except Exception as exc:  # a bug must not end the reconciler (under systemd: a crash loop)
            self.log.event("internal_error", error=f"{type(exc).__name__}: {exc}", hint="please report it; retrying")
            traceback.print_exc(file=sys.stderr)
            now = datetime.now(UTC).isoformat(timespec="seconds")
            run = Run(now, trigger, "partial", message=f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self.pass_started = None
        run.seconds = round(time.monotonic() - started, 4)
        self.runs = [*self.runs, run][-KEEP_RUNS:]
        self.metrics.record(run, good_revision=self.last_good_revision)
        self.log.event(
            "reconciled",
            trigger=trigger,
            result=run.result,
            revision=run.revision[:16],
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
        if self.fleet is None:
            return
        events = notifying.run_events(self.seen_run, run, self.fleet, str(self.root), self.metrics.host)
        self.seen_run = run
        if self.options.health and run.result not in ("source-error",):
            try:
                checked = health.check(self.root, self.fleet, reads=observing.HomeReads(self.root, self.pass_cache))
            except (ControllerError, OSError) as exc:
                self.log.event("health_error", message=str(exc))
            else:
                events += notifying.health_events(
                    self.seen_findings, checked.findings, self.fleet, str(self.root), self.metrics.host
                )
                self.health = checked
                self.seen_findings = checked.findings
                self.metrics.observe_health(checked)
        if self.notifier is not None:
            for found in events:
                self.notifier.post(found)

    def _configure_webhooks(self, state: desired.DesiredState) -> None:
        if self.notifier is None or state.notifications == self.webhooks:
            return
        targets, problems = notifying.targets(state)
        for problem in problems:
            self.log.event("notify_config_error", message=problem)
        self.notifier.configure(targets)
        self.webhooks = state.notifications

    def _reconcile(self, trigger: str) -> Run:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        try:
            snap = self._snapshot()
        except SourceError as exc:
            failed = "interrupted" if self.stop.is_set() else "source-error" if exc.transient else "stalled"
            return Run(now, trigger, failed, message=str(exc))
        if snap.revision == self.stalled_revision:
            return Run(now, trigger, "stalled", snap.revision, message="still waiting for the source to change")
        try:
            result = reading.load_paths(snap.paths, recursive=snap.recursive, fleet=self.options.fleet, skip=self.root)
        except ControllerError as exc:  # e.g. the folder no longer holds any manifest: stall, do not crash
            self.stalled_revision = snap.revision
            return Run(now, trigger, "stalled", snap.revision, message=f"cannot read the manifests: {exc}")
        if result.errors or result.state is None:
            self.stalled_revision = snap.revision
            first = "; ".join(d.render() for d in result.errors[:3]) or "no manifest documents"
            return Run(
                now,
                trigger,
                "stalled",
                snap.revision,
                message=f"invalid manifests, nothing applied ({len(result.errors)} error(s)): {first}",
            )
        state = desired.for_host(result.state, reading.selected_host(self.options.host, result.state))
        self.fleet = state.fleet
        self.metrics.observe_slice(state.fleet, list(state.bots))
        self._configure_webhooks(state)
        self.pass_cache = self.observations.begin_pass()  # engine/observecache.py
        try:
            run = self._converge(now, trigger, snap, state, result)
        except LockHeld as exc:
            return Run(now, trigger, "busy", snap.revision, state.digest, message=str(exc))
        except ConflictError as exc:
            self.stalled_revision = snap.revision
            return Run(now, trigger, "conflict", snap.revision, state.digest, message=str(exc))
        except ControllerError as exc:
            return Run(now, trigger, "partial", snap.revision, state.digest, message=str(exc))
        finally:
            self.observations.end_pass(self.pass_cache)
        self.stalled_revision = None
        if run.result in ("applied", "in-sync", "drift"):
            self.last_good_revision = snap.revision
            if isinstance(self.source, GitSource):
                self.source.last_good = snap.revision
        return run

    def _snapshot(self) -> Snapshot:
        if isinstance(self.source, GitSource):
            return self.source.snapshot(allow_rewrite=self.options.allow_history_rewrite)
        return self.source.snapshot()

    def _converge(
        self, now: str, trigger: str, snap: Snapshot, state: desired.DesiredState, loaded: validating.ValidationResult
    ) -> Run:
        opts = self.options
        files = loaded.files
        last = records.load(self.root, state.fleet).last_apply or {}
        # The digest is this machine's slice (desired.for_host): a commit that only touches other
        # machines moves the revision but not the digest, and is planned like an interval run.
        manifests_changed = last.get("digest") != state.digest
        revision_moved = last.get("revision", snap.revision) != snap.revision
        must_apply = opts.self_heal or manifests_changed or last.get("result") != RunResult.OK
        drift: list[str] = []
        pending_only = False
        if not must_apply:
            planned = reconciling.plan_home(self.root, state, files, options=self.plan_options, cache=self.pass_cache)
            drift = _changed_objects(planned)
            self.metrics.observe_routines(_routine_health(planned))
            # A new revision whose pending changes are no hand edit (a secret file's new value) applies.
            pending_only = bool(drift) and revision_moved and not planned.plan.drifted
        if not must_apply and not pending_only:
            unsettled = _unsettled(planned)  # a pass that could not check everything is not in sync
            if unsettled is not None:
                failed = len(planned.plan.errors)
                return Run(
                    now, trigger, unsettled, snap.revision, state.digest, failed=failed, drift=drift, message=_causes(planned)
                )
            if drift:
                self.log.event("drift_detected", objects=drift, hint="apply, or run watch with --self-heal")
                return Run(
                    now,
                    trigger,
                    "drift",
                    snap.revision,
                    state.digest,
                    drift=drift,
                    message=f"{len(drift)} object(s) differ from the manifests (reported, not corrected)",
                )
            return Run(now, trigger, "in-sync", snap.revision, state.digest)
        planned, results = reconciling.apply_once(
            self.root,
            state,
            files,
            options=self.plan_options,
            lock_timeout=opts.lock_timeout,
            revision=snap.revision,
            should_stop=self.stop.is_set,
            snapshot=history.snapshot(
                loaded,
                fleet_arg=opts.fleet,
                host=reading.selected_host(opts.host, loaded.state) if loaded.state else None,
                command="watch",
                revision=snap.revision if isinstance(self.source, GitSource) else None,
            ),
            on_progress=ProgressLog(self.log),
            cache=self.pass_cache,
        )
        if results.replaced_dir:
            self.log.event("replaced_kept", files=len(results.replaced), folder=results.replaced_dir)
        self.metrics.observe_routines(_routine_health(planned))
        failed = len(results.failed) + len(planned.plan.errors)
        pruned = [o.change.key for o in results.done if o.change.action is Action.DELETE]
        if results.abandoned:
            return Run(
                now,
                trigger,
                "interrupted",
                snap.revision,
                state.digest,
                len(results.done),
                failed,
                message="stopped between two objects on request; the next run finishes the job",
            )
        if failed:
            return Run(
                now,
                trigger,
                "partial",
                snap.revision,
                state.digest,
                len(results.done),
                failed,
                message=_causes(planned, [f"{o.change.key}: {o.error}" for o in results.failed]),
                pruned=pruned,
            )
        result = "applied" if results.outcomes else "in-sync"
        return Run(now, trigger, result, snap.revision, state.digest, len(results.done), pruned=pruned)

    # --- status file ------------------------------------------------------------------------------

    def write_status(self) -> None:
        last = self.runs[-1] if self.runs else None
        payload = {
            "schemaVersion": 1,
            "pid": os.getpid(),
            "source": source_label(self.source),
            "fleet": self.fleet,
            "host": self.options.host,
            "mode": "self-heal" if self.options.self_heal else "report",
            "interval": self.options.interval,
            "updated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "last_result": last.result if last else None,
            "last_revision": last.revision if last else None,
            "last_good_revision": self.last_good_revision,
            "message": last.message if last else "",
            "drift": last.drift if last else [],
            "next_run_at": datetime.fromtimestamp(self.next_run_at, UTC).isoformat(timespec="seconds")
            if self.next_run_at
            else None,
            "runs": [asdict(r) for r in self.runs],
            "notified": {
                "result": self.seen_run.result if self.seen_run else None,
                "message": self.seen_run.message if self.seen_run else "",
                "drift": self.seen_run.drift if self.seen_run else [],
                "findings": [f.to_json() for f in self.seen_findings],
            },
        }
        path = state_dir(self.root) / STATUS_FILE
        try:
            check_state_path(self.root, path)
            fsio.make_dirs(path.parent, mode=0o700)
            fsio.atomic_write_text(path, json.dumps(payload, indent=1) + "\n", mode=0o600)
        except ControllerError as exc:  # a full disk must not end the reconciler; the log says it
            self.log.event("status_not_written", error=str(exc))

    # --- the loop --------------------------------------------------------------------------------

    def delay_after(self, run: Run) -> float:
        if run.transient or run.result == "busy":
            self.failures += 1
            self.metrics.failures = self.failures
            return min(self.options.interval, self.options.retry_min * 2 ** (self.failures - 1))
        self.failures = 0
        self.metrics.failures = 0
        spread = self.options.interval * self.options.jitter
        return max(0.05, self.options.interval + random.uniform(-spread, spread))

    def loop(self) -> None:
        watcher = self._start_watcher()
        self.observations.start(self.stop)
        trigger = "start"
        try:
            while not self.stop.is_set():
                run = self.reconcile(trigger)
                delay = self.delay_after(run)
                self.next_run_at = time.time() + delay
                self.write_status()
                woke = self.wake.wait(delay)
                self.wake.clear()
                if self.stop.is_set():
                    break
                trigger = "change" if woke else ("retry" if self.failures else "interval")
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
        roots = [str(r) for r in self.source.watch_roots()]
        thread = threading.Thread(target=self._watch, args=(roots,), name="hermes-fleet-watch", daemon=True)
        thread.start()
        return thread

    def relevant(self, path: str) -> bool:
        """A change that can alter the manifests: not the home's own writes, not an editor's temp file."""
        if not path.endswith(WATCH_SUFFIXES) or is_editor_temp(path):
            return False
        resolved = Path(path).resolve()
        if resolved.is_relative_to(self.root.resolve()):
            return False  # the home may sit beside the manifests; its writes are ours
        assert isinstance(self.source, LocalSource)
        for raw in self.source.paths:
            base = Path(raw).resolve()
            if base.is_dir() and (resolved.parent == base or (self.source.recursive and resolved.is_relative_to(base))):
                return True
            if not base.is_dir() and resolved.parent == base.parent:
                return True  # a manifest file, or a soul/avatar file beside it
        return False

    def _watch(self, roots: list[str]) -> None:
        import watchfiles

        def relevant(_change: Any, path: str) -> bool:
            return self.relevant(path)

        for changes in watchfiles.watch(
            *roots,
            watch_filter=relevant,
            stop_event=self.stop,
            debounce=self.options.debounce_ms,
            step=50,
            raise_interrupt=False,
            rust_timeout=500,
            yield_on_timeout=False,
        ):
            files = sorted({os.path.basename(p) for _, p in changes})
            self.log.event("source_changed", files=files)
            self.wake.set()


@contextlib.contextmanager
def reconciler_lock(root: Path) -> Iterator[None]:
    """One reconciler per home for its whole life; a second one exits 3 at once."""
    path = state_dir(root) / "watch.lock"
    fd = locking.open_lock_file(root, path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise ConflictError(
                f"another hermes-fleet watch is running on {root} (pid {holder})",
                hint="stop it first; two reconcilers on one home would fight",
            ) from None
        with fsio.mapped("write the lock file", path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


HEALTH_CODES = (
    "routine-failed",
    "routine-delivery-failed",
    "gateway-down",
    "ticker-stalled",
    "ticker-failing",
    "credentials-missing",
    "mcp-unavailable",
)


def _health_families(checked: health_core.Health, names: list[str], base: list[str]) -> Iterator[Any]:
    """The runtime health check (docs/watch.md, "Runtime health") as gauges, per code and per bot."""
    from prometheus_client.core import GaugeMetricFamily

    def per_bot(name: str, doc: str, values: list[tuple[str, float]]) -> Any:
        family = GaugeMetricFamily(name, doc, labels=[*names, "bot"])
        for bot, value in values:
            family.add_metric([*base, bot], value)
        return family

    counts: dict[str, int] = {}
    for finding in checked.findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    findings = GaugeMetricFamily(
        "hermes_fleet_health_findings", "Runtime health problems by code (status shows each).", labels=[*names, "code"]
    )
    for code in HEALTH_CODES:
        findings.add_metric([*base, code], counts.get(code, 0))
    yield findings
    failing = {f.subject for f in checked.findings if f.code == "routine-failed"}
    missing = {f.subject for f in checked.findings if f.code == "credentials-missing"}
    yield per_bot(
        "hermes_fleet_gateway_up", "1 when a gateway runs for the bot.", [(b.bot, int(b.gateway.running)) for b in checked.bots]
    )
    yield per_bot(
        "hermes_fleet_cron_ticker_heartbeat_age_seconds",
        "Seconds since the bot's cron ticker last beat.",
        [(b.bot, age) for b in checked.bots if (age := checked.age(b.heartbeat)) is not None],
    )
    yield per_bot(
        "hermes_fleet_routines_failed",
        "Routines whose last run failed, per bot.",
        [(b.bot, sum(1 for r in b.routines if f"routine/{r.routine}" in failing)) for b in checked.bots],
    )
    yield per_bot(
        "hermes_fleet_credentials_missing",
        "1 when the bot's model provider finds no credential.",
        [(b.bot, int(f"bot/{b.bot}" in missing)) for b in checked.bots],
    )


def _unsettled(planned: reconciling.Planned) -> str | None:
    """The result of a report-only pass whose plan holds what apply would refuse or fail on: an
    object it could not check (a room while the gateway is unreachable: partial, retried) or a
    conflict (another owner took a bot); None when the plan says what the home is."""
    if planned.plan.errors:
        return "partial"
    if planned.plan.conflicts:
        return "conflict"
    return None


def _causes(planned: reconciling.Planned, failed: list[str] | None = None) -> str:
    """The first three reasons a pass did not settle, for the run's message."""
    causes = [*(failed or []), *(f"{c.key}: {c.reason}" for c in [*planned.plan.errors, *planned.plan.conflicts])]
    return "; ".join(causes[:3])


def _changed_objects(planned: reconciling.Planned) -> list[str]:
    return [c.key for c in planned.plan.changes if c.action in WRITING_ACTIONS]


def _routine_health(planned: reconciling.Planned) -> dict[tuple[str, str], bool]:
    """(bot, routine) -> whether its cron job's last run failed, for each managed routine with a job."""
    jobs = planned.inputs.observed.jobs
    out: dict[tuple[str, str], bool] = {}
    for change in planned.plan.changes:
        if change.kind is Kind.ROUTINE and change.ref:
            job = next((j for j in jobs.get(change.bot, ()) if str(j.get("id")) == change.ref), None)
            if job is not None:
                out[(change.bot, change.title)] = job.get("last_status") == "error"
    return out


def read_status(root: Path) -> dict[str, Any] | None:
    """The reconciler's status file; None when there is none, or it is unreadable or not ours."""
    path = state_dir(root) / STATUS_FILE
    try:
        check_state_path(root, path)
        data = homebounds.parse_json(bounded.read_bytes(path, fsio.MAX_STATE_BYTES).decode("utf-8"), str(path), "", "")
    except (OSError, ValueError, ContainmentError, HermesStateError):
        return None
    if not _status_shaped(data):
        return None
    if isinstance(data.get("source"), str):  # a file an older version wrote may hold a credential
        data["source"] = redact_text(data["source"])
    return data


def _status_shaped(data: Any) -> bool:
    """The types `write_status` writes, where `status` and `resume` rely on them."""
    if not isinstance(data, dict):
        return False
    runs, notified = data.get("runs") or [], data.get("notified") or {}
    return (
        _strs(data.get("drift") or [])
        and isinstance(runs, list)
        and all(isinstance(r, dict) and isinstance(r.get("at"), str) and isinstance(r.get("result"), str) for r in runs)
        and isinstance(notified, dict)
        and _strs(notified.get("drift") or [])
        and isinstance(notified.get("findings") or [], list)
    )


def _strs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def source_label(source: LocalSource | GitSource) -> str:
    """What logs and the status file call the source: paths, or the URL without credentials."""
    if isinstance(source, GitSource):
        return redact_url(source.url)
    return " ".join(source.paths)


def resume(reconciler: Reconciler, previous: dict[str, Any] | None) -> None:
    """Carry over a restart what the webhooks last heard (no repeated alert) and the last good
    revision (so a force-push made meanwhile is still caught)."""
    notified = (previous or {}).get("notified")
    if isinstance(notified, dict) and isinstance(notified.get("result"), str):
        drift = [str(d) for d in notified.get("drift") or []]
        reconciler.seen_run = Run("", "", notified["result"], message=str(notified.get("message") or ""), drift=drift)
        reconciler.seen_findings = tuple(
            health_core.Finding(str(f.get("code")), str(f.get("severity")), str(f.get("object")), str(f.get("message")))
            for f in notified.get("findings") or []
            if isinstance(f, dict)
        )
    if not previous or previous.get("source") != source_label(reconciler.source):
        return
    good = previous.get("last_good_revision")
    if isinstance(good, str) and good and isinstance(reconciler.source, GitSource):
        reconciler.last_good_revision = good
        reconciler.source.last_good = good


def overrun(reconciler: Reconciler) -> float | None:
    """Seconds the pass in progress has run past its deadline; None when none has."""
    started = reconciler.pass_started
    if started is None:
        return None
    late = time.monotonic() - started - reconciler.options.pass_deadline
    return late if late > 0 else None


STOP_GRACE = 3.0  # seconds a pass has to reach the end of an object after SIGTERM/SIGINT


def install_signals(reconciler: Reconciler, log: Log) -> None:
    """SIGTERM and SIGINT stop the loop; an apply in progress stops between two objects. A pass
    still running STOP_GRACE seconds later (held up before it applies anything: a slow secret
    command, a slow read) is interrupted the way `apply` is (exit 143 or 130), so the reconciler
    always stops within seconds (docs/watch.md#signals-and---once)."""
    received: list[int] = []

    def handle(signum: int, _frame: Any) -> None:
        log.event("stopping", signal=signal.Signals(signum).name)
        reconciler.stop.set()
        reconciler.wake.set()
        if reconciler.pass_started is not None and not received:
            received.append(signum)
            signal.setitimer(signal.ITIMER_REAL, STOP_GRACE)

    def overdue(_signum: int, _frame: Any) -> None:
        if reconciler.pass_started is None:
            return
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup on the way out must not be cut
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Terminated() if received[0] == signal.SIGTERM else KeyboardInterrupt()

    signal.signal(signal.SIGALRM, overdue)

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; any other address (or name) is reachable from elsewhere."""
    import ipaddress

    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


HEALTH_READ_TIMEOUT = 10.0  # seconds a health connection may sit without sending its request line or headers
HEALTH_CONNECTIONS = 32  # connections served at once; one past it is closed at once (docs/watch.md)


def start_health(port: int, reconciler: Reconciler, log: Log, *, bind: str = "127.0.0.1", token: str | None = None) -> Any:
    """/healthz and /metrics on `bind` (loopback by default). With a token, both need
    `Authorization: Bearer <token>`; the token is never logged. Bounded: a connection that sends
    nothing for HEALTH_READ_TIMEOUT is closed, and at most HEALTH_CONNECTIONS are served at once
    (369 idle connections held 373 threads before)."""
    import hmac
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    expected = f"Bearer {token}".encode() if token else None

    class Handler(BaseHTTPRequestHandler):
        timeout = HEALTH_READ_TIMEOUT  # the socket's timeout: an idle or trickling client is dropped

        def do_GET(self) -> None:
            if expected is not None and not hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected):
                self._send(401, b"unauthorized\n", "text/plain", {"WWW-Authenticate": 'Bearer realm="hermes-fleet"'})
                return
            if self.path == "/metrics":
                data, kind = reconciler.metrics.render(self.headers.get("Accept", ""))
                self._send(200, data, kind)
            elif self.path == "/healthz":
                last = reconciler.runs[-1].result if reconciler.runs else "starting"
                late = overrun(reconciler)
                healthy = last not in ("stalled", "conflict") and reconciler.failures < 5 and late is None
                report: dict[str, object] = {"status": "ok" if healthy else "unhealthy", "last_result": last}
                if late is not None:
                    report["overrun_seconds"] = round(late, 1)
                body = json.dumps(report) + "\n"
                self._send(200 if healthy else 503, body.encode(), "application/json")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, code: int, data: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            return  # our own log has one line per reconcile; no per-request noise

    slots = threading.BoundedSemaphore(HEALTH_CONNECTIONS)

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        daemon_threads = True
        request_queue_size = 64  # the listen backlog: a burst past the cap is accepted and closed, not left in SYN retries

        def process_request(self, request: Any, client_address: Any) -> None:
            if not slots.acquire(blocking=False):  # full: close it rather than start one more thread
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                slots.release()

    try:
        server = Server((bind, port), Handler)
    except OSError as exc:
        raise UsageError(f"cannot serve /healthz and /metrics on {bind}:{port}: {exc.strerror or exc}") from None
    threading.Thread(target=server.serve_forever, name="hermes-fleet-health", daemon=True).start()
    host = f"[{bind}]" if ":" in bind else bind
    log.event("health_listening", address=f"http://{host}:{server.server_address[1]}", auth="bearer" if token else "none")
    return server
