"""History keeps what matters: no-op applies never evict the rollback point; kept copies of hand
edits are retained by sequence, whatever the clock says. Real CLI runs on a temporary home."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from controller.engine import reconciling
from tests.integration.helpers import apply, hermes_fleet, profile, read_yaml
from tests.integration.test_history import fleet_a, fleet_b, history_files, history_json


def test_sixty_no_op_applies_leave_rollback_able_to_return_to_the_previous_fleet(home: Path, tmp_path: Path) -> None:
    a, b = fleet_a(tmp_path / "a"), fleet_b(tmp_path / "b")
    assert apply(a, home).code == 0
    assert apply(b, home).code == 0
    for _ in range(60):  # a cron'd apply: nothing to do, more runs than the 50 entries kept
        run = apply(b, home)
        assert run.code == 0, run.text
    entries = history_json(home)["entries"]
    assert [e["seq"] for e in entries] == [1, 2]
    assert entries[-1]["confirmed"]["times"] == 60 and entries[-1]["confirmed"]["command"] == "apply"
    assert "confirmed:" in hermes_fleet("history", "show", "2", "--home", home).out

    back = hermes_fleet("rollback", "--home", home, "--yes")
    assert back.code == 0, back.text
    assert read_yaml(profile(home, "alpha") / "config.yaml")["model"]["default"] == "model-a"
    assert not profile(home, "gamma").exists()  # B's extra bot went to a backup
    assert [e["seq"] for e in history_json(home)["entries"]] == [1, 2, 3]


def test_a_run_that_changes_something_or_fails_is_a_new_entry(home: Path, tmp_path: Path) -> None:
    a = fleet_a(tmp_path / "a")
    assert apply(a, home).code == 0
    soul = profile(home, "alpha") / "SOUL.md"
    soul.write_text("hand edit\n")
    assert apply(a, home).code == 0  # drift corrected: something changed
    assert len(history_files(home)) == 2
    assert apply(a, home, "--prune").code == 0  # a no-op whatever its options
    assert len(history_files(home)) == 2
    (profile(home, "beta") / "config.yaml").write_text("model: [unclosed\n")
    failed = apply(a, home)
    assert failed.code == 1, failed.text
    assert len(history_files(home)) == 3


def test_replaced_copies_are_kept_by_sequence_when_the_clock_goes_back(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_FLEET_REPLACED_KEEP", "2")
    a = fleet_a(tmp_path / "a")
    assert apply(a, home).code == 0
    soul = profile(home, "alpha") / "SOUL.md"

    class Clock(datetime):
        offset = timedelta(0)

        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def, override]
            return datetime.now(tz) + cls.offset

    monkeypatch.setattr(reconciling, "datetime", Clock)
    for i, skew in enumerate((timedelta(0), timedelta(days=-400), timedelta(days=-800))):
        Clock.offset = skew  # each run's clock is earlier than the last one's
        soul.write_text(f"hand edit {i}\n")
        run = apply(a, home)
        assert run.code == 0, run.text
        named = next(line for line in run.err.splitlines() if "is kept in" in line).rsplit("kept in ", 1)[1].split(" ")[0]
        assert (Path(named) / "profiles/alpha/SOUL.md").read_text() == f"hand edit {i}\n", named
    kept = sorted((home / ".hermes-fleet" / "replaced").iterdir())
    assert [(k / "profiles/alpha/SOUL.md").read_text() for k in kept] == ["hand edit 1\n", "hand edit 2\n"]
