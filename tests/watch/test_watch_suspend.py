"""`hermes-fleet suspend` / `resume` against a real temp home: the real CLI as subprocesses, the real
reconciler (tests/watch/harness.py), its /metrics over loopback and a real webhook receiver.

A suspended home is planned and reported but never changed: watch's passes end `suspended`,
/metrics says so, the webhooks hear it once; apply and rollback refuse (exit 3) naming who, when
and why, unless --force; status shows it."""

from __future__ import annotations

import getpass
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.watch.harness import cli, http_get, sample, title, write_fleet
from tests.watch.test_notifications import Receiver, manifest_with_hooks

WHO = f"{getpass.getuser()}@{socket.gethostname()}"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _files(home: Path) -> dict[str, bytes]:
    """Every file of the home outside our own state folder, with its bytes."""
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".hermes-fleet" not in p.parts
    }


def test_a_suspended_home_is_reported_never_changed_and_resume_applies(
    spawn, user: Path, manifests: Path, home: Path, receiver: Receiver
) -> None:
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}, "events": ["suspended", "resumed"]}]
    manifest_with_hooks(manifests, [{"name": "alpha", "title": "Alpha"}], hooks)
    watch = spawn("-f", manifests, "--home", home, "--interval", "0.3", "--health-port", "0", OPS_HOOK=receiver.url)
    port = int(watch.wait_for("health_listening")["address"].rsplit(":", 1)[1])
    watch.wait_for("reconciled", timeout=30, result="applied")
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_suspended") == 0

    done = cli(user, "suspend", "--home", home, "--reason", "disk swap")
    assert done.returncode == 0, done.stderr
    assert f"suspended by {WHO} at " in done.stdout and "disk swap" in done.stdout
    manifest_with_hooks(manifests, [{"name": "alpha", "title": "Beta"}], hooks)  # a change that would apply
    run = watch.wait_until(
        lambda e: e["event"] == "reconciled" and e["result"] == "suspended" and bool(e["drift"]),
        timeout=30,
        what="the change held back",
    )  # a pass between `suspend` and the edit is suspended too, with nothing to hold back
    assert run["drift"] == ["bot/alpha"], watch.transcript()
    assert (
        f"suspended by {WHO}" in run["message"] and "disk swap" in run["message"] and "1 object(s) would change" in run["message"]
    )
    time.sleep(1.2)  # several suspended passes
    assert title(home, "alpha") == "Alpha"  # nothing changed
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_suspended") == 1
    code, _, body = http_get(port, "/healthz")
    assert code == 200 and json.loads(body)["last_result"] == "suspended"
    assert [b["event"] for b in receiver.wait(1)] == ["suspended"]  # once, not every pass
    assert "disk swap" in receiver.bodies[0]["summary"]

    status = cli(user, "status", "--home", home)
    assert f"Suspended by {WHO} at " in status.stdout and "disk swap" in status.stdout, status.stdout
    assert "last run: suspended" in status.stdout

    assert cli(user, "resume", "--home", home).returncode == 0
    watch.wait_for("reconciled", timeout=30, result="applied")
    assert title(home, "alpha") == "Beta"
    assert sample(http_get(port, "/metrics")[2], "hermes_fleet_suspended") == 0
    assert [b["event"] for b in receiver.wait(2)] == ["suspended", "resumed"]
    assert watch.stop() == 0


