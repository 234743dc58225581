"""`status --bot NAME` and `-l key=value` (docs/cli.md#status, docs/cli.md#selectors): only the
selected bots are shown (objects, drift, hand edits, health, pending changes), the install-wide
settings and rooms only without a selector, and the exit code is the selected plan's. Real files in
a temporary home; hand edits made with the real `hermes config set` (hermes-agent 0.19.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.hermes_support import HermesCLI, require_hermes
from tests.integration.helpers import apply, hermes_fleet, profile, write_fleet

LABELS = {"a": {"team": "ops"}, "b": {"team": "ops"}, "c": {"team": "web"}}


def fleet(manifests: Path, turns: int = 20, names: tuple[str, ...] = ("a", "b", "c")) -> Path:
    bots = [
        {
            "name": n,
            "labels": LABELS[n],
            "config": {"agent.max_turns": turns},
            "routines": [{"name": "r", "schedule": "every 2h", "prompt": "p"}],
        }
        for n in names
    ]
    return write_fleet(manifests, bots, config={"agent.reasoning_effort": "low"})


def status(home: Path, *flags: str | Path) -> dict[str, Any]:
    run = hermes_fleet("status", "--home", home, "-o", "json", *flags)
    assert run.code == 0, run.text
    return run.json()


def hand_edit_turns(home: Path, bot: str, turns: int) -> None:
    """A hand edit of a managed key (drift)."""
    config = profile(home, bot) / "config.yaml"
    config.write_text(config.read_text().replace("max_turns: 20", f"max_turns: {turns}"))


def test_status_shows_only_the_selected_bots(home: Path, manifests: Path, tmp_path: Path) -> None:
    hermes = HermesCLI(require_hermes(), home, tmp_path / "hermes-user")
    assert apply(fleet(manifests), home).code == 0
    hand_edit_turns(home, "a", 31)
    hand_edit_turns(home, "c", 33)
    hermes.run("config", "set", "approvals.mode", "manual", profile="a")  # unmanaged keys: hand edits
    hermes.run("config", "set", "approvals.mode", "manual", profile="c")
    hermes.run("config", "set", "display.skin", "mono")  # the root profile's (install-wide)

    whole = status(home)
    (report,) = whole["fleets"]
    assert whole["selection"] is None and "selected" not in report
    assert report["drifted"] == 2 and report["managed"] == 3
    assert {e["object"] for e in report["hand_edits"]} == {"bot/a", "bot/c", "install/root"}

    data = status(home, "--bot", "a")
    assert data["selection"] == "--bot a"
    (report,) = data["fleets"]
    assert [o["object"] for o in report["objects"]] == ["bot/a", "routine/a/r"]  # no install-wide object, no c
    assert report["selected"] == ["a"] and report["managed"] == 1
    assert report["drifted"] == 1 and report["objects"][0]["drifted_fields"] == ["config:agent.max_turns"]
    assert [(e["object"], e["added"]) for e in report["hand_edits"]] == [("bot/a", ["approvals.mode"])]
    assert [b["bot"] for b in report["health"]["bots"]] == ["a"]
    assert {f["object"] for f in report["health"]["findings"]} <= {"bot/a", "routine/a/r"}

    text = hermes_fleet("status", "--home", home, "--bot", "a", "--bot", "b")
    assert text.code == 0, text.text
    assert text.out.startswith("Selection --bot a --bot b: only these bots are shown; the install-wide settings and rooms")
    assert "2 selected bot(s) managed in" in text.out
    assert "bot/a: drift in config:agent.max_turns" in text.out and "bot/c" not in text.out
    assert "drift: 1 object(s) differ from the last apply" in text.out
    assert "install/root" not in text.out and "health:" in text.out and "2 bot(s), gateway running for 0" in text.out


def test_labels_select_with_the_manifests_and_the_exit_code_is_the_selected_plans(home: Path, manifests: Path) -> None:
    assert apply(write_fleet(manifests / "other", [{"name": "d"}], fleet="other"), home).code == 0
    assert apply(fleet(manifests), home).code == 0
    hand_edit_turns(home, "c", 33)
    bots: list[dict[str, Any]] = [
        {"name": n, "labels": LABELS[n], "config": {"agent.max_turns": 25 if n == "a" else 20}} for n in "abc"
    ]
    grown = write_fleet(manifests, [*bots, {"name": "d", "labels": {"team": "web"}}])  # d is fleet other's: a conflict
    assert hermes_fleet("status", "--home", home, "-f", grown).code == 3  # the whole fleet: d conflicts
    web = hermes_fleet("status", "--home", home, "-f", grown, "-l", "team=web")
    assert web.code == 3, web.text
    ops = hermes_fleet("status", "--home", home, "-f", grown, "-l", "team=ops", "-o", "json")
    assert ops.code == 0, ops.text  # c's drift and d's conflict are outside the selection
    (report,) = ops.json()["fleets"]
    assert report["selected"] == ["a", "b"] and report["drifted"] == 0
    assert {o["object"] for o in report["objects"]} == {"bot/a", "bot/b", "routine/a/r", "routine/b/r"}
    assert report["pending"]["changes_pending"] is True and report["pending"]["update"] == 1  # a's max_turns

    nobody = hermes_fleet("status", "--home", home, "-f", grown, "-l", "team=nobody")
    assert nobody.code == 0 and nobody.out.startswith("Selection -l team=nobody: no bot it selects is managed in this home.")


def test_the_reconcilers_drift_is_filtered_too(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests)
    assert apply(manifest, home).code == 0
    hand_edit_turns(home, "a", 31)
    hand_edit_turns(home, "c", 33)
    once = hermes_fleet("watch", "--once", "-f", manifest, "--home", home)  # reports the drift of a and c
    assert once.code == 0, once.text
    assert status(home)["reconciler"]["drift"] == ["bot/a", "bot/c"]
    assert status(home, "--bot", "c")["reconciler"]["drift"] == ["bot/c"]
    text = hermes_fleet("status", "--home", home, "--bot", "c").out
    assert "  drift: bot/c" in text and "bot/a" not in text


def test_selector_errors_name_the_flag_and_what_to_do(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests)
    assert apply(manifest, home).code == 0
    typo = hermes_fleet("status", "--home", home, "--bot", "bx")
    assert typo.code == 2 and "Traceback" not in typo.text
    assert "--bot 'bx' (did you mean 'b'?): no bot of fleet 'acme' has that name, in this home's inventory" in typo.err
    assert "its bots: a, b, c" in typo.err
    with_files = hermes_fleet("status", "--home", home, "-f", manifest, "--bot", "bx")
    assert with_files.code == 2 and "in the manifests or in this home's inventory" in with_files.err
    labels = hermes_fleet("status", "--home", home, "-l", "team=ops")
    assert labels.code == 2 and "-l team=ops: labels are in the manifests, not in the home" in labels.err
    assert "add -f PATH" in labels.err
    bad = hermes_fleet("status", "--home", home, "-f", manifest, "-l", "team")
    assert bad.code == 2 and "-l 'team': write key=value" in bad.err and "Traceback" not in bad.text
    json_error = hermes_fleet("status", "--home", home, "--bot", "bx", "-o", "json")
    assert json_error.code == 2, json_error.text
    error = json_error.json()["error"]
    assert (error["type"], error["exit_code"]) == ("UnknownBot", 2) and "--bot 'bx'" in error["message"]
