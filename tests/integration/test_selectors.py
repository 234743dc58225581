"""`--bot NAME` and `-l key=value` on plan and apply (docs/cli.md#selectors): only the selected
bots and their routines are planned and changed; the install-wide settings and rooms only by a run
without a selector; prune never outside the selection. Real files in a temporary home.
"""

from __future__ import annotations

import json
from pathlib import Path

from controller.adapters import inventory as inventory_file
from tests.integration.helpers import apply, assert_converged, changes, plan, plan_json, write_fleet


def fleet(manifests: Path, turns: int, *, names: tuple[str, ...] = ("a", "b", "c"), **spec: object) -> Path:
    labels = {"a": {"team": "ops", "tier": "1"}, "b": {"team": "ops", "tier": "2"}, "c": {"team": "web"}}
    bots = [
        {
            "name": n,
            "labels": labels.get(n, {}),
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
    # One of three is more than the guard's quarter: --yes confirms.
    assert plan(manifest, home, "--prune", "--bot", "b").code == 3
    run = apply(manifest, home, "--prune", "--yes", "--bot", "b")
    assert run.code == 0, run.text
    assert not (home / "profiles" / "b").exists() and (home / "profiles" / "c").is_dir()
    assert "bot/c" in changes(manifest, home, "--prune")


FIVE = ("a", "b", "c", "d", "e")


def test_the_prune_guard_counts_only_the_selected_deletions(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20, names=FIVE), home).code == 0
    manifest = fleet(manifests, 20, names=("a", "e"))  # b, c and d gone: 3 of 5, past the guard
    whole = plan(manifest, home, "--prune")
    assert whole.code == 3 and "prune would delete 3 of 5 bots" in whole.text
    # b alone is 1 of 5, within the guard: no --yes, and c and d are neither deleted nor counted.
    selected = plan(manifest, home, "--prune", "--bot", "b")
    assert selected.code == 0 and "prune would delete" not in selected.text, selected.text
    run = apply(manifest, home, "--prune", "--bot", "b")
    assert run.code == 0, run.text
    assert not (home / "profiles" / "b").exists()
    assert (home / "profiles" / "c").is_dir() and (home / "profiles" / "d").is_dir()


def test_only_the_selected_deletions_free_a_tag(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, 20, names=("a", "c", "d", "helper")), home).code == 0
    bots = [{"name": n} for n in ("a", "c", "d")]
    bots.append({"name": "b", "title": "Helper"})  # @helper: profile helper's name, unless helper goes in this run
    manifest = write_fleet(manifests, bots)
    assert plan(manifest, home, "--prune").code == 0  # helper is deleted (1 of 4, within the guard): @helper is free
    refused = plan(manifest, home, "--prune", "--bot", "b")
    assert refused.code == 3 and "also the name of profile 'helper'" in refused.text, refused.text
    assert plan(manifest, home, "--prune", "--bot", "b", "--bot", "helper").code == 0


def test_selector_usage_errors(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    assert plan(manifest, home, "-l", "team").code == 2
    assert plan(manifest, home, "--bot", "Not A Name").code == 2
    note = plan(manifest, home, "--bot", "a").out
    assert "note: selection --bot a: 1 bot(s);" in note and "install-wide settings and rooms too" in note


def test_an_unknown_bot_is_a_usage_error_with_a_guess(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    typo = plan(manifest, home, "--bot", "bx")
    assert typo.code == 2 and "--bot 'bx' (did you mean 'b'?)" in typo.err, typo.text
    assert "its bots: a, b, c" in typo.err and "Traceback" not in typo.text
    assert apply(manifest, home, "--bot", "a", "--bot", "zzz").code == 2
    assert not (home / "profiles").exists()  # refused before anything was written
    # A bot the inventory still owns is known after it left the manifests (its prune).
    assert apply(manifest, home).code == 0
    assert apply(fleet(manifests, 20, names=("a", "b")), home, "--prune", "--yes", "--bot", "c").code == 0


def test_a_label_selector_matching_nothing_says_so(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, 20)
    run = plan(manifest, home, "-l", "team=nobody")
    assert run.code == 0, run.text
    assert "selection -l team=nobody matches no bot of the manifests: nothing is planned" in run.out
    assert plan_json(manifest, home, "-l", "team=nobody")["objects"] == []


def test_notes_speak_of_the_selected_bots_only(home: Path, manifests: Path) -> None:
    bots = [{"name": "a", "title": "Alpha"}, {"name": "b"}]
    manifest = write_fleet(manifests, bots, config={"agent.reasoning_effort": "low"})
    version = ("--hermes-version", "0.19.0")
    whole = plan(manifest, home, *version).out
    assert "reads no Bot Mode record" in whole and "install-wide settings are written into each of" in whole
    only_b = plan(manifest, home, *version, "--bot", "b").out
    assert "Bot Mode record" not in only_b  # a's title is outside the selection
    assert "install-wide settings are written" not in only_b  # the install-wide settings are not selected
    only_a = plan(manifest, home, *version, "--bot", "a").out
    assert "reads no Bot Mode record" in only_a and "title (1 bot(s))" in only_a


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
