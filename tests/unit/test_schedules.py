"""Hermes' cron schedule grammar, offline: what parses, what Hermes refuses (and why), next runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from controller.hermes import schedules
from controller.hermes.schedules import ScheduleError

NOW = datetime(2030, 6, 3, 12, 0, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "kind", "display", "minutes"),
    [
        pytest.param("0 8 * * 1-5", "cron", "0 8 * * 1-5", None, id="cron-weekdays"),
        pytest.param("*/15 * * * *", "cron", "*/15 * * * *", None, id="cron-step"),
        pytest.param("0 0,12 1 1-6 *", "cron", "0 0,12 1 1-6 *", None, id="cron-lists"),
        pytest.param("every 30m", "interval", "every 30m", 30, id="every-30m"),
        pytest.param("every 2h", "interval", "every 120m", 120, id="every-2h"),
        pytest.param("every 1d", "interval", "every 1440m", 1440, id="every-1d"),
        pytest.param("Every 45 minutes", "interval", "every 45m", 45, id="every-words"),
        pytest.param("  every 3 hrs ", "interval", "every 180m", 180, id="every-spaces"),
        pytest.param("30m", "once", "once in 30m", None, id="bare-duration"),
        pytest.param("2h", "once", "once in 2h", None, id="bare-hours"),
        pytest.param("2030-01-02T03:04", "once", "once at 2030-01-02 03:04", None, id="iso-naive"),
        pytest.param("2030-01-02T03:04:05Z", "once", "once at 2030-01-02 03:04", None, id="iso-z"),
        pytest.param("2030-01-02 03:04", "once", "once at 2030-01-02 03:04", None, id="iso-space"),
        pytest.param("2030-01-02", "once", "once at 2030-01-02 00:00", None, id="iso-date"),
    ],
)
def test_hermes_grammar_parses(text: str, kind: str, display: str, minutes: int | None) -> None:
    parsed = schedules.parse(text)
    assert parsed.kind == kind
    assert parsed.display == display
    assert parsed.minutes == minutes


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("@daily", "does not accept cron macros like @daily", id="macro-daily"),
        pytest.param("@reboot", "does not accept cron macros", id="macro-reboot"),
        pytest.param("0 8 * * MON", "only numeric cron fields, not names like MON", id="day-name"),
        pytest.param("0 8 1 JAN *", "only numeric cron fields", id="month-name"),
        pytest.param("0 8 * * mon-fri", "only numeric cron fields", id="day-range-names"),
        pytest.param("60 * * * *", "invalid cron expression", id="minute-60"),
        pytest.param("0 24 * * *", "invalid cron expression", id="hour-24"),
        pytest.param("every 0m", "repeats every 0 minutes", id="every-zero"),
        pytest.param("every 5s", "invalid duration", id="seconds"),
        pytest.param("every", "invalid schedule", id="every-alone"),
        pytest.param("0 8 * *", "invalid schedule", id="four-fields"),
        pytest.param("tomorrow", "invalid schedule", id="words"),
        pytest.param("   ", "empty schedule", id="blank"),
        pytest.param("2030-02-30T08:00", "invalid timestamp", id="no-such-day"),
    ],
)
def test_what_hermes_refuses_is_refused_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(ScheduleError) as info:
        schedules.parse(text)
    assert reason in str(info.value)


def test_macro_error_says_what_to_write_instead() -> None:
    with pytest.raises(ScheduleError, match=r"'0 0 \* \* \*' for @daily"):
        schedules.parse("@daily")


def test_day_name_error_says_which_numbers_to_use() -> None:
    with pytest.raises(ScheduleError, match=r"0-6 for days of the week \(0 = Sunday\)"):
        schedules.parse("0 8 * * MON")


def test_parse_duration_units() -> None:
    assert schedules.parse_duration("90m") == 90
    assert schedules.parse_duration("1 hour") == 60
    assert schedules.parse_duration("2 DAYS") == 2880
    with pytest.raises(ScheduleError, match="write it like '30m'"):
        schedules.parse_duration("1w")


def test_naive_iso_time_uses_the_given_timezone() -> None:
    berlin = timezone(timedelta(hours=2))
    assert schedules.parse("2030-01-02T03:04", tz=berlin).run_at == datetime(2030, 1, 2, 3, 4, tzinfo=berlin)
    assert schedules.parse("2030-01-02T03:04").run_at == datetime(2030, 1, 2, 3, 4, tzinfo=UTC)
    offset = schedules.parse("2030-01-02T03:04+05:00", tz=berlin).run_at
    assert offset.utcoffset() == timedelta(hours=5)


def test_next_runs_of_a_cron_schedule() -> None:
    runs = schedules.next_runs(schedules.parse("0 8 * * 1-5"), 3, now=NOW)
    assert runs == [
        datetime(2030, 6, 4, 8, 0, tzinfo=UTC),
        datetime(2030, 6, 5, 8, 0, tzinfo=UTC),
        datetime(2030, 6, 6, 8, 0, tzinfo=UTC),
    ]


def test_next_runs_of_an_interval_and_one_shots() -> None:
    assert schedules.next_runs(schedules.parse("every 2h"), 2, now=NOW) == [
        NOW + timedelta(hours=2),
        NOW + timedelta(hours=4),
    ]
    assert schedules.next_runs(schedules.parse("30m"), 5, now=NOW) == [NOW + timedelta(minutes=30)]
    assert schedules.next_runs(schedules.parse("2031-01-01T00:00"), 5, now=NOW) == [datetime(2031, 1, 1, tzinfo=UTC)]
    assert schedules.next_runs(schedules.parse("2020-01-01T00:00"), 5, now=NOW) == []


@pytest.mark.parametrize(
    ("text", "gap"),
    [
        pytest.param("* * * * *", 1.0, id="every-minute"),
        pytest.param("*/5 * * * *", 5.0, id="every-five"),
        pytest.param("0,2 * * * *", 2.0, id="uneven-pair"),
        pytest.param("0 8 * * *", 1440.0, id="daily"),
        pytest.param("every 90m", 90.0, id="interval"),
        pytest.param("30m", None, id="one-shot"),
    ],
)
def test_shortest_gap(text: str, gap: float | None) -> None:
    assert schedules.shortest_gap_minutes(schedules.parse(text), now=NOW) == gap


def test_as_hermes_gives_the_jobs_json_schedule_object() -> None:
    assert schedules.parse("0 8 * * 1-5").as_hermes(NOW) == {
        "kind": "cron",
        "expr": "0 8 * * 1-5",
        "display": "0 8 * * 1-5",
    }
    assert schedules.parse("every 2h").as_hermes(NOW) == {
        "kind": "interval",
        "minutes": 120,
        "display": "every 120m",
    }
    once = schedules.parse("30m").as_hermes(NOW)
    assert once == {
        "kind": "once",
        "run_at": (NOW + timedelta(minutes=30)).isoformat(),
        "display": "once in 30m",
    }


@pytest.mark.parametrize("expr", ["* * * * *", "*/7 * * * *", "0 8 * * 1-5", "30 2 * * 0", "15 */3 * * *"])
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
def test_cached_cron_runs_equal_croniter_from_the_exact_time(expr: str, zone: str) -> None:
    """next_runs caches by the minute of `now`; croniter from the exact second must agree,
    across DST changes too (2026-03-29 in Berlin, 2026-11-01 in New York)."""
    from zoneinfo import ZoneInfo

    from croniter import croniter

    tz = ZoneInfo(zone)
    for start in (datetime(2026, 3, 29, 1, 59, 59, 999999), datetime(2026, 11, 1, 1, 30, 0), datetime(2026, 6, 1, 8, 0)):
        for seconds in (0, 1, 30, 59.5):
            now = (start + timedelta(seconds=seconds)).replace(tzinfo=tz)
            it = croniter(expr, now)
            assert schedules.next_runs(schedules.parse(expr), 4, now=now) == [it.get_next(datetime) for _ in range(4)]


def test_cached_cron_runs_keep_each_zone_for_the_same_instant() -> None:
    """One instant in two zones is one key for a dict of datetimes; the runs differ by zone."""
    from zoneinfo import ZoneInfo

    utc = datetime(2026, 12, 1, 23, 0, tzinfo=UTC)
    kolkata = utc.astimezone(ZoneInfo("Asia/Kolkata"))
    assert utc == kolkata
    nine = schedules.parse("0 9 * * *")
    assert schedules.next_runs(nine, 1, now=utc)[0].isoformat() == "2026-12-02T09:00:00+00:00"
    assert schedules.next_runs(nine, 1, now=kolkata)[0].isoformat() == "2026-12-02T09:00:00+05:30"


def test_a_seconds_field_keeps_the_exact_time() -> None:
    """Hermes accepts a sixth cron field (croniter's seconds): its runs depend on the second."""
    from croniter import croniter

    every_ten = schedules.parse("* * * * * */10")
    for second in (0, 5, 31):
        now = datetime(2026, 12, 1, 8, 0, second, tzinfo=UTC)
        it = croniter("* * * * * */10", now)
        assert schedules.next_runs(every_ten, 3, now=now) == [it.get_next(datetime) for _ in range(3)]


@pytest.mark.parametrize(
    ("text", "hourly"),
    [
        ("0 8 * * 1-5", True),
        ("45 * * * *", True),
        ("*/5 * * * *", False),
        ("0,30 * * * *", False),
        ("0-4 * * * *", False),
        ("0 8 * * * */10", False),  # a sixth field: seconds
        ("every 2h", False),
        ("30m", False),
    ],
)
def test_at_most_hourly_agrees_with_the_shortest_gap(text: str, hourly: bool) -> None:
    schedule = schedules.parse(text)
    assert schedules.at_most_hourly(schedule) is hourly
    gap = schedules.shortest_gap_minutes(schedule, now=NOW)
    if hourly:
        assert gap is not None and gap >= 60


def test_croniter_is_imported_without_starting_a_process() -> None:
    """croniter's import asks platform.architecture(), which runs `file` on the interpreter; the
    import through croniter_class answers it from the pointer size instead (a fresh interpreter)."""
    import subprocess
    import sys

    code = (
        "import platform, subprocess, sys\n"
        "started = []\n"
        "real_init = subprocess.Popen.__init__\n"
        "def spy(self, *a, **k):\n"
        "    started.append(a[0] if a else k.get('args'))\n"
        "    real_init(self, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "real_arch = platform.architecture\n"
        "from controller.hermes import schedules\n"
        "cls = schedules.croniter_class()\n"
        "assert cls is sys.modules['croniter'].croniter\n"
        "assert platform.architecture is real_arch\n"
        "print(started)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
