"""Hand edits to the keys of a bot's profile.yaml the fleet does not manage (docs/cli.md#status):
listed by `status` as information, never drift, values never shown or stored.

The fleet manages `description` (+ `description_auto`) and `display_name` when the manifests set
them, and every bot's Bot Mode record `ui_meta.hermes-bots` with its revision; anything else in the
file (a description the manifests leave alone, another ui_meta namespace, a key a person added) is
unmanaged. Edited with the real `hermes profile describe NAME --text` (hermes-agent 0.19.0,
hermes_cli/profiles.py write_profile_meta) where 0.19.0 can write the key, else by editing the file
(0.19.0 has no writer for ui_meta or other keys: the Desktop of Hermes main, or a person, writes them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.adapters import baselines
from tests.hermes_support import HermesCLI, require_hermes
from tests.integration.helpers import all_text_under, apply, hermes_fleet, plan, write_fleet

SECRET = "sk-profileyaml0123456789abcdef"


def fleet(manifests: Path, turns: int = 20, **bot: Any) -> Path:
    return write_fleet(manifests, [{"name": "alpha", "config": {"agent.max_turns": turns}, **bot}])


def status(home: Path) -> tuple[str, dict[str, Any]]:
    text = hermes_fleet("status", "--home", home)
    data = hermes_fleet("status", "--home", home, "-o", "json")
    assert text.code == 0 and data.code == 0, text.text + data.text
    (report,) = data.json()["fleets"]
    return text.out, report


def profile_yaml(home: Path, name: str = "alpha") -> Path:
    return home / "profiles" / name / "profile.yaml"


def test_hermes_profile_describe_on_an_unmanaged_description_is_listed(home: Path, manifests: Path, tmp_path: Path) -> None:
    hermes = HermesCLI(require_hermes(), home, tmp_path / "hermes-user")
    manifest = fleet(manifests)  # no description: the fleet leaves it alone
    assert apply(manifest, home).code == 0
    assert status(home)[1]["hand_edits"] == []

    done = hermes.run("profile", "describe", "alpha", "--text", f"Answers the phone {SECRET}")
    assert "Description updated for 'alpha'." in done.stdout, done.stdout + done.stderr
    text, report = status(home)
    assert report["drifted"] == 0
    assert "bot/alpha profile.yaml: description (added), description_auto (added) since the apply of " in text
    (edit,) = report["hand_edits"]
    assert edit["file"] == "profile.yaml" and edit["object"] == "bot/alpha"
    assert edit["added"] == ["description", "description_auto"] and not edit["changed"] and not edit["removed"]
    assert "No changes" in plan(manifest, home).out  # never drift, never corrected
    assert apply(manifest, home).code == 0
    assert "Answers the phone" in profile_yaml(home).read_text()
    # Values are digests in the baseline (the observation cache keeps a description as the plan reads it).
    assert SECRET not in baselines.baseline_path(home, "acme").read_text() and SECRET not in text + json.dumps(report)


def test_a_managed_description_edited_is_drift_not_a_hand_edit(home: Path, manifests: Path, tmp_path: Path) -> None:
    hermes = HermesCLI(require_hermes(), home, tmp_path / "hermes-user")
    assert apply(fleet(manifests, description="Front desk"), home).code == 0
    hermes.run("profile", "describe", "alpha", "--text", "Something else")
    _, report = status(home)
    assert report["drifted"] == 1 and report["hand_edits"] == []  # description_auto is the fleet's too


def test_keys_added_beside_the_bot_record_are_listed_by_name_only(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests), home).code == 0
    path = profile_yaml(home)
    # As the Desktop of Hermes main writes its own ui_meta namespace and revision; and a person's key.
    path.write_text(
        path.read_text().replace("ui_meta:\n", "ui_meta:\n  desk-notes:\n    color: teal\n")
        + f"  desk-notes: 3\nrole: {SECRET}\n"
    )
    text, report = status(home)
    assert report["drifted"] == 0
    (edit,) = report["hand_edits"]
    assert edit["added"] == ["_ui_meta_revisions.desk-notes", "role", "ui_meta.desk-notes.color"]
    assert "bot/alpha profile.yaml: _ui_meta_revisions.desk-notes (added), role (added), ui_meta.desk-notes.color (added)" in text
    assert SECRET not in text and "teal" not in json.dumps(report)
    assert SECRET not in all_text_under(home / ".hermes-fleet")
    # The bot record itself is the fleet's: an edit there is never a hand edit.
    path.write_text(path.read_text().replace("shape: blobatar", "shape: square"))
    assert [e["added"] for e in status(home)[1]["hand_edits"]] == [edit["added"]]


def test_a_baseline_without_profile_yaml_gets_it_at_the_next_apply(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests)
    assert apply(manifest, home).code == 0
    path = baselines.baseline_path(home, "acme")
    data = json.loads(path.read_text())
    del data["profiles"]["alpha"]["files"]["profile.yaml"]  # as an earlier hermes-fleet recorded it
    path.write_text(json.dumps(data))
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text() + "display:\n  skin: mono\n")
    profile_yaml(home).write_text(profile_yaml(home).read_text() + "role: before\n")
    assert [e["file"] for e in status(home)[1]["hand_edits"]] == ["config.yaml"]  # profile.yaml: no baseline yet

    assert apply(manifest, home).code == 0  # writes nothing: records profile.yaml alone
    since = json.loads(path.read_text())["profiles"]["alpha"]["since"]["profile.yaml"]
    edits = status(home)[1]["hand_edits"]
    assert [(e["file"], e["added"]) for e in edits] == [("config.yaml", ["display.skin"])]  # still listed
    profile_yaml(home).write_text(profile_yaml(home).read_text().replace("role: before", "role: after"))
    text, report = status(home)
    assert [(e["file"], e["changed"], e["since"]) for e in report["hand_edits"]][1] == ("profile.yaml", ["role"], since)
    assert f"bot/alpha profile.yaml: role (changed) since the apply of {since}" in text


def test_the_root_profile_yaml_is_no_managed_file_without_a_default_bot(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, config={"agent.reasoning_effort": "low"}), home).code == 0
    (home / "profile.yaml").write_text("description: the root\nrole: x\n")
    files = {(e["object"], e["file"]) for e in status(home)[1]["hand_edits"]}
    assert ("install/root", "profile.yaml") not in files
