"""SOUL.md, profile.yaml, the Bot Mode ui_meta record, the avatar image and the Bot Chat session."""

from __future__ import annotations

import json
from pathlib import Path

from controller.manifests.desired import section_id
from tests.integration.helpers import (
    apply,
    assert_converged,
    bot_chat_rows,
    changes,
    profile,
    read_yaml,
    session_count,
    tiny_png,
    write_fleet,
)

FULL_BOT = {
    "name": "researcher",
    "title": "Research Buddy",
    "description": "Reads papers.",
    "display_name": "Researcher",
    "soul": "You are meticulous.\n",
    "hidden": True,
    "section": "Team",
    "avatar": {"kind": "geometric", "shape": "hexagon", "color": "#8b5cf6"},
}


def _meta(home: Path, name: str = "researcher") -> dict:
    return read_yaml(profile(home, name) / "profile.yaml")


def test_soul_profile_yaml_and_bot_record_are_written(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [FULL_BOT], sections=[{"name": "Team"}])
    run = apply(manifest, home)
    assert run.code == 0, run.text

    bot = profile(home, "researcher")
    assert (bot / "SOUL.md").read_text() == "You are meticulous.\n"
    meta = _meta(home)
    assert meta["description"] == "Reads papers."
    assert meta["display_name"] == "Researcher"
    record = meta["ui_meta"]["hermes-bots"]
    assert record["title"] == "Research Buddy"
    assert "description" not in record  # top-level description only, as Desktop writes it
    assert record["hidden"] is True
    assert record["sectionName"] == "Team"
    assert record["sectionId"] == section_id("acme", "Team")
    assert (record["shape"], record["color"], record["imageKind"], record["custom"]) == (
        "hexagon",
        "#8b5cf6",
        "shape",
        True,
    )
    assert meta["_ui_meta_revisions"] == {"hermes-bots": 1}
    assert_converged(manifest, home)


def test_blob_avatar_fields(home: Path, manifests: Path) -> None:
    bot = {"name": "blob", "avatar": {"kind": "blob", "seed": "s1", "silhouette": "round"}}
    assert apply(write_fleet(manifests, [bot]), home).code == 0
    record = _meta(home, "blob")["ui_meta"]["hermes-bots"]
    assert record["shape"] == "blobatar:s1:round"
    assert record["imageKind"] == "shape"


def test_revision_bumps_only_when_the_record_changes(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [FULL_BOT], sections=[{"name": "Team"}])
    assert apply(manifest, home).code == 0
    assert apply(manifest, home).code == 0
    assert apply(manifest, home).code == 0
    assert _meta(home)["_ui_meta_revisions"]["hermes-bots"] == 1

    # A top-level-only change (display_name) does not touch the ui_meta record.
    manifest = write_fleet(manifests, [{**FULL_BOT, "display_name": "Other"}], sections=[{"name": "Team"}])
    assert apply(manifest, home).code == 0
    assert _meta(home)["display_name"] == "Other"
    assert _meta(home)["_ui_meta_revisions"]["hermes-bots"] == 1

    manifest = write_fleet(manifests, [{**FULL_BOT, "title": "Research Pal"}], sections=[{"name": "Team"}])
    assert apply(manifest, home).code == 0
    meta = _meta(home)
    assert meta["ui_meta"]["hermes-bots"]["title"] == "Research Pal"
    assert meta["_ui_meta_revisions"]["hermes-bots"] == 2


def test_unknown_keys_foreign_namespaces_and_groups_survive(home: Path, manifests: Path) -> None:
    bot = profile(home, "researcher")
    bot.mkdir(parents=True)
    (bot / "profile.yaml").write_text(
        json.dumps(
            {
                "description": "old",
                "description_auto": True,
                "unknown_top": {"x": 1},
                "ui_meta": {
                    "hermes-bots": {
                        "title": "Old",
                        "groups": ["Review", "Standup"],
                        "pinned": True,
                        "screenAutoOpen": True,
                        "futureKey": {"a": 1},
                        "created": 1700000000000,
                    },
                    "hermes-bots-groups": {"version": 3, "rooms": {"name:Review": {"members": ["a"]}}},
                    "other-plugin": {"keep": "me"},
                },
                "_ui_meta_revisions": {"hermes-bots": 7, "other-plugin": 3},
            }
        )
    )
    manifest = write_fleet(manifests, [{"name": "researcher", "title": "Research Buddy", "description": "new"}])
    run = apply(manifest, home, "--adopt")
    assert run.code == 0, run.text

    meta = _meta(home)
    record = meta["ui_meta"]["hermes-bots"]
    assert record["title"] == "Research Buddy"
    assert "description" not in record
    assert record["groups"] == ["Review", "Standup"]
    assert record["pinned"] is True and record["screenAutoOpen"] is True
    assert record["futureKey"] == {"a": 1}
    assert record["created"] == 1700000000000
    assert meta["ui_meta"]["hermes-bots-groups"] == {
        "version": 3,
        "rooms": {"name:Review": {"members": ["a"]}},
    }
    assert meta["ui_meta"]["other-plugin"] == {"keep": "me"}
    assert meta["unknown_top"] == {"x": 1}
    assert meta["description"] == "new"
    assert meta["_ui_meta_revisions"] == {"hermes-bots": 8, "other-plugin": 3}
    assert_converged(manifest, home)


