"""A history entry records the selection its run applied (`--bot`, `-l`), and `rollback` to it
applies the same selection: bots that run never touched are left as they are (docs/cli.md#rollback).

Every run is the real CLI (in-process) on a temporary Hermes home.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.adapters import history as store
from tests.integration.helpers import apply, hermes_fleet, write_fleet

LABELS = {"a": {"team": "ops"}, "b": {"team": "ops"}, "c": {"team": "web"}}


def fleet(manifests: Path, turns: int) -> Path:
    bots = [{"name": n, "labels": LABELS[n], "config": {"agent.max_turns": turns}} for n in ("a", "b", "c")]
    return write_fleet(manifests, bots)


def turns(home: Path) -> dict[str, int]:
    """Each bot's agent.max_turns as its config.yaml says."""
    out = {}
    for name in ("a", "b", "c"):
        text = (home / "profiles" / name / "config.yaml").read_text()
        out[name] = int(text.split("max_turns:")[1].split()[0])
    return out


def rollback(home: Path, *args: str) -> Any:
    return hermes_fleet("rollback", "--home", home, *args)


def entries(home: Path) -> list[dict[str, Any]]:
    run = hermes_fleet("history", "--home", home, "-o", "json")
    assert run.code == 0, run.text
    found: list[dict[str, Any]] = run.json()["entries"]
    return found


def selection(home: Path, seq: int) -> Any:
    run = hermes_fleet("history", "show", str(seq), "--home", home, "-o", "json")
    assert run.code == 0, run.text
    return run.json()["entry"]["desired"]["selection"]


