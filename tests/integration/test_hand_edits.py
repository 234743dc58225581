"""Hand edits to keys the fleet does not manage (docs/cli.md#status): `status` lists them as
information, never drift, and `plan` stays a no-op. Edited with the real `hermes config set`
(hermes-agent 0.19.0) in a temporary home; values never appear in output or in the state dir.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.adapters import baselines
from tests.hermes_support import HermesCLI, require_hermes
from tests.integration.helpers import all_text_under, apply, hermes_fleet, plan, write_fleet

SECRET = "sk-handedit0123456789abcdef"


def fleet(manifests: Path, turns: int = 20, names: tuple[str, ...] = ("alpha",)) -> Path:
    return write_fleet(manifests, [{"name": n, "config": {"agent.max_turns": turns}} for n in names])


def status(home: Path) -> tuple[str, list[dict[str, Any]]]:
    text = hermes_fleet("status", "--home", home)
    data = hermes_fleet("status", "--home", home, "-o", "json")
    assert text.code == 0 and data.code == 0, text.text + data.text
    (report,) = data.json()["fleets"]
    assert report["drifted"] == 0  # never drift
    return text.out, report["hand_edits"]


def test_hermes_config_set_on_an_unmanaged_key_is_listed_not_drift(home: Path, manifests: Path, tmp_path: Path) -> None:
    hermes = HermesCLI(require_hermes(), home, tmp_path / "hermes-user")
    manifest = fleet(manifests)
    assert apply(manifest, home).code == 0
    assert status(home)[1] == []

    hermes.run("config", "set", "approvals.mode", "manual", profile="alpha")
    hermes.run("config", "set", "OPENAI_API_KEY", SECRET, profile="alpha")  # 0.19.0 puts an API key into .env
    text, edits = status(home)
    assert "edited by hand: 2 file(s), in keys this fleet does not manage (not drift, never corrected):" in text
    assert "bot/alpha config.yaml: approvals.mode (added) since the apply of " in text
    assert "bot/alpha .env: OPENAI_API_KEY (added)" in text
    assert "drift: 0 object(s) differ from the last apply (in sync)" in text
    by_file = {e["file"]: e for e in edits}
    assert by_file["config.yaml"]["added"] == ["approvals.mode"] and by_file["config.yaml"]["object"] == "bot/alpha"
    assert by_file[".env"]["added"] == ["OPENAI_API_KEY"]

    # plan stays a no-op, and an apply that changes nothing leaves the edits listed.
    assert "No changes" in plan(manifest, home).out
    assert apply(manifest, home).code == 0
    assert len(status(home)[1]) == 2
    assert "manual" not in (home / ".hermes-fleet" / "baseline" / "acme.json").read_text()
    assert SECRET not in all_text_under(home / ".hermes-fleet") and SECRET not in text

    # An apply that writes the bot records its files afresh; a later edit is a change of that key.
    assert apply(fleet(manifests, 30), home).code == 0
    assert status(home)[1] == []
    hermes.run("config", "set", "approvals.mode", "off", profile="alpha")
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("max_turns: 30", "max_turns: 30\n  gateway_timeout: 99"))
    text, edits = status(home)
    assert "approvals.mode (changed), agent.gateway_timeout (added)" in text
    assert edits[0]["changed"] == ["approvals.mode"] and edits[0]["added"] == ["agent.gateway_timeout"]
    assert "off" not in json.dumps(edits)


def test_a_managed_key_edited_is_drift_not_a_hand_edit(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests), home).code == 0
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("max_turns: 20", "max_turns: 7"))
    report = hermes_fleet("status", "--home", home, "-o", "json").json()["fleets"][0]
    assert report["drifted"] == 1 and report["hand_edits"] == []


def test_a_key_removed_by_hand_is_listed(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests), home).code == 0
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text() + "display:\n  compact: true\n  skin: mono\n")
    assert apply(fleet(manifests, 21), home).code == 0  # the bot written: its baseline holds display.*
    config.write_text(config.read_text().replace("  skin: mono\n", ""))
    assert "bot/alpha config.yaml: display.skin (removed)" in status(home)[0]


def test_bots_alike_share_one_recorded_map(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests, names=("a", "b", "c", "d")), home).code == 0
    data = json.loads(baselines.baseline_path(home, "acme").read_text())
    assert sorted(data["profiles"]) == ["a", "b", "c", "d"] and len(data["maps"]) == 1
    assert baselines.baseline_path(home, "acme").stat().st_mode & 0o777 == 0o600
    # A bot gone from the fleet leaves the baseline with it.
    assert apply(fleet(manifests, names=("a", "b", "c")), home, "--prune").code == 0
    assert sorted(json.loads(baselines.baseline_path(home, "acme").read_text())["profiles"]) == ["a", "b", "c"]


def test_an_unusable_baseline_is_said_and_recorded_again(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests)
    assert apply(manifest, home).code == 0
    path = baselines.baseline_path(home, "acme")
    path.write_text('{"schemaVersion": 1, "fleet": "acme", "maps": {"x": {"k": 1}}, "profiles": {}}')
    text = hermes_fleet("status", "--home", home)
    assert text.code == 0 and "edited by hand: unknown, the baseline is unusable" in text.out, text.text
    assert apply(manifest, home).code == 0  # nothing to change: the baseline is still written afresh
    assert baselines.read(home, "acme")[1] == "" and "the baseline is unusable" not in status(home)[0]


def test_a_hostile_key_is_printed_quoted(home: Path, manifests: Path) -> None:
    assert apply(fleet(manifests), home).code == 0
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text() + '"evil\\e[31mkey": 1\n')
    text = status(home)[0]
    assert "\x1b" not in text and "'evil\\x1b[31mkey' (added)" in text
