"""Hermes' cron schedule grammar, checked offline (pure; no clock but the one passed in).

Mirrors `parse_schedule` / `parse_duration` of hermes-agent 0.19.0 `cron/jobs.py`
(docs/hermes/cron.md#schedule-grammar): `every <N><unit>`, a 5-field numeric cron expression validated by
croniter, an ISO timestamp (one-shot), or a bare duration (one-shot from now). Used by validation
(error messages, frequency warnings, next run times) and by the routines converger.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from controller.errors import ScheduleError

_DURATION = re.compile(r"^(\d+)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$")
_CRON_FIELD = re.compile(r"^[\d*\-,/]+$")
_MULTIPLIER = {"m": 1, "h": 60, "d": 1440}
_NAMED = re.compile(r"[A-Za-z]")

GRAMMAR_HINT = (
    "use a 5-field numeric cron expression ('0 8 * * 1-5'), 'every 30m' / 'every 2h' / 'every 1d', "
    "an ISO time ('2030-01-02T03:04'), or a duration ('30m') for a one-shot"
)


@dataclass(frozen=True)
class Schedule:
    kind: str  # "cron" | "interval" | "once"
    display: str
    expr: str | None = None
    minutes: int | None = None
    run_at: datetime | None = None  # for ISO one-shots; None for a bare duration (relative)
    relative_minutes: int | None = None  # bare duration one-shot

    def as_hermes(self, now: datetime) -> dict[str, object]:
        """The `schedule` object Hermes stores in jobs.json for this schedule."""
        if self.kind == "cron":
            return {"kind": "cron", "expr": self.expr, "display": self.display}
        if self.kind == "interval":
            return {"kind": "interval", "minutes": self.minutes, "display": self.display}
        run_at = self.run_at or now + timedelta(minutes=self.relative_minutes or 0)
        return {"kind": "once", "run_at": run_at.isoformat(), "display": self.display}


def croniter_class() -> Any:
    """croniter's class, imported on first use (keeps `hermes-fleet --help` fast) and without the
    process its import starts: croniter 7 asks `platform.architecture()`, which runs `file` on
    the interpreter (10-20 ms of a 0.4 s apply), to tell a 32-bit build. The pointer size that
    croniter checks first answers that; `platform.architecture` is given it for the import only.
    """
    if not _CRONITER:
        with _CRONITER_LOCK:  # watch runs threads: one import, and one patch at a time
            if not _CRONITER:
                import platform
                import struct

                real = platform.architecture
                bits = f"{struct.calcsize('P') * 8}bit"
                platform.architecture = lambda *args, **kwargs: (bits, "")
                try:
                    from croniter import croniter
                finally:
                    platform.architecture = real
                _CRONITER.append(croniter)
    return _CRONITER[0]


_CRONITER: list[Any] = []
_CRONITER_LOCK = threading.Lock()


def parse_duration(text: str) -> int:
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise ScheduleError(f"invalid duration {text!r}; write it like '30m', '2h' or '1d'")
    return int(match.group(1)) * _MULTIPLIER[match.group(2)[0]]


def parse(text: str, *, tz: tzinfo | None = None) -> Schedule:
    """Parse `text` the way Hermes does; raise ScheduleError with a reason Hermes would give.

    Cached: a fleet repeats a few schedules across thousands of routines, and each cron
    expression costs a croniter construction (bare durations are relative, so never cached).
    """
    if _DURATION.match(text.strip().lower()):
        return _parse(text, tz)
    return _parse_cached(text, tz)


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str, tz: tzinfo | None) -> Schedule:
    return _parse(text, tz)


def _parse(text: str, tz: tzinfo | None) -> Schedule:
    schedule = text.strip()
    if not schedule:
        raise ScheduleError(f"empty schedule; {GRAMMAR_HINT}")
    lower = schedule.lower()
    if lower.startswith("every "):
        minutes = parse_duration(schedule[6:])
        if minutes <= 0:
            raise ScheduleError(f"{text!r} repeats every 0 minutes; use at least 'every 1m'")
        return Schedule(kind="interval", minutes=minutes, display=f"every {minutes}m")
    if schedule.startswith("@"):
        raise ScheduleError(
            f"{text!r}: Hermes does not accept cron macros like @daily; write the five fields "
            "instead, e.g. '0 0 * * *' for @daily"
        )
    parts = schedule.split()
    if len(parts) >= 5 and all(_CRON_FIELD.match(p) for p in parts[:5]):
        return _parse_cron(schedule)
    if len(parts) >= 5 and any(_NAMED.search(p) for p in parts[:5]):
        raise ScheduleError(
            f"{text!r}: Hermes accepts only numeric cron fields, not names like MON or JAN; "
            "use 0-6 for days of the week (0 = Sunday) and 1-12 for months"
        )
    if "T" in schedule or re.match(r"^\d{4}-\d{2}-\d{2}", schedule):
        return _parse_iso(schedule, tz)
    try:
        minutes = parse_duration(schedule)
    except ScheduleError:
        raise ScheduleError(f"invalid schedule {text!r}; {GRAMMAR_HINT}") from None
    return Schedule(kind="once", relative_minutes=minutes, display=f"once in {schedule}")


def _parse_cron(expr: str) -> Schedule:
    croniter = croniter_class()

    try:
        croniter(expr)
    except Exception as exc:  # croniter raises several unrelated types
        raise ScheduleError(f"invalid cron expression {expr!r}: {exc}") from None
    return Schedule(kind="cron", expr=expr, display=expr)


def _parse_iso(text: str, tz: tzinfo | None) -> Schedule:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ScheduleError(f"invalid timestamp {text!r}: {exc}; write it like 2030-01-02T03:04") from None
    if when.tzinfo is None:
        # Hermes reads a naive time in its configured `timezone` (cron/jobs.py, #51021).
        when = when.replace(tzinfo=tz or UTC)
    return Schedule(kind="once", run_at=when, display=f"once at {when.strftime('%Y-%m-%d %H:%M')}")


def next_runs(schedule: Schedule, count: int, *, now: datetime) -> list[datetime]:
    """The next `count` run times after `now` (one at most for one-shots)."""
    if schedule.kind == "cron" and schedule.expr is not None:
        # Five fields fire on whole minutes, so the runs after `now` are the runs after its
        # minute (a sixth field, seconds, keeps the exact time). The zone is part of the key:
        # aware datetimes of one instant in two zones are equal (and hash alike), but croniter
        # answers each in its own zone's wall clock.
        start = now.replace(second=0, microsecond=0) if len(schedule.expr.split()) == 5 else now
        return list(_cron_runs(schedule.expr, start, now.tzinfo, count))
    if schedule.kind == "interval":
        step = timedelta(minutes=schedule.minutes or 0)
        return [now + step * (i + 1) for i in range(count)]
    if schedule.run_at is not None:
        return [schedule.run_at] if schedule.run_at > now else []
    return [now + timedelta(minutes=schedule.relative_minutes or 0)]


@functools.lru_cache(maxsize=4096)
def _cron_runs(expr: str, now: datetime, zone: tzinfo | None, count: int) -> tuple[datetime, ...]:
    # Cached: a fleet repeats a few expressions across thousands of routines, and one run asks
    # for each within the same minute (`now` is cut to it); croniter costs about 0.3 ms a call.
    it = croniter_class()(expr, now)
    return tuple(it.get_next(datetime) for _ in range(count))


def at_most_hourly(schedule: Schedule) -> bool:
    """True for a five-field cron expression whose minute is one number: it runs at most once an
    hour, so no gap between its runs is shorter (the frequency warning needs no croniter runs)."""
    parts = schedule.expr.split() if schedule.kind == "cron" and schedule.expr else []
    return len(parts) == 5 and re.fullmatch(r"[0-9]{1,2}", parts[0]) is not None


def shortest_gap_minutes(schedule: Schedule, *, now: datetime, samples: int = 12) -> float | None:
    """The shortest gap between consecutive runs (None for one-shots): frequency warnings."""
    if schedule.kind == "interval":
        return float(schedule.minutes or 0)
    if schedule.kind != "cron":
        return None
    runs = next_runs(schedule, samples, now=now)
    gaps = [(b - a).total_seconds() / 60 for a, b in itertools.pairwise(runs)]
    return min(gaps) if gaps else None