def test_rollback_of_a_bot_entry_touches_only_that_bot(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0  # 1: the whole fleet
    assert apply(fleet(manifests, 30), home, "--bot", "a").code == 0  # 2: a alone
    assert apply(fleet(manifests, 40), home, "--bot", "a").code == 0  # 3: a alone
    assert turns(home) == {"a": 40, "b": 20, "c": 20}

    dry = rollback(home, "--to", "2", "--dry-run")
    assert dry.code == 0, dry.text
    assert (
        "Entry 2 applied only --bot a: the rollback applies the same selection (the other bots are left as they are)." in dry.out
    )
    assert "bot/a" in dry.out and "bot/b" not in dry.out and "bot/c" not in dry.out
    assert turns(home) == {"a": 40, "b": 20, "c": 20}  # a dry run writes nothing

    run = rollback(home, "--to", "2")
    assert run.code == 0, run.text
    assert "Entry 2 applied only --bot a" in run.out
    # Entry 2's manifests say 30 for every bot, but only a was converged to them.
    assert turns(home) == {"a": 30, "b": 20, "c": 20}
    last = entries(home)[-1]
    assert last["command"] == "rollback" and last["desired"]["selection"]["bots"] == ["a"]


def test_rollback_of_a_whole_fleet_entry_rolls_back_every_bot(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0  # 1
    assert apply(fleet(manifests, 30), home, "--bot", "a").code == 0  # 2
    assert apply(fleet(manifests, 50), home).code == 0  # 3
    assert turns(home) == {"a": 50, "b": 50, "c": 50}
    run = rollback(home, "--to", "1")
    assert run.code == 0, run.text
    assert "applied only" not in run.out
    assert turns(home) == {"a": 20, "b": 20, "c": 20}
    assert entries(home)[-1]["desired"]["selection"] is None


def test_a_default_rollback_picks_an_entry_that_covers_the_latest_run(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0  # 1: the whole fleet
    assert apply(fleet(manifests, 30), home, "--bot", "a").code == 0  # 2: a alone
    assert apply(fleet(manifests, 50), home).code == 0  # 3: the whole fleet
    # Entry 2 would leave b and c at 50: the default goes back to entry 1.
    run = rollback(home)
    assert run.code == 0, run.text
    assert "to history entry 1 " in run.out
    assert turns(home) == {"a": 20, "b": 20, "c": 20}


def test_history_shows_the_selection(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    assert apply(fleet(manifests, 30), home, "-l", "team=ops").code == 0
    assert apply(fleet(manifests, 40), home, "--bot", "c").code == 0
    assert selection(home, 1) is None
    assert selection(home, 2) == {"bots": [], "labels": ["team=ops"], "args": "-l team=ops"}
    assert selection(home, 3) == {"bots": ["c"], "labels": [], "args": "--bot c"}
    assert entries(home)[0]["desired"]["selection"] is None

    listed = hermes_fleet("history", "--home", home)
    assert listed.code == 0, listed.text
    header, *rows = listed.out.splitlines()
    assert "SELECTION" in header
    assert " all " in rows[0] and " -l team=ops " in rows[1] and " --bot c " in rows[2]
    shown = hermes_fleet("history", "show", "2", "--home", home)
    assert "  selection: -l team=ops (only these bots were applied; a rollback to this entry applies them alone)" in shown.out
    assert "  selection: none (the whole fleet was applied)" in hermes_fleet("history", "show", "1", "--home", home).out

    # A label selection is replayed as the labels, not as the bots they matched then.
    assert turns(home) == {"a": 30, "b": 30, "c": 40}
    assert apply(fleet(manifests, 60), home).code == 0
    assert rollback(home, "--to", "2").code == 0
    assert turns(home) == {"a": 30, "b": 30, "c": 60}


def test_a_no_op_of_a_selection_does_not_confirm_a_whole_fleet_entry(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    assert apply(manifest, home).code == 0
    assert apply(manifest, home, "--bot", "a").code == 0  # changes nothing, but only of a
    found = entries(home)
    assert [e["desired"]["selection"] for e in found] == [None, {"bots": ["a"], "labels": [], "args": "--bot a"}]
    assert "confirmed" not in found[0]
    assert apply(manifest, home, "--bot", "a").code == 0  # the same selection again: confirms entry 2
    assert entries(home)[-1]["confirmed"]["times"] == 1


def test_an_entry_written_before_the_selection_was_recorded_is_a_whole_fleet_run(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    assert apply(fleet(manifests, 30), home).code == 0
    path = store.entry_path(home, "acme", 1)
    data = json.loads(path.read_text())
    del data["desired"]["selection"]  # as an older hermes-fleet wrote it
    path.write_text(json.dumps(data))

    assert selection(home, 1) is None and entries(home)[0]["desired"]["selection"] is None
    assert " all " in hermes_fleet("history", "--home", home).out.splitlines()[1]
    run = rollback(home, "--to", "1")
    assert run.code == 0, run.text
    assert turns(home) == {"a": 20, "b": 20, "c": 20}


def test_a_damaged_selection_record_refuses_the_rollback(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    assert apply(fleet(manifests, 30), home, "--bot", "a").code == 0
    assert apply(fleet(manifests, 40), home).code == 0
    path = store.entry_path(home, "acme", 2)
    data = json.loads(path.read_text())
    data["desired"]["selection"] = {"bots": "a"}
    path.write_text(json.dumps(data))
    run = rollback(home, "--to", "2")
    assert run.code != 0 and "its selection record is not {bots, labels}" in run.err
    assert "Traceback" not in run.text
    assert turns(home) == {"a": 40, "b": 40, "c": 40}  # never replayed as the whole fleet


def test_a_bot_the_entry_pruned_is_not_refused_as_unknown(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0  # 1
    two = write_fleet(manifests, [{"name": n, "labels": LABELS[n], "config": {"agent.max_turns": 20}} for n in ("a", "b")])
    assert apply(two, home, "--bot", "c", "--prune", "--yes").code == 0  # 2: c pruned alone
    assert not (home / "profiles" / "c").exists()
    assert apply(two, home).code == 0  # 3 would confirm 2 (the same manifests, but all bots): its own entry
    run = rollback(home, "--to", "2")
    assert run.code == 0, run.text
    assert "Bot(s) c: in neither the entry's manifests nor this home, as entry 2 left them." in run.out
    assert "Nothing left to roll back." in run.out


def test_a_watch_pass_with_a_selection_records_it(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    run = hermes_fleet("watch", "--once", "-f", fleet(manifests, 30), "--home", home, "-l", "team=web")
    assert run.code == 0, run.text
    last = entries(home)[-1]
    assert last["command"] == "watch" and last["desired"]["selection"]["args"] == "-l team=web"
    assert turns(home) == {"a": 20, "b": 20, "c": 30}
    assert apply(fleet(manifests, 40), home).code == 0
    assert rollback(home, "--to", str(last["seq"])).code == 0
    assert turns(home) == {"a": 40, "b": 40, "c": 30}


def test_rollback_json_says_the_selection_on_stderr_and_in_the_plan_note(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    assert apply(fleet(manifests, 30), home, "--bot", "b").code == 0
    assert apply(fleet(manifests, 40), home).code == 0
    run = rollback(home, "--to", "2", "--dry-run", "-o", "json")
    assert run.code == 0, run.text
    assert "Entry 2 applied only --bot b" in run.err
    data = run.json()
    assert {f"{o['kind']}/{o['name']}" for o in data["objects"]} == {"bot/b"}
    assert any("selection --bot b" in note for note in data["notes"])
