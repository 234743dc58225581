"""The home remembers its slice: a home converged as one host refuses a plan for another or none.

Real CLI runs (in-process) on a temporary Hermes home; the fleet names hosts, `office` has bots and
registers a peer in its root profile (docs/many-machines.md#6-peers-between-machines).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.integration.helpers import hermes_fleet, profile, read_yaml, snapshot

PEER_KEY = "peer-key-SECRET-4b8d0c1e2f"

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  config: {timezone: Europe/Berlin}
  bots:
    - {name: desk, host: office, title: Desk}
    - {name: clerk, host: office, title: Clerk}
    - {name: lab-bot, host: lab, title: Lab}
  peers:
    - {name: hq, url: "https://hq.internal:8642", host: office, key: {from_env: HQ_KEY}}
"""


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HQ_KEY", PEER_KEY)
    path = tmp_path / "fleet" / "fleet.yaml"
    path.parent.mkdir()
    path.write_text(FLEET, encoding="utf-8")
    return path


def inventory(home: Path) -> dict:
    return json.loads((home / ".hermes-fleet" / "inventory" / "acme.json").read_text())


def office_home(fleet: Path, home: Path) -> Path:
    run = hermes_fleet("apply", "-f", fleet, "--home", home, "--host", "office")
    assert run.code == 0, run.text
    assert inventory(home)["host"] == "office"
    assert "hq" in read_yaml(home / "config.yaml")["bot_peers"]
    return home


def test_a_home_converged_as_one_host_refuses_a_plan_for_another_or_none(fleet: Path, home: Path) -> None:
    office_home(fleet, home)
    before = snapshot(home)
    assert socket.gethostname() != "office"  # no --host: this machine's hostname is the slice asked for
    for verb in ("plan", "apply"):
        for flags in ((), ("--host", "lab"), ("--host", "lab", "--prune", *(("--yes",) if verb == "apply" else ()))):
            run = hermes_fleet(verb, "-f", fleet, "--home", home, *flags)
            assert run.code == 2, (verb, flags, run.text)
            assert "converged as host 'office'" in run.err and "--host office" in run.err, run.err
            assert "Traceback" not in run.text
    assert snapshot(home) == before  # nothing written, not even the lock
    ok = hermes_fleet("plan", "-f", fleet, "--home", home, "--host", "office", "--detailed-exitcode")
    assert ok.code == 0, ok.text


def test_manifests_that_name_no_host_are_refused_on_a_sliced_home(fleet: Path, home: Path, tmp_path: Path) -> None:
    office_home(fleet, home)
    whole = tmp_path / "whole.yaml"
    whole.write_text(FLEET.replace(", host: office", "").replace(", host: lab", ""), encoding="utf-8")
    run = hermes_fleet("plan", "-f", whole, "--home", home)
    assert run.code == 2 and "name no host" in run.err and "--rehost" in run.err, run.text
    moved = hermes_fleet("apply", "-f", whole, "--home", home, "--rehost")
    assert moved.code == 0, moved.text
    assert "host" not in inventory(home)


def test_rehost_moves_a_home_on_purpose_and_a_plain_apply_keeps_install_wide_peers(fleet: Path, home: Path) -> None:
    office_home(fleet, home)
    alone = hermes_fleet("apply", "-f", fleet, "--home", home, "--rehost")
    assert alone.code == 2 and "--rehost needs --host" in alone.err, alone.text

    plan = hermes_fleet("plan", "-f", fleet, "--home", home, "--host", "lab", "--rehost", "-o", "json")
    assert plan.code == 0, plan.text
    assert any("stay in the root profile" in n and "bot_peers.hq" in n for n in plan.json()["notes"]), plan.json()["notes"]
    moved = hermes_fleet("apply", "-f", fleet, "--home", home, "--host", "lab", "--rehost")
    assert moved.code == 0, moved.text
    assert inventory(home)["host"] == "lab"
    # office's bots are orphans, left as they were; office's peer stays in the root (no --prune).
    assert (profile(home, "desk") / "config.yaml").is_file() and (profile(home, "lab-bot") / "config.yaml").is_file()
    assert "hq" in read_yaml(home / "config.yaml")["bot_peers"]
    assert PEER_KEY in (home / ".env").read_text()
    assert hermes_fleet("plan", "-f", fleet, "--home", home, "--host", "lab", "--detailed-exitcode").code == 0
    back = hermes_fleet("plan", "-f", fleet, "--home", home, "--host", "office")
    assert back.code == 2 and "converged as host 'lab'" in back.err

    # --prune removes what the fleet left: the install-wide peer, and (with --yes) office's bots.
    pruned = hermes_fleet("apply", "-f", fleet, "--home", home, "--host", "lab", "--prune", "--yes")
    assert pruned.code == 0, pruned.text
    assert "hq" not in (read_yaml(home / "config.yaml").get("bot_peers") or {})
    assert PEER_KEY not in (home / ".env").read_text()
    assert read_yaml(home / "config.yaml")["timezone"] == "Europe/Berlin"  # still in the manifests: kept
    assert not (profile(home, "desk")).exists()


def test_an_install_wide_key_dropped_from_the_manifests_waits_for_prune(fleet: Path, home: Path, tmp_path: Path) -> None:
    office_home(fleet, home)
    dropped = tmp_path / "dropped.yaml"
    dropped.write_text(FLEET.replace("  config: {timezone: Europe/Berlin}\n", ""), encoding="utf-8")
    plain = hermes_fleet("apply", "-f", dropped, "--home", home, "--host", "office")
    assert plain.code == 0, plain.text
    assert read_yaml(home / "config.yaml")["timezone"] == "Europe/Berlin"
    again = hermes_fleet("plan", "-f", dropped, "--home", home, "--host", "office", "-o", "json")
    assert any("config:timezone" in n for n in again.json()["notes"])
    pruned = hermes_fleet("apply", "-f", dropped, "--home", home, "--host", "office", "--prune")
    assert pruned.code == 0, pruned.text
    assert "timezone" not in read_yaml(home / "config.yaml")


def test_watch_on_the_wrong_host_reports_the_refusal_and_changes_nothing(fleet: Path, home: Path) -> None:
    office_home(fleet, home)
    before = snapshot(home / "profiles")
    run = hermes_fleet("watch", "-f", fleet, "--home", home, "--host", "lab", "--once")
    assert run.code != 0, run.text
    assert "converged as host 'office'" in run.text, run.text
    assert snapshot(home / "profiles") == before


def test_rollback_keeps_to_the_recorded_host(fleet: Path, home: Path, tmp_path: Path) -> None:
    office_home(fleet, home)
    edited = tmp_path / "edited.yaml"
    edited.write_text(FLEET.replace("title: Desk", "title: Front desk"), encoding="utf-8")
    assert hermes_fleet("apply", "-f", edited, "--home", home, "--host", "office").code == 0
    wrong = hermes_fleet("rollback", "--home", home, "--host", "lab")
    assert wrong.code == 2 and "converged as host 'office'" in wrong.err, wrong.text
    back = hermes_fleet("rollback", "--home", home)  # the entry's own slice: office
    assert back.code == 0, back.text
    assert read_yaml(profile(home, "desk") / "profile.yaml") is not None
    assert inventory(home)["host"] == "office"
