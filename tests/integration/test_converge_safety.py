"""apply's safety rules: read-only plan/dry-run, prune with backups and a guard, adopt, two fleets,
removal of fields the manifests stopped setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    fields,
    hermes_fleet,
    plan,
    plan_json,
    profile,
    read_yaml,
    snapshot,
    tiny_png,
    write_fleet,
)

# The drift suite runs with the observation cache on and off (tests/conftest.py), and agrees.
pytestmark = pytest.mark.usefixtures("observation_cache")


def _rich_fleet(manifests: Path, **overrides: object) -> Path:
    (manifests / "face.png").write_bytes(tiny_png())
    bots = [
        {
            "name": "researcher",
            "title": "Research Buddy",
            "description": "Reads.",
            "section": "Team",
            "soul": "Persona\n",
            "model": {"provider": "anthropic", "default": "claude"},
            "toolsets": ["web"],
            "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "LOG_LEVEL": "info"},
            "avatar": {"image": "face.png"},
            "config": {"agent.max_turns": 5},
        },
        {"name": "writer", "title": "Writer", "create_empty": True, "hidden": True},
        {"name": "default", "title": "Root Bot"},
    ]
    spec = {
        "sections": [{"name": "Team"}],
        "gateway": {"bot_mode_protocol": False},
        "peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "SPARK_KEY"}}],
        "config": {"timezone": "Europe/Berlin"},
        **overrides,
    }
    return write_fleet(manifests, bots, **spec)


def test_plan_and_dry_run_leave_the_tree_byte_identical(home: Path, manifests: Path) -> None:
    manifest = _rich_fleet(manifests)
    # On a home that does not exist: nothing is created, not even the root folder.
    assert plan(manifest, home).code == 3  # the root profile is taken over only with --adopt
    assert plan(manifest, home, "--adopt", "--detailed-exitcode").code == 4
    assert plan(manifest, home, "-o", "json", "--prune", "--adopt").code == 0
    assert apply(manifest, home, "--dry-run", "--adopt").code == 0
    assert apply(manifest, home, "--dry-run", "--prune", "--yes", "--adopt", "-o", "json").code == 0
    assert apply(manifest, home).code == 3  # refused before anything is written
    assert not home.exists()

    assert apply(manifest, home, "--adopt").code == 0
    # Every kind of pending change: a hand edit, a manifest change, an orphan, a missing Bot Chat.
    (profile(home, "writer") / "SOUL.md").write_text("hand soul\n")
    config = profile(home, "researcher") / "config.yaml"
    config.write_text(config.read_text().replace("max_turns: 5", "max_turns: 6"))
    manifest = _rich_fleet(manifests, config={"timezone": "UTC"})
    before = snapshot(home)
    for flags in ((), ("-o", "json"), ("--prune",), ("--detailed-exitcode",)):
        plan(manifest, home, *flags)
        assert snapshot(home) == before, flags
    for flags in ((), ("-o", "json"), ("--prune", "--yes")):
        assert apply(manifest, home, "--dry-run", *flags).code == 0
        assert snapshot(home) == before, flags
    hermes_fleet("status", "--home", home)
    hermes_fleet("status", "--home", home, "-f", manifest, "-o", "json")
    assert snapshot(home) == before


def test_mode_bits_are_part_of_the_dry_run_check(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "env": {"LOG_LEVEL": "x"}}])
    assert apply(manifest, home).code == 0
    before = snapshot(home)
    (profile(home, "bot") / ".env").chmod(0o640)
    assert snapshot(home) != before  # the snapshot does see a mode change


def test_prune_moves_only_owned_bots_to_a_restorable_backup(home: Path, manifests: Path) -> None:
    unmanaged = profile(home, "handmade")
    unmanaged.mkdir(parents=True)
    (unmanaged / "SOUL.md").write_text("mine\n")
    bots = [{"name": n, "title": n.title()} for n in ("alpha", "beta", "gamma", "delta")]
    manifest = write_fleet(manifests, [*bots, {"name": "default", "title": "Root"}])
    assert apply(manifest, home, "--adopt").code == 0
    (profile(home, "beta") / "memories" / "MEMORY.md").write_text("beta remembers\n")

    # beta is gone from the manifests: without --prune it is an orphan, reported and kept.
    manifest = write_fleet(manifests, [bots[0], bots[2], bots[3], {"name": "default", "title": "Root"}])
    orphan = changes(manifest, home)["bot/beta"]
    assert orphan["action"] == "orphan"
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assert "orphan" in run.out
    assert profile(home, "beta").is_dir()

    run = apply(manifest, home, "--prune")
    assert run.code == 0, run.text
    assert not profile(home, "beta").exists()
    backups = list((home / ".hermes-fleet" / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.endswith("-beta")
    assert (backups[0] / "profile" / "memories" / "MEMORY.md").read_text() == "beta remembers\n"
    assert (unmanaged / "SOUL.md").read_text() == "mine\n"
    assert profile(home, "alpha").is_dir() and (home / "profile.yaml").is_file()

    listed = hermes_fleet("restore", "--home", home)
    assert backups[0].name in listed.out
    restored = hermes_fleet("restore", "--home", home, backups[0].name)
    assert restored.code == 0, restored.text
    assert (profile(home, "beta") / "memories" / "MEMORY.md").read_text() == "beta remembers\n"
    # What restore says is what happens: apply leaves the bot alone (no orphan) until it is back in
    # the fleet's manifests, and then manages it again without changes.
    assert "apply leaves it alone until bot 'beta' is back in that fleet's manifests" in restored.out
    assert "bot/beta" not in changes(manifest, home, "--prune")
    assert "beta" not in {o["name"] for o in plan_json(manifest, home)["objects"]}
    manifest = write_fleet(manifests, [*bots, {"name": "default", "title": "Root"}])
    assert "bot/beta" not in changes(manifest, home)
    assert_converged(manifest, home)


def test_prune_never_deletes_the_default_profile(home: Path, manifests: Path) -> None:
    manifest = write_fleet(
        manifests,
        [{"name": "default", "title": "Root"}, {"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
    )
    assert apply(manifest, home, "--adopt").code == 0
    manifest = write_fleet(manifests, [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])
    obj = changes(manifest, home, "--prune")["bot/default"]
    assert obj["action"] == "release"
    run = apply(manifest, home, "--prune", "--yes")
    assert run.code == 0, run.text
    assert (home / "state.db").is_file() and home.is_dir()
    assert not (home / ".hermes-fleet" / "backups").exists()
    assert_converged(manifest, home)


def test_prune_above_the_guard_fraction_needs_yes(home: Path, manifests: Path) -> None:
    bots = [{"name": f"bot{i}"} for i in range(4)]
    manifest = write_fleet(manifests, bots)
    assert apply(manifest, home).code == 0
    manifest = write_fleet(manifests, bots[:2])
    before = snapshot(home)
    run = apply(manifest, home, "--prune")
    assert run.code == 3, run.text
    assert "--yes" in run.text
    assert snapshot(home) == before
    run = apply(manifest, home, "--prune", "--yes")
    assert run.code == 0, run.text
    assert sorted(p.name for p in (home / "profiles").iterdir()) == ["bot0", "bot1"]


def test_existing_unmanaged_profile_needs_adopt(home: Path, manifests: Path) -> None:
    theirs = profile(home, "researcher")
    theirs.mkdir(parents=True)
    (theirs / "config.yaml").write_text("agent:\n  max_turns: 3\n")
    manifest = write_fleet(
        manifests,
        [{"name": "researcher", "title": "R", "model": {"default": "m"}}, {"name": "other", "title": "O"}],
    )
    before = snapshot(home)
    run = apply(manifest, home)
    assert run.code == 3, run.text
    assert "--adopt" in run.text
    assert snapshot(home) == before  # nothing written anywhere, not even the other bot or an inventory

    run = apply(manifest, home, "--adopt")
    assert run.code == 0, run.text
    data = read_yaml(theirs / "config.yaml")
    assert data["model"] == {"default": "m"} and data["agent"] == {"max_turns": 3}
    assert_converged(manifest, home)
    # Adopted: prune may now back it up (one of two bots: above the guard, so with --yes).
    manifest = write_fleet(manifests, [{"name": "other", "title": "O"}])
    assert changes(manifest, home, "--prune")["bot/researcher"]["reason_code"] == "prune-guard"
    assert apply(manifest, home, "--prune", "--yes").code == 0
    assert not theirs.exists()


def test_two_fleets_never_touch_each_others_profiles(home: Path, manifests: Path) -> None:
    a = write_fleet(manifests / "a", [{"name": "shared", "title": "A's"}, {"name": "a-only"}], fleet="team-a")
    assert apply(a, home).code == 0
    b = write_fleet(manifests / "b", [{"name": "shared", "title": "B's"}, {"name": "b-only"}], fleet="team-b")
    for flags in ((), ("--adopt",), ("--adopt", "--prune", "--yes")):
        before = snapshot(home)
        run = apply(b, home, *flags)
        assert run.code == 3, run.text
        assert "team-a" in run.text
        assert snapshot(home) == before
    assert read_yaml(profile(home, "shared") / "profile.yaml")["ui_meta"]["hermes-bots"]["title"] == "A's"

    # B without the clash converges, and neither prune touches the other's bots.
    b = write_fleet(manifests / "b", [{"name": "b-only"}], fleet="team-b")
    assert apply(b, home, "--prune", "--yes").code == 0
    a = write_fleet(manifests / "a", [{"name": "a-only"}], fleet="team-a")
    assert apply(a, home, "--prune", "--yes").code == 0
    assert not profile(home, "shared").exists()
    assert profile(home, "b-only").is_dir() and profile(home, "a-only").is_dir()
    b2 = write_fleet(manifests / "b", [], fleet="team-b")
    plan_b = changes(b2, home, "--prune")
    assert "bot/a-only" not in plan_b
    assert_converged(a, home)


def test_removed_field_is_cleared_only_if_untouched(home: Path, manifests: Path) -> None:
    full = {
        "name": "bot",
        "title": "T",
        "hidden": True,
        "section": "Team",
        "description": "D",
        "config": {"agent.max_turns": 5, "memory.memory_char_limit": 3000},
        "env": {"LOG_LEVEL": "x"},
    }
    manifest = write_fleet(manifests, [full], sections=[{"name": "Team"}])
    assert apply(manifest, home).code == 0
    bot = profile(home, "bot")
    config = bot / "config.yaml"
    config.write_text(config.read_text().replace("memory_char_limit: 3000", "memory_char_limit: 3333"))

    manifest = write_fleet(manifests, [{"name": "bot", "title": "T"}], sections=[{"name": "Team"}])
    planned = fields(changes(manifest, home)["bot/bot"])
    assert planned["config:agent.max_turns"]["op"] == "remove"
    assert "config:memory.memory_char_limit" not in planned  # hand-edited since: kept
    assert planned["meta:hidden"]["op"] == "remove"
    run = apply(manifest, home)
    assert run.code == 0, run.text

    data = read_yaml(config)
    assert "max_turns" not in data.get("agent", {})
    assert data["memory"]["memory_char_limit"] == 3333
    assert "LOG_LEVEL" not in (bot / ".env").read_text()
    record = read_yaml(bot / "profile.yaml")["ui_meta"]["hermes-bots"]
    assert record["hidden"] is False  # explicit clear, as Desktop keeps omitted keys
    assert record["sectionId"] is None and record["sectionName"] is None
    assert "description" not in record  # descriptions live at the top level only (Desktop's place)
    assert record["title"] == "T"
    assert_converged(manifest, home)


def test_hand_edited_ui_meta_field_is_kept_when_released(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "bot", "title": "T", "hidden": True}])
    assert apply(manifest, home).code == 0
    meta = profile(home, "bot") / "profile.yaml"
    meta.write_text(meta.read_text().replace("hidden: true", "hidden: false").replace("title: T", "title: Mine"))
    manifest = write_fleet(manifests, [{"name": "bot", "title": "T"}])
    assert "meta:hidden" not in fields(changes(manifest, home)["bot/bot"])
    assert apply(manifest, home).code == 0
    record = read_yaml(meta)["ui_meta"]["hermes-bots"]
    assert record["title"] == "T"  # still managed: drift corrected
    assert record["hidden"] is False


def test_the_root_profile_is_managed_after_adopt(home: Path, manifests: Path) -> None:
    home.mkdir()
    (home / "config.yaml").write_text("custom: 1\n")
    manifest = write_fleet(manifests, [{"name": "default", "title": "Root", "config": {"agent.max_turns": 4}}])
    before = snapshot(home)
    run = apply(manifest, home)
    assert run.code == 3, run.text
    assert "--adopt" in run.text
    assert snapshot(home) == before
    run = apply(manifest, home, "--adopt")
    assert run.code == 0, run.text
    assert read_yaml(home / "config.yaml") == {"custom": 1, "agent": {"max_turns": 4}, "_config_version": 33}
    assert read_yaml(home / "profile.yaml")["ui_meta"]["hermes-bots"]["title"] == "Root"
    assert not (home / "profiles").exists()
    assert_converged(manifest, home)

    # Once one fleet manages the root profile, another fleet's claim is a conflict, even with --adopt.
    other = write_fleet(manifests / "other", [{"name": "default", "title": "Theirs"}], fleet="other")
    before = snapshot(home)
    for flags in ((), ("--adopt",)):
        run = apply(other, home, *flags)
        assert run.code == 3, run.text
        assert snapshot(home) == before


def test_an_adopt_plan_lists_the_bot_chat_that_apply_creates(home: Path, manifests: Path) -> None:
    handmade = profile(home, "alpha")
    handmade.mkdir(parents=True)
    (handmade / "config.yaml").write_text("model:\n  default: x\n")
    manifest = write_fleet(manifests, [{"name": "alpha", "model": {"default": "x"}}])
    (obj,) = [o for o in plan_json(manifest, home, "--adopt")["objects"] if o["name"] == "alpha"]
    assert obj["action"] == "adopt"
    assert ("botchat", "add") in [(f["field"], f["op"]) for f in obj["fields"]]
    assert apply(manifest, home, "--adopt").code == 0
    assert_converged(manifest, home)


def test_a_backup_that_does_not_exist_is_a_usage_error(home: Path) -> None:
    run = hermes_fleet("restore", "bogus", "--home", home)
    assert run.code == 2 and "no such backup: bogus" in run.err and "Traceback" not in run.text


def test_a_home_that_is_a_file_is_a_usage_error(tmp_path: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "alpha"}])
    not_a_folder = tmp_path / "passwd"
    not_a_folder.write_text("root:x:0:0\n")
    run = plan(manifest, not_a_folder)
    assert run.code == 2 and "--home" in run.err and "is not a folder" in run.err
    assert "move the file away" not in run.err
