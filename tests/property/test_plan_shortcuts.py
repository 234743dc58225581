"""The planner's shortcuts give what its general path gives.

* `bots.diff_fields` for a profile that does not exist and was never applied (a new bot) adds
  every desired field without the per-field look-ups: the general loop, run against a profile
  that exists but holds nothing, must give the very same changes.
* `routines.next_runs_note` is worked out once per schedule, zone and `now`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import given
from hypothesis import strategies as st

from controller.core.inventory import Inventory
from controller.core.planning import bots, routines
from controller.core.types import LiveProfile
from controller.hermes import schedules

NAMES = st.one_of(
    st.from_regex(r"config:[a-z_]{1,8}(\.[a-z_]{1,8}){0,2}", fullmatch=True),
    st.from_regex(r"env:[A-Z_]{1,10}", fullmatch=True),
    st.sampled_from(["meta:title", "meta:sectionId", "profile:description", "soul", "avatar:png", "botchat", "botmode"]),
)
VALUES = st.one_of(st.text(max_size=30), st.integers(), st.booleans(), st.lists(st.text(max_size=5), max_size=3))


@given(st.dictionaries(NAMES, VALUES, max_size=25), st.data())
def test_a_new_bot_gets_what_the_general_path_gives(desired: dict[str, Any], data: st.DataObject) -> None:
    desired = {("avatar" if k.startswith("avatar:") else k): v for k, v in desired.items()}
    env_keys = sorted(k[4:] for k in desired if k.startswith("env:"))
    secret_keys = frozenset(data.draw(st.lists(st.sampled_from(env_keys), unique=True)) if env_keys else [])
    inherited = frozenset(data.draw(st.lists(st.sampled_from(sorted(desired)), unique=True)) if desired else [])
    inventory = Inventory(fleet="f", salt="s")
    absent = LiveProfile(name="b", path=Path("/h/profiles/b"), exists=False)
    empty = LiveProfile(name="b", path=Path("/h/profiles/b"), exists=True)
    fast = bots.diff_fields(desired, absent, applied={}, secret_keys=secret_keys, inventory=inventory, inherited=inherited)
    general = bots.diff_fields(desired, empty, applied={}, secret_keys=secret_keys, inventory=inventory, inherited=inherited)
    assert fast == general


class _Routine:
    def __init__(self, schedule: str) -> None:
        self.schedule = schedule


def _uncached(schedule: str, tz: Any, now: datetime) -> str:
    return routines._next_runs_note.__wrapped__(schedule, tz, now)


@given(
    st.sampled_from(["0 9 * * 1-5", "*/15 * * * *", "30 8 1 * *", "every 2h", "0 0 29 2 *", "not a schedule"]),
    st.sampled_from([None, UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("Asia/Kolkata"), timezone(timedelta(hours=-3))]),
    st.datetimes(min_value=datetime(2024, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)),
)
def test_the_next_runs_note_is_the_same_worked_out_once(schedule: str, tz: Any, now: datetime) -> None:
    note = routines.next_runs_note(_Routine(schedule), tz, now)  # type: ignore[arg-type]
    assert note == _uncached(schedule, tz, now)
    if schedule.startswith(("0 ", "*/", "30 ")):
        assert note.startswith("next runs (")
        parsed = schedules.parse(schedule)
        first = schedules.next_runs(parsed, 1, now=now.astimezone(tz) if tz is not None else now.astimezone())[0]
        assert first.strftime("%Y-%m-%d %H:%M") in note
