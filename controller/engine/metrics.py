"""The reconciler's /metrics: a Prometheus collector over what the last passes found (docs/watch.md#metrics)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from controller.codes import HealthCode, WatchResult
from controller.core import health as health_core
from controller.core.watching import RESULTS, Run


class Metrics:
    """The reconciler's metrics, exposed with the Prometheus client library.

    A custom collector: the values are kept here and turned into metric families at scrape time, so
    every sample carries this machine's `fleet` and `host` labels (the fleet is known only once the
    manifests have been read). Per bot: drift; per routine: whether its last run failed (Hermes'
    `last_status`, docs/hermes/cron.md#job-record, as read by the last run).
    """

    def __init__(self, host: str, interval: float = 0.0, selection: str = "") -> None:
        from prometheus_client import CollectorRegistry

        self.lock = threading.Lock()
        self.host = host
        self.fleet = ""
        self.interval = interval
        self.selection = selection  # --bot/-l as given: the per-bot series are of these bots only
        self.runs: dict[str, int] = dict.fromkeys(RESULTS, 0)
        self.last_success = 0.0
        self.last_run_at = 0.0
        self.last_seconds = 0.0
        self.drifted = 0
        self.stalled = 0
        self.failures = 0
        self.suspended = 0
        self.revision = ""
        self.bots: tuple[str, ...] = ()
        self.drift: frozenset[str] = frozenset()
        self.routines: dict[tuple[str, str], bool] = {}  # (bot, routine) -> its last run failed
        self.health: health_core.Health | None = None  # the last runtime health check (engine.health)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def record(self, run: Run, *, now: float, failures: int, good_revision: str | None = None) -> None:
        """One pass ended at Unix time `now`, `failures` transient failures in a row."""
        with self.lock:
            self.runs[run.result] = self.runs.get(run.result, 0) + 1
            self.last_seconds = run.seconds
            self.last_run_at = now
            self.drifted = len(run.drift)
            self.drift = frozenset(run.drift)
            self.stalled = 1 if run.result in (WatchResult.STALLED, WatchResult.CONFLICT) else 0
            self.failures = failures
            if run.result.settled or run.result is WatchResult.SUSPENDED:
                self.last_success = now
            if good_revision:
                self.revision = good_revision

    def observe_suspended(self, suspended: bool) -> None:
        with self.lock:
            self.suspended = int(suspended)

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
                "Unix time of the last run that ended applied, in-sync, drift or suspended.",
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
                "hermes_fleet_suspended",
                "1 while the home is suspended (hermes-fleet suspend): nothing is changed.",
                self.suspended,
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
            if self.selection:
                doc = "The reconciler's selectors (--bot, -l): it converges and reports on these bots only."
                info = InfoMetricFamily("hermes_fleet_selection", doc, labels=names)
                info.add_metric(base, {"selection": self.selection})
                yield info
            if self.health is not None:
                yield from _health_families(self.health, names, base)

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """The exposition the scraper asked for (Prometheus text, or OpenMetrics), and its content type."""
        from prometheus_client.exposition import choose_encoder

        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type


HEALTH_CODES = tuple(HealthCode)


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
