"""Held-back cases for the remembered slice, the history's rollback point and honest deletion.

Real CLI runs (in-process) on temporary homes; faults are real files damaged by hand and real
OSErrors at the write points (`fsio.WRITE_HOOKS`).
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from controller.adapters import fsio
from tests.integration.conftest import SECRET_OR
from tests.integration.helpers import apply, hermes_fleet, profile, read_yaml, snapshot, write_fleet
from tests.integration.test_history import fleet_a, fleet_b, history_files, history_json

SLICED = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  bots:
    - {name: desk, host: office}
    - {name: clerk, host: office}
    - {name: shared}
  peers:
    - {name: hq, url: "https://hq.internal:8642", host: office, key: {from_env: HQ_KEY}}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hermes root that does not exist yet, with HOME in a scratch folder (as tests/integration's)."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("OR_KEY", SECRET_OR)
    return tmp_path / "hermes"


@pytest.fixture
def office(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("HQ_KEY", "hq-key-SECRET-5d6e7f8a9b")
    fleet = tmp_path / "sliced.yaml"
    fleet.write_text(SLICED, encoding="utf-8")
    run = hermes_fleet("apply", "-f", fleet, "--home", home, "--host", "office")
    assert run.code == 0, run.text
    return fleet, home


def test_the_reported_case_a_sliced_fleet_without_host_deletes_nothing(office: tuple[Path, Path]) -> None:
    """Before: every office bot planned as an orphan (exit 0), and office's peer removed from the
    root config.yaml and .env by a plain apply."""
    fleet, home = office
    before = snapshot(home)
    for flags in ((), ("--host", "elsewhere"), ("--prune", "--yes"), ("--host", "elsewhere", "--prune", "--yes")):
        run = hermes_fleet("apply", "-f", fleet, "--home", home, *flags)
        assert run.code == 2 and "'office'" in run.err and "Traceback" not in run.text, (flags, run.text)
        assert snapshot(home) == before, flags


@pytest.mark.parametrize("value", [5, "", "../office", "office\n", ["office"], "x" * 300])
def test_a_recorded_host_that_is_not_a_host_name_is_a_clear_error(office: tuple[Path, Path], value: object) -> None:
    fleet, home = office
    path = home / ".hermes-fleet" / "inventory" / "acme.json"
    data = json.loads(path.read_text())
    data["host"] = value
    path.write_text(json.dumps(data))
    before = snapshot(home)
    for verb in ("plan", "apply"):
        run = hermes_fleet(verb, "-f", fleet, "--home", home, "--host", "office")
        assert run.code == 1 and "is not a host name" in run.err and "Traceback" not in run.text, run.text
    assert snapshot(home) == before


def test_a_removed_host_record_is_taken_again_by_the_next_apply(office: tuple[Path, Path]) -> None:
    fleet, home = office
    path = home / ".hermes-fleet" / "inventory" / "acme.json"
    data = json.loads(path.read_text())
    del data["host"]
    path.write_text(json.dumps(data))
    assert hermes_fleet("apply", "-f", fleet, "--home", home, "--host", "office").code == 0
    assert json.loads(path.read_text())["host"] == "office"
    assert hermes_fleet("plan", "-f", fleet, "--home", home, "--host", "lab").code == 2


def test_a_damaged_newest_entry_is_never_confirmed_and_rollback_still_works(home: Path, tmp_path: Path) -> None:
    a, b = fleet_a(tmp_path / "a"), fleet_b(tmp_path / "b")
    assert apply(a, home).code == 0 and apply(b, home).code == 0
    newest = history_files(home)[-1]
    newest.write_text('{"seq": 2, "exit": 0, "desired": ')  # cut short by hand
    for _ in range(3):
        assert apply(b, home).code == 0
    entries = history_json(home)["entries"]
    assert [e["seq"] for e in entries] == [1, 2, 3]  # one new entry, then confirmed
    assert "unreadable" in entries[1] and entries[2]["confirmed"]["times"] == 2
    back = hermes_fleet("rollback", "--home", home, "--yes")
    assert back.code == 0, back.text
    assert read_yaml(profile(home, "alpha") / "config.yaml")["model"]["default"] == "model-a"


def test_a_failed_confirm_write_leaves_the_entry_as_it_was(home: Path, tmp_path: Path) -> None:
    b = fleet_b(tmp_path / "b")
    assert apply(b, home).code == 0
    (entry,) = history_files(home)
    before = entry.read_bytes()

    def full_disk(path: Path) -> None:
        if path.parent.name == "acme" and path.parent.parent.name == "history":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

    fsio.WRITE_HOOKS.append(full_disk)
    try:
        run = apply(b, home)
    finally:
        fsio.WRITE_HOOKS.remove(full_disk)
    assert run.code == 1 and "Traceback" not in run.text, run.text
    assert entry.read_bytes() == before and history_files(home) == [entry]
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]
    assert apply(b, home).code == 0
    assert history_json(home)["entries"][0]["confirmed"]["times"] == 1


def test_a_history_kept_at_one_entry_still_confirms_and_never_grows(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_FLEET_HISTORY_KEEP", "1")
    b = fleet_b(tmp_path / "b")
    for _ in range(5):
        assert apply(b, home).code == 0
    assert [p.name for p in history_files(home)] == ["000001.json"]


def test_pruning_the_last_bots_of_a_fleet_needs_yes_whatever_their_number(home: Path, tmp_path: Path) -> None:
    for n in (1, 2, 3):
        folder = tmp_path / f"f{n}"
        fleet = f"solo{n}"
        assert apply(write_fleet(folder, [{"name": f"{fleet}-{i}"} for i in range(n)], fleet=fleet), home).code == 0
        empty = write_fleet(folder, [], fleet=fleet)
        run = apply(empty, home, "--prune")
        assert run.code == 3 and "every bot of the fleet" in run.text, run.text
        assert all(profile(home, f"{fleet}-{i}").is_dir() for i in range(n))
