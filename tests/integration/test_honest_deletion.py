"""Honest deletion: what apply says it kept is kept, and the prune guard does what docs/cli.md says."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.helpers import apply, hermes_fleet, profile, write_fleet

ROUTINE = {"name": "digest", "schedule": "0 8 * * *", "prompt": "Digest"}


def test_a_pruned_routine_is_reported_deleted_and_a_pruned_bot_backed_up(home: Path, manifests: Path) -> None:
    bots = [{"name": f"b{i}", "routines": [ROUTINE] if i == 0 else []} for i in range(4)]
    assert apply(write_fleet(manifests, bots), home).code == 0
    bots[0]["routines"] = []
    run = apply(write_fleet(manifests, bots[:3]), home, "--prune")  # 1 bot of 4: within the guard
    assert run.code == 0, run.text
    assert "routine/b0/digest: deleted\n" in run.out and "routine/b0/digest: deleted (backed up)" not in run.out, run.out
    assert "bot/b3: deleted (backed up)" in run.out
    backups = hermes_fleet("restore", "--home", home, "-o", "json").json()["backups"]
    assert [b["profile"] for b in backups] == ["b3"]  # the bot's backup exists; the routine has none
    jobs = json.loads((profile(home, "b0") / "cron" / "jobs.json").read_text())["jobs"]
    assert jobs == []  # the job is gone: "deleted" says exactly that


def test_deleting_a_fleets_only_bot_needs_yes(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests, [{"name": "solo"}]), home).code == 0
    empty = write_fleet(manifests, [])
    refused = apply(empty, home, "--prune")
    assert refused.code == 3 and "every bot of the fleet" in refused.text and "--yes" in refused.text, refused.text
    assert profile(home, "solo").is_dir()
    done = apply(empty, home, "--prune", "--yes")
    assert done.code == 0 and "bot/solo: deleted (backed up)" in done.out, done.text
    assert not profile(home, "solo").exists()


def test_more_than_a_quarter_needs_yes_and_a_quarter_does_not(home: Path, manifests: Path) -> None:
    bots = [{"name": f"b{i}"} for i in range(4)]
    assert apply(write_fleet(manifests, bots), home).code == 0
    two = apply(write_fleet(manifests, bots[:2]), home, "--prune")  # 2 of 4: more than a quarter
    assert two.code == 3 and "prune would delete 2 of 4 bots" in two.text, two.text
    one = apply(write_fleet(manifests, bots[:3]), home, "--prune")  # 1 of 4: a quarter
    assert one.code == 0, one.text