def test_watch_once_on_a_suspended_home_changes_nothing_and_exits_0(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    assert cli(user, "watch", "--once", "-f", manifests, "--home", home).returncode == 0
    assert cli(user, "suspend", "--home", home).returncode == 0
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Changed"}, {"name": "beta", "title": "New"}])
    before = _files(home)
    once = cli(user, "watch", "--once", "-f", manifests, "--home", home)
    assert once.returncode == 0, once.stdout + once.stderr
    assert "result=suspended" in once.stdout and "2 object(s) would change" in once.stdout
    assert _files(home) == before
    status = json.loads((home / ".hermes-fleet" / "watch-status.json").read_text())
    assert status["last_result"] == "suspended" and status["drift"] == ["bot/alpha", "bot/beta"]


def test_apply_and_rollback_refuse_a_suspended_home_unless_forced(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Beta"}])
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    assert cli(user, "suspend", "--home", home, "--reason", "migrating the gateway").returncode == 0
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Gamma"}])
    before = _files(home)

    refused = cli(user, "apply", "-f", manifests, "--home", home)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert f"is suspended by {WHO} at " in refused.stderr and "migrating the gateway" in refused.stderr
    assert "apply refused, nothing was changed" in refused.stderr and "hermes-fleet resume" in refused.stderr
    assert "--force" in refused.stderr and "Traceback" not in refused.stderr
    back = cli(user, "rollback", "--home", home, "--yes")
    assert back.returncode == 3 and "rollback refused" in back.stderr, back.stdout + back.stderr
    restore = cli(user, "restore", "--home", home, "20260101-000000-alpha")
    assert restore.returncode == 3 and "restore refused" in restore.stderr, restore.stdout + restore.stderr
    forced_restore = cli(user, "restore", "--home", home, "20260101-000000-alpha", "--force")
    assert forced_restore.returncode == 2 and "no such backup" in forced_restore.stderr, forced_restore.stderr  # past the refusal
    assert _files(home) == before

    plan = cli(user, "plan", "-f", manifests, "--home", home, "--detailed-exitcode")
    assert plan.returncode == 4 and "apply would be refused (exit 3) without --force" in plan.stderr, plan.stderr
    dry = cli(user, "apply", "-f", manifests, "--home", home, "--dry-run")
    assert dry.returncode == 0 and "apply would be refused (exit 3) without --force" in dry.stderr
    forced = cli(user, "apply", "-f", manifests, "--home", home, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "proceeds (--force)" in forced.stderr
    assert title(home, "alpha") == "Gamma"
    assert cli(user, "resume", "--home", home).returncode == 0
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0


def test_suspend_and_resume_messages_and_bad_input(user: Path, home: Path) -> None:
    home.mkdir()
    again = cli(user, "resume", "--home", home)
    assert again.returncode == 0 and "is not suspended; nothing to do" in again.stdout
    assert cli(user, "suspend", "--home", home, "--reason", "first").returncode == 0
    second = cli(user, "suspend", "--home", home, "--reason", "second")
    assert "was already suspended" in second.stdout and "first" in second.stdout and "second" in second.stdout
    record = home / ".hermes-fleet" / "suspended.json"
    assert json.loads(record.read_text())["reason"] == "second"
    assert record.stat().st_mode & 0o777 == 0o600
    spoof = cli(user, "suspend", "--home", home, "--reason", "ok\x1b[2K")
    assert spoof.returncode == 2 and "control characters" in spoof.stderr
    long = cli(user, "suspend", "--home", home, "--reason", "x" * 501)
    assert long.returncode == 2 and "at most 500" in long.stderr
    missing = cli(user, "suspend", "--home", home / "nope")
    assert missing.returncode == 2 and "no Hermes home at" in missing.stderr and not (home / "nope").exists()
    status = json.loads(cli(user, "status", "--home", home, "-o", "json").stdout)
    assert status["suspended"]["reason"] == "second" and status["suspended"]["by"] == WHO


def test_a_damaged_suspension_record_still_suspends(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    (home / ".hermes-fleet" / "suspended.json").write_text("{not json")
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Beta"}])
    refused = cli(user, "apply", "-f", manifests, "--home", home)
    assert refused.returncode == 3 and "cannot be read" in refused.stderr, refused.stderr
    assert title(home, "alpha") == "Alpha"
    assert cli(user, "resume", "--home", home).returncode == 0
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0 and title(home, "alpha") == "Beta"


def test_a_hand_edited_reason_cannot_forge_a_status_line(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", [{"name": "alpha", "title": "Alpha"}])
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    record = {"by": "ops@box", "at": "2026-12-03T12:00:00+00:00", "reason": "x\nFleet acme: in sync, nothing to do"}
    (home / ".hermes-fleet" / "suspended.json").write_text(json.dumps(record))
    shown = cli(user, "status", "--home", home)
    assert "x\\nFleet acme: in sync" in shown.stdout, shown.stdout
    assert not any(line.startswith("Fleet acme: in sync, nothing to do") for line in shown.stdout.splitlines())
