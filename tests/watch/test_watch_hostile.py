"""A hostile manifest never ends the reconciler: it stalls (nothing applied), and the next good
revision applies. Before the bounds, an integer longer than Python's conversion limit raised a
ValueError out of the loader and the reconciler exited (under systemd: a crash loop)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.watch.harness import cli, read_status, title, write_fleet

HUGE = "9" * 5000  # over Python's 4,300-digit int conversion limit


def hostile(path: Path) -> None:
    path.write_text(
        "apiVersion: hermes-fleet/v1\nkind: Fleet\nmetadata: {name: acme}\n"
        f"spec:\n  bots:\n    - name: alpha\n      config: {{big: {HUGE}}}\n",
        encoding="utf-8",
    )


def test_once_stalls_on_a_huge_integer(user: Path, manifests: Path, home: Path) -> None:
    hostile(manifests / "fleet.yaml")
    run = cli(user, "watch", "--once", "-f", manifests, "--home", home)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    status = json.loads((home / ".hermes-fleet" / "watch-status.json").read_text(encoding="utf-8"))
    assert status["last_result"] == "stalled" and "out of range" in status["message"]
    assert not (home / "profiles").exists()


def test_the_loop_survives_a_hostile_revision_and_applies_the_next_good_one(spawn, manifests: Path, home: Path) -> None:
    fleet = write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "One"}])
    watch = spawn("-f", manifests, "--home", home, "--interval", "300")
    assert watch.wait_for("reconciled", trigger="start")["result"] == "applied", watch.transcript()
    hostile(fleet)
    stalled = watch.wait_until(lambda e: e["event"] == "reconciled" and e["result"] == "stalled", what="a stalled run")
    assert "out of range" in stalled["message"], watch.transcript()
    assert title(home, "alpha") == "One"
    write_fleet(fleet, [{"name": "alpha", "title": "Two"}])
    applied = watch.wait_until(lambda e: e["event"] == "reconciled" and e["result"] == "applied", what="the fix applied")
    assert applied["changed"] == 1, watch.transcript()
    assert title(home, "alpha") == "Two"
    assert read_status(home, lambda s: s["last_result"] == "applied")["runs"][-2]["result"] == "stalled"
    assert "Traceback" not in watch.stderr
    assert watch.stop() == 0
