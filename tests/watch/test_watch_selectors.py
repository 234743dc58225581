"""`watch --bot NAME` and `-l key=value` against a real temp home (docs/watch.md#selectors): the
reconciler converges, prunes, checks and reports on the selected bots only, and says it is a
selection (the started line, the status file, `status`, /metrics, every notification). The real
CLI as subprocesses (tests/watch/harness.py), /metrics over loopback, a real webhook receiver."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.watch.harness import cli, http_get, read_status, sample, title, write_fleet
from tests.watch.test_notifications import Receiver, manifest_with_hooks

LABELS = {"a": {"team": "ops"}, "b": {"team": "ops"}, "c": {"team": "web"}}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def bots(titles: str, names: str = "abc") -> list[dict[str, Any]]:
    return [{"name": n, "title": f"{titles} {n}", "labels": LABELS[n]} for n in names]


def hand_edit(home: Path, bot: str, new_title: str) -> None:
    """A hand edit of the Bot Mode title (drift), as the Desktop app would write it."""
    path = home / "profiles" / bot / "profile.yaml"
    old = title(home, bot)
    assert old is not None
    path.write_text(path.read_text().replace(old, new_title))


def inventory(home: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((home / ".hermes-fleet" / "inventory" / "acme.json").read_text())
    return data


def once(user: Path, manifests: Path, home: Path, *flags: str) -> tuple[int, str]:
    done = cli(user, "watch", "--once", "-f", manifests, "--home", home, *flags)
    return done.returncode, done.stdout + done.stderr


def test_watch_once_converges_only_the_selected_bots(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", bots("One"))
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    hand_edit(home, "c", "Hand c")  # drift outside the selection
    write_fleet(manifests / "fleet.yaml", bots("Two"))

    code, out = once(user, manifests, home, "--bot", "a")
    assert code == 0 and "result=applied" in out and "changed=1" in out, out
    assert (title(home, "a"), title(home, "b"), title(home, "c")) == ("Two a", "One b", "Hand c")
    assert inventory(home)["last_apply"]["selection"] == "--bot a"
    status = json.loads((home / ".hermes-fleet" / "watch-status.json").read_text())
    assert status["selection"] == "--bot a" and status["last_result"] == "applied"

    # Again: the last apply was of this selection and these manifests, so it only reports (in sync).
    code, out = once(user, manifests, home, "--bot", "a")
    assert code == 0 and "result=in-sync" in out, out
    assert title(home, "c") == "Hand c"

    # A reconciler of every bot: the last apply covered only a, so it applies (b and c too).
    code, out = once(user, manifests, home)
    assert code == 0 and "result=applied" in out, out
    assert (title(home, "b"), title(home, "c")) == ("Two b", "Two c")
    assert "selection" not in inventory(home)["last_apply"]


def test_watch_prunes_only_inside_the_selection(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", bots("One"))
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    write_fleet(manifests / "fleet.yaml", bots("One", "a"))  # b and c are gone from the manifests

    code, out = once(user, manifests, home, "--prune", "--yes", "-l", "team=ops")
    assert code == 0, out  # a gone bot has no labels: b is not selected, nothing is pruned
    assert (home / "profiles" / "b").is_dir() and (home / "profiles" / "c").is_dir()

    refused, out = once(user, manifests, home, "--prune", "--bot", "b")  # 1 of 3 is past the guard's quarter
    assert refused == 3 and "result=conflict" in out and (home / "profiles" / "b").is_dir(), out
    code, out = once(user, manifests, home, "--prune", "--yes", "--bot", "b")
    assert code == 0 and "result=applied" in out, out
    assert not (home / "profiles" / "b").exists() and (home / "profiles" / "c").is_dir()
    assert [p.name.endswith("-b") for p in (home / ".hermes-fleet" / "backups").iterdir()] == [True]
    pending = cli(user, "plan", "-f", manifests, "--home", home, "--prune").stdout  # c: still to prune
    assert "bot/c  conflict (prune would delete 1 of 2 bots" in pending, pending


def test_a_selected_watch_reports_and_alerts_on_its_bots_only(
    spawn, user: Path, manifests: Path, home: Path, receiver: Receiver
) -> None:
    hooks = [{"name": "ops", "url": {"from_env": "OPS_HOOK"}, "events": ["drift", "credentials-missing"]}]
    manifest_with_hooks(manifests, bots("One"), hooks)
    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0  # every bot, before the watch
    watch = spawn(
        "-f", manifests, "--home", home, "-l", "team=ops", "--interval", "0.3", "--health-port", "0", OPS_HOOK=receiver.url
    )
    port = int(watch.wait_for("health_listening", timeout=30)["address"].rsplit(":", 1)[1])
    assert watch.wait_for("started")["selection"] == "-l team=ops"
    watch.wait_for("reconciled", timeout=30, result="in-sync")  # the whole fleet's apply covers the selection

    hand_edit(home, "a", "Hand a")
    hand_edit(home, "c", "Hand c")
    run = watch.wait_for("reconciled", timeout=30, result="drift")
    assert run["drift"] == ["bot/a"], watch.transcript()
    assert (title(home, "a"), title(home, "c")) == ("Hand a", "Hand c")  # reported, not corrected

    status = read_status(home, lambda s: s["last_result"] == "drift")
    assert status["selection"] == "-l team=ops" and status["drift"] == ["bot/a"]
    text = cli(user, "status", "--home", home).stdout
    assert "selection -l team=ops): source" in text and "  drift: bot/a\n" in text, text

    body = http_get(port, "/metrics")[2]
    assert sample(body, "hermes_fleet_selection_info", selection="-l team=ops") == 1
    assert sample(body, "hermes_fleet_bot_drifted", bot="a") == 1 and sample(body, "hermes_fleet_bot_drifted", bot="b") == 0
    assert sample(body, "hermes_fleet_bot_drifted", bot="c") is None
    assert sample(body, "hermes_fleet_gateway_up", bot="c") is None and sample(body, "hermes_fleet_gateway_up", bot="b") == 0

    received = receiver.wait(3)  # credentials-missing for a and b (no provider key), then the drift
    drift = next(b for b in received if b["event"] == "drift")
    assert drift["details"]["objects"] == ["bot/a"] and drift["details"]["selection"] == "-l team=ops"
    assert drift["summary"].endswith("(selection -l team=ops)")
    missing = sorted(b["details"]["object"] for b in received if b["event"] == "credentials-missing")
    assert missing == ["bot/a", "bot/b"] and all("(selection -l team=ops)" in b["summary"] for b in received)
    assert watch.stop() == 0
    assert not any(b["event"] == "credentials-missing" and b["details"]["object"] == "bot/c" for b in receiver.bodies)


def _files(home: Path) -> dict[str, bytes]:
    """Every file of the home outside our own state folder, with its bytes."""
    kept = [p for p in sorted(home.rglob("*")) if p.is_file() and ".hermes-fleet" not in p.parts]
    return {str(p.relative_to(home)): p.read_bytes() for p in kept}


def test_an_unknown_bot_or_a_bad_selector_is_refused(user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", bots("One"))
    bad = cli(user, "watch", "--once", "-f", manifests, "--home", home, "-l", "team")
    assert bad.returncode == 2 and "-l 'team': write key=value" in bad.stderr, bad.stderr
    assert not home.exists()  # refused before anything, the lock included
    invalid = cli(user, "watch", "--once", "-f", manifests, "--home", home, "--bot", "Not A Name")
    assert invalid.returncode == 2 and "--bot 'Not A Name' is not a valid bot name" in invalid.stderr, invalid.stderr

    assert cli(user, "apply", "-f", manifests, "--home", home).returncode == 0
    write_fleet(manifests / "fleet.yaml", bots("Two"))
    before = _files(home)
    code, out = once(user, manifests, home, "--bot", "bx")
    assert code == 2, out  # stalled, as plan's exit 2
    assert "result=stalled" in out and "--bot 'bx' (did you mean 'b'?): no bot of fleet 'acme' has that name" in out
    assert "its bots: a, b, c" in out and "Traceback" not in out
    assert _files(home) == before


def test_one_watch_per_home_even_with_disjoint_selections(spawn, user: Path, manifests: Path, home: Path) -> None:
    write_fleet(manifests / "fleet.yaml", bots("One"))
    watch = spawn("-f", manifests, "--home", home, "--bot", "a", "--interval", "30")
    watch.wait_for("reconciled", timeout=30, result="applied")
    assert (title(home, "a"), title(home, "b")) == ("One a", None)  # only a was created
    second = cli(user, "watch", "--once", "-f", manifests, "--home", home, "--bot", "c")
    assert second.returncode == 3, second.stdout + second.stderr
    assert "another hermes-fleet watch is running" in second.stderr and "one watch per home" in second.stderr
    assert title(home, "c") is None
    assert watch.stop() == 0
