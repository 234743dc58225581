"""`--bot NAME` and `-l key=value` on plan and apply (docs/cli.md#selectors): only the selected
bots and their routines are planned and changed; the install-wide settings and rooms only by a run
without a selector; prune never outside the selection. Real files in a temporary home.
"""

from __future__ import annotations

import json
from pathlib import Path

from controller.adapters import inventory as inventory_file
from tests.integration.helpers import apply, assert_converged, changes, plan, write_fleet


def fleet(manifests: Path, turns: int, *, names: tuple[str, ...] = ("a", "b", "c"), **spec: object) -> Path:
    labels = {"a": {"team": "ops", "tier": "1"}, "b": {"team": "ops", "tier": "2"}, "c": {"team": "web"}}
    bots = [
        {
            "name": n,
            "labels": labels[n],
            "config": {"agent.max_turns": turns},
            "routines": [{"name": "r", "schedule": "every 2h", "prompt": f"p{turns}"}],
        }
        for n in names
    ]
    return write_fleet(manifests, bots, **spec)


def turns(home: Path, bot: str) -> str:
    return (home / "profiles" / bot / "config.yaml").read_text()


def test_bot_selects_one_bot_and_its_routines(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    manifest = fleet(manifests, 30, config={"agent.reasoning_effort": "low"})  # an install-wide change too
    everything = set(changes(manifest, home))
    assert {"bot/a", "bot/b", "bot/c", "routine/b/r"} <= everything and any(k.startswith("install") for k in everything)
    assert set(changes(manifest, home, "--bot", "b")) == {"bot/b", "routine/b/r"}
    run = apply(manifest, home, "--bot", "b")
    assert run.code == 0, run.text
    assert "max_turns: 30" in turns(home, "b")
    assert "max_turns: 20" in turns(home, "a") and "max_turns: 20" in turns(home, "c")
    assert "reasoning_effort" not in turns(home, "a")
    # What was left out is still pending for a run without a selector, and nothing is lost.
    assert set(changes(manifest, home)) == everything - {"bot/b", "routine/b/r"}
    assert apply(manifest, home).code == 0
    assert_converged(manifest, home)


def test_labels_select_by_every_label_given(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    manifest = fleet(manifests, 30)
    assert {k for k in changes(manifest, home, "-l", "team=ops")} == {"bot/a", "routine/a/r", "bot/b", "routine/b/r"}
    assert {k for k in changes(manifest, home, "-l", "team=ops,tier=2")} == {"bot/b", "routine/b/r"}
    assert {k for k in changes(manifest, home, "-l", "team=ops", "-l", "tier=1")} == {"bot/a", "routine/a/r"}
    assert {k for k in changes(manifest, home, "-l", "team=ops", "--bot", "c")} == set()
    run = apply(manifest, home, "-l", "team=web")
    assert run.code == 0 and "max_turns: 30" in turns(home, "c") and "max_turns: 20" in turns(home, "a")
    record = json.loads(inventory_file.inventory_path(home, "acme").read_text())["last_apply"]
    assert record["selection"] == "-l team=web"


def test_prune_never_outside_the_selection(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20), home).code == 0
    manifest = fleet(manifests, 20, names=("a",))  # b and c are gone from the manifests
    assert set(changes(manifest, home, "--prune", "-l", "team=ops")) == set()  # labels cannot select a gone bot
    # The prune guard still counts every bot gone (2 of 3): --yes confirms (see the report).
    run = apply(manifest, home, "--prune", "--yes", "--bot", "b")
    assert run.code == 0, run.text
    assert not (home / "profiles" / "b").exists() and (home / "profiles" / "c").is_dir()
    assert "bot/c" in changes(manifest, home, "--prune")


def test_selector_usage_errors(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    assert plan(manifest, home, "-l", "team").code == 2
    assert plan(manifest, home, "--bot", "Not A Name").code == 2
    note = plan(manifest, home, "--bot", "a").out
    assert "note: selection --bot a: 1 bot(s);" in note and "install-wide settings and rooms too" in note


def test_labels_are_not_written_and_do_not_change_the_digest(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    assert apply(manifest, home).code == 0
    digest = json.loads(inventory_file.inventory_path(home, "acme").read_text())["last_apply"]["digest"]
    bare = write_fleet(
        manifests,
        [{"name": n, "config": {"agent.max_turns": 20}, "routines": [{"name": "r", "schedule": "every 2h", "prompt": "p20"}]}
         for n in ("a", "b", "c")],
    )  # fmt: skip
    assert plan(bare, home, "-o", "json").json()["digest"] == digest
    assert not any("team" in p.read_text(errors="replace") for p in (home / "profiles").rglob("*.yaml"))