def test_avatar_image_is_published_as_an_asset(home: Path, manifests: Path) -> None:
    png = tiny_png()
    (manifests / "face.png").write_bytes(png)
    manifest = write_fleet(manifests, [{"name": "researcher", "avatar": {"image": "face.png"}}])
    run = apply(manifest, home)
    assert run.code == 0, run.text
    assets = profile(home, "researcher") / "assets"
    assert (assets / "avatar.png").read_bytes() == png
    record = _meta(home)["ui_meta"]["hermes-bots"]
    assert record["imageKind"] == "photo" and record["custom"] is True
    assert "image" not in record  # the data URL is never stored in ui_meta
    assert_converged(manifest, home)

    # A new picture replaces the file; the plan shows it first.
    (manifests / "face.png").write_bytes(tiny_png((1, 2, 3)))
    assert "bot/researcher" in changes(manifest, home)
    assert apply(manifest, home).code == 0
    assert (assets / "avatar.png").read_bytes() == tiny_png((1, 2, 3))
    assert_converged(manifest, home)


def test_bot_chat_is_created_once(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{"name": "researcher", "title": "R"}])
    assert apply(manifest, home).code == 0
    bot = profile(home, "researcher")
    rows = bot_chat_rows(bot)
    assert [title for _, title in rows] == ["Bot Chat"]
    for _ in range(3):
        assert apply(manifest, home).code == 0
    assert bot_chat_rows(bot) == rows
    assert session_count(bot) == 1


def test_bot_chat_is_recreated_only_when_missing(home: Path, manifests: Path) -> None:
    import sqlite3

    manifest = write_fleet(manifests, [{"name": "researcher"}])
    assert apply(manifest, home).code == 0
    bot = profile(home, "researcher")
    conn = sqlite3.connect(bot / "state.db")
    conn.execute("DELETE FROM sessions")
    conn.commit()
    conn.close()
    planned = changes(manifest, home)
    assert [f["field"] for f in planned["bot/researcher"]["fields"]] == ["botchat"]
    assert apply(manifest, home).code == 0
    assert len(bot_chat_rows(bot)) == 1


def test_a_title_that_tags_a_live_unmanaged_profile_is_refused(home: Path, manifests: Path) -> None:
    """The Desktop tags every profile of the home; a tag two share reaches nobody (bot-mode.md#mentions)."""
    other = home / "profiles" / "helper"
    other.mkdir(parents=True)
    (other / "profile.yaml").write_text("display_name: Scout\nui_meta:\n  hermes-bots:\n    title: Field Scout\n")
    (home / "profiles" / "writer").mkdir()
    for title, tag, owner in (("Writer", "@writer", "the name of profile 'writer'"),
                              ("Scout", "@scout", "the display_name tag of profile 'helper'"),
                              ("Field-Scout", "@field-scout", "the title tag of profile 'helper'")):  # fmt: skip
        manifest = write_fleet(manifests, [{"name": "beta", "title": title}])
        run = apply(manifest, home)
        assert run.code == 3, run.text
        assert "mention-collision" in run.text or tag in run.text, run.text
        assert f"its title gives {tag}, which is also {owner}" in run.text, run.text
        assert not (home / "profiles" / "beta").exists()
    run = apply(write_fleet(manifests, [{"name": "beta", "title": "Reviewer"}]), home)
    assert run.code == 0, run.text


def test_titles_and_section_names_are_written_trimmed(home: Path, manifests: Path) -> None:
    """The Desktop trims both wherever it reads or writes them (labels.ts, user-sections.ts)."""
    bot = {"name": "researcher", "title": "  Research Buddy ", "section": " Team "}
    manifest = write_fleet(manifests, [bot], sections=[{"name": "Team  "}])
    run = apply(manifest, home)
    assert run.code == 0, run.text
    record = _meta(home)["ui_meta"]["hermes-bots"]
    assert (record["title"], record["sectionName"]) == ("Research Buddy", "Team")
    assert record["sectionId"] == section_id("acme", "Team")
    assert_converged(manifest, home)

    # A copy written with spaces around it reads the same in the Desktop: not drift, nothing to apply.
    path = profile(home, "researcher") / "profile.yaml"
    path.write_text(path.read_text().replace("title: Research Buddy", "title: ' Research Buddy '"))
    assert_converged(manifest, home)
