"""Renaming a bot (`renamed_from`) moves everything it has (docs/manifest.md#renaming-a-bot).

Real files in a temporary Hermes home, the CLI in-process, rooms on the loopback gateway
(tests/integration/fake_gateway.py). What the real Hermes 0.19.0 reads after a rename is in
tests/compat/test_rename_hermes.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import inventory as inventory_file
from tests.integration.fake_gateway import FakeGateway
from tests.integration.helpers import (
    apply,
    assert_converged,
    bot_chat_rows,
    hermes_fleet,
    plan_json,
    profile,
    read_yaml,
    snapshot,
    write_fleet,
)

ROUTINES = [
    {"name": "Digest", "schedule": "0 9 * * *", "prompt": "Summarize the news"},
    {"name": "Sweep", "schedule": "every 2h", "script": "sweep.sh", "no_agent": True},
]


def alpha(name: str = "alpha", **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "title": "Alpha",
        "section": "Team",
        "soul": "You are Alpha.\n",
        "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}, "MODE": "fast"},
        "routines": ROUTINES,
        **more,
    }


def fleet(manifests: Path, *bots: dict[str, Any], **spec: Any) -> Path:
    return write_fleet(manifests, list(bots), sections=[{"name": "Team"}], **spec)


def jobs(home: Path, bot: str) -> list[dict[str, Any]]:
    return json.loads((profile(home, bot) / "cron" / "jobs.json").read_text(encoding="utf-8"))["jobs"]


def inventory(home: Path) -> dict[str, Any]:
    return json.loads((home / ".hermes-fleet" / "inventory" / "acme.json").read_text(encoding="utf-8"))["objects"]


def remember(home: Path, bot: str) -> None:
    """What a bot learned: a memory file, a skill, a chat session, a hand-made job of its own."""
    path = profile(home, bot)
    (path / "memories").mkdir(exist_ok=True)
    (path / "memories" / "MEMORY.md").write_text("The user prefers short answers.\n", encoding="utf-8")
    (path / "skills" / "mine").mkdir(parents=True, exist_ok=True)
    (path / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\n---\nA skill it wrote.\n", encoding="utf-8")
    conn = sqlite3.connect(path / "state.db")
    try:
        conn.execute("INSERT INTO sessions (id, source, title, started_at) VALUES ('s-learned', 'cli', 'Talk about tea', 1.0)")
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def renamed(home: Path, manifests: Path) -> tuple[Path, dict[str, Any], dict[str, str]]:
    """alpha applied and used, then renamed to scout: the snapshot of alpha before, its job ids."""
    first = apply(fleet(manifests, alpha(), {"name": "beta"}), home)
    assert first.code == 0, first.text
    remember(home, "alpha")
    before = snapshot(profile(home, "alpha"))
    ids = {j["name"]: j["id"] for j in jobs(home, "alpha")}
    m = fleet(manifests, alpha("scout", renamed_from="alpha"), {"name": "beta"})
    return m, before, ids


def test_plan_shows_one_rename_and_writes_nothing(home: Path, renamed) -> None:
    m, _, _ = renamed
    before = snapshot(home)
    data = plan_json(m, home)
    objects = {f"{o['kind']}/{o['name']}": o for o in data["objects"]}
    bot = objects["bot/scout"]
    assert (bot["action"], bot["reason_code"]) == ("rename", "profile-renamed"), bot
    assert "bot/alpha" not in objects  # not an orphan: it is the same bot
    for title in ("Digest", "Sweep"):
        routine = objects[f"routine/scout/{title}"]
        assert routine["action"] == "update", routine
        assert {f["field"] for f in routine["fields"]} >= {"job:name"}
    assert data["summary"]["rename"] == 1
    text = hermes_fleet("plan", "-f", m, "--home", home).out
    assert "> bot/scout  rename (renamed from 'alpha'" in text and "0 to adopt, 1 to rename, 0 to delete" in text, text
    assert not any("renamed from" in n for n in data["notes"]), data["notes"]  # no wrapper alias, no Honcho block
    assert snapshot(home) == before


def test_rename_carries_memories_sessions_skills_env_bot_chat_and_routines(home: Path, renamed) -> None:
    m, before, ids = renamed
    run = apply(m, home)
    assert run.code == 0, run.text
    assert not profile(home, "alpha").exists()
    new = profile(home, "scout")
    after = snapshot(new)
    # Every file of the old profile is in the new one, byte for byte, but the few a rename rewrites.
    rewritten = {".hermes-fleet-owner.json", "cron/jobs.json", "state.db", "profile.yaml"}
    for rel, entry in before.items():
        if rel not in rewritten and not rel.startswith("cron/"):
            assert after.get(rel) == entry, rel
    assert (new / "memories" / "MEMORY.md").read_text() == "The user prefers short answers.\n"
    assert (new / "skills" / "mine" / "SKILL.md").is_file()
    assert (new / "SOUL.md").read_text() == "You are Alpha.\n"
    env = (new / ".env").read_text()
    assert "OPENROUTER_API_KEY=sk-or-" in env and "MODE=fast" in env
    assert len(bot_chat_rows(new)) == 1
    conn = sqlite3.connect(new / "state.db")
    assert conn.execute("SELECT title FROM sessions WHERE id='s-learned'").fetchone() == ("Talk about tea",)
    conn.close()
    # Routines: same ids, new names; the prompt is the instruction (the store runs as the new profile).
    live = {j["id"]: j for j in jobs(home, "scout")}
    assert set(live) == set(ids.values())
    assert live[ids["[bot:alpha] Digest"]]["name"] == "[bot:scout] Digest"
    assert live[ids["[bot:alpha] Sweep"]]["name"] == "[bot:scout] Sweep"
    assert live[ids["[bot:alpha] Digest"]]["prompt"] == "Summarize the news"
    # Section and Bot Mode record moved with profile.yaml; owner marker and inventory name the new bot.
    record = read_yaml(new / "profile.yaml")["ui_meta"]["hermes-bots"]
    assert record["sectionName"] == "Team" and record["title"] == "Alpha"
    assert inventory_file.read_marker(home, "scout") == {**json.loads((new / ".hermes-fleet-owner.json").read_text())}
    assert inventory_file.read_marker(home, "scout")["profile"] == "scout"
    objects = inventory(home)
    assert "bot/alpha" not in objects and "bot/scout" in objects
    assert objects["bot/scout"]["renamed_from"] == "alpha"
    assert {k for k in objects if k.startswith("routine/")} == {"routine/scout/Digest", "routine/scout/Sweep"}
    assert objects["routine/scout/Digest"]["job_id"] == ids["[bot:alpha] Digest"]
    assert_converged(m, home)
    # renamed_from may stay: nothing more happens; nor when it is dropped.
    assert apply(m, home).code == 0
    assert_converged(write_fleet(m.parent, [alpha("scout"), {"name": "beta"}], sections=[{"name": "Team"}]), home)


def test_a_rename_cut_short_after_the_folder_moved_is_finished_not_taken_for_a_stranger(home: Path, renamed) -> None:
    m, _, ids = renamed
    # What a kill right after the folder rename leaves: the folder moved, nothing else.
    (profile(home, "alpha")).rename(profile(home, "scout"))
    assert json.loads((profile(home, "scout") / ".hermes-fleet-owner.json").read_text())["profile"] == "alpha"
    bot = next(o for o in plan_json(m, home)["objects"] if o["name"] == "scout")
    assert (bot["action"], bot["reason_code"]) == ("rename", "profile-renamed") and "finishing" in bot["reason"], bot
    run = apply(m, home)
    assert run.code == 0, run.text
    assert inventory_file.read_marker(home, "scout") is not None
    assert {j["id"] for j in jobs(home, "scout")} == set(ids.values())
    assert "bot/alpha" not in inventory(home)
    assert_converged(m, home)


def test_once_renamed_the_old_name_is_not_looked_at_again(home: Path, renamed) -> None:
    m, _, _ = renamed
    assert apply(m, home).code == 0
    (home / "profiles" / "alpha").symlink_to("scout")  # an old name kept working by hand
    assert_converged(m, home)


def test_unmanaged_bot_mode_jobs_and_hand_written_delegations_are_retargeted(home: Path, renamed) -> None:
    m, _, _ = renamed
    store = profile(home, "alpha") / "cron" / "jobs.json"
    data = json.loads(store.read_text())
    data["jobs"].append(
        {"id": "deskjob00001", "name": "[bot:alpha] Made in Desktop", "prompt": "run: hermes -p alpha chat -q hi"}
    )
    data["jobs"].append({"id": "otherjob0001", "name": "unrelated", "prompt": "hermes -p alphabet chat"})
    store.write_text(json.dumps(data))
    assert apply(m, home).code == 0
    live = {j["id"]: j for j in jobs(home, "scout")}
    assert live["deskjob00001"]["name"] == "[bot:scout] Made in Desktop"
    assert live["deskjob00001"]["prompt"] == "run: hermes -p scout chat -q hi"
    assert live["otherjob0001"] == {"id": "otherjob0001", "name": "unrelated", "prompt": "hermes -p alphabet chat"}


def test_honcho_host_block_and_sticky_profile_follow_the_rename(home: Path, renamed) -> None:
    m, _, _ = renamed
    (profile(home, "alpha") / "honcho.json").write_text(json.dumps({"hosts": {"hermes_alpha": {"workspace": "w"}}}))
    (home / "honcho.json").write_text(json.dumps({"apiKey": "x", "hosts": {"hermes.alpha": {"aiPeer": "al"}, "other": {}}}))
    (home / "active_profile").write_text("alpha\n")
    user_honcho = Path.home() / ".honcho" / "config.json"
    user_honcho.parent.mkdir()
    user_honcho.write_text(json.dumps({"hosts": {"hermes_alpha": {}}}))
    data = plan_json(m, home)
    assert any("~/.honcho/config.json" in n for n in data["notes"]), data["notes"]
    assert apply(m, home).code == 0
    assert json.loads((profile(home, "scout") / "honcho.json").read_text()) == {
        "hosts": {"hermes_scout": {"workspace": "w", "aiPeer": "alpha"}}
    }
    root_honcho = json.loads((home / "honcho.json").read_text())
    assert root_honcho == {"apiKey": "x", "hosts": {"other": {}, "hermes_scout": {"aiPeer": "al"}}}
    assert (home / "active_profile").read_text() == "scout\n"
    assert json.loads(user_honcho.read_text()) == {"hosts": {"hermes_alpha": {}}}  # outside the home: left alone


def test_a_rename_whose_old_profile_is_gone_creates_the_bot_and_drops_the_old_records(home: Path, renamed) -> None:
    m, _, _ = renamed
    import shutil

    shutil.rmtree(profile(home, "alpha"))
    bot = next(o for o in plan_json(m, home)["objects"] if o["name"] == "scout")
    assert (bot["action"], bot["reason_code"]) == ("create", "recreated"), bot
    assert apply(m, home).code == 0
    assert {j["name"] for j in jobs(home, "scout")} == {"[bot:scout] Digest", "[bot:scout] Sweep"}
    assert not any(k.endswith("/alpha") or "/alpha/" in k for k in inventory(home))
    assert_converged(m, home)


def test_on_a_machine_without_the_old_profile_the_bot_is_simply_created(home: Path, manifests: Path) -> None:
    m = fleet(manifests, alpha("scout", renamed_from="alpha"))
    bot = next(o for o in plan_json(m, home)["objects"] if o["name"] == "scout")
    assert (bot["action"], bot["reason_code"]) == ("create", "new"), bot
    assert apply(m, home).code == 0
    assert_converged(m, home)


# --- refusals -----------------------------------------------------------------------------------


def refused(home: Path, m: Path) -> dict[str, Any]:
    before = snapshot(home)
    run = apply(m, home, "-o", "json")
    assert run.code == 3, run.text
    assert snapshot(home) == before, "a refused rename writes nothing"
    return next(o for o in run.json()["objects"] if o["kind"] == "bot" and o["reason_code"] == "rename-refused")


def test_refused_when_the_new_name_is_taken_by_a_profile_the_fleet_does_not_own(home: Path, renamed) -> None:
    m, _, _ = renamed
    (profile(home, "scout")).mkdir()
    bot = refused(home, m)
    assert bot["name"] == "scout" and "already exists" in bot["reason"] and "not managed" in bot["reason"]
    assert bot["origin"].startswith(str(m)) and int(bot["origin"].rpartition(":")[2]) > 0  # file:line of the bot


def test_refused_when_both_profiles_are_the_fleets_bots(home: Path, renamed, manifests: Path) -> None:
    m, _, _ = renamed
    assert apply(fleet(manifests / "three", alpha(), {"name": "beta"}, {"name": "scout"}), home).code == 0
    bot = refused(home, m)
    assert "both profiles exist" in bot["reason"]


def test_refused_when_the_old_profile_is_not_a_bot_of_this_fleet(home: Path, manifests: Path) -> None:
    (home / "profiles" / "stranger").mkdir(parents=True)
    bot = refused(home, fleet(manifests, {"name": "scout", "renamed_from": "stranger"}))
    assert "not a bot of fleet 'acme'" in bot["reason"] and "--adopt" in bot["reason"]


def test_refused_when_the_old_profile_belongs_to_another_fleet(home: Path, manifests: Path) -> None:
    other = write_fleet(manifests / "other", [{"name": "alpha"}], fleet="zeta")
    assert apply(other, home).code == 0
    bot = refused(home, fleet(manifests, {"name": "scout", "renamed_from": "alpha"}))
    assert "owned by fleet 'zeta'" in bot["reason"]


def test_refused_while_a_gateway_runs_for_the_old_profile(home: Path, renamed) -> None:
    import os

    m, _, _ = renamed
    (profile(home, "alpha") / "gateway.pid").write_text(json.dumps({"pid": os.getpid()}))
    bot = refused(home, m)
    assert "gateway stop" in bot["reason"] and "hermes -p alpha" in bot["reason"]


def test_refused_while_the_roots_gateway_serves_the_old_profile(home: Path, renamed) -> None:
    import os

    m, _, _ = renamed
    state = {"pid": os.getpid(), "gateway_state": "running", "served_profiles": ["default", "alpha"]}
    (home / "gateway_state.json").write_text(json.dumps(state))
    bot = refused(home, m)
    assert "serves profile 'alpha'" in bot["reason"], bot["reason"]
    state["served_profiles"] = ["default", "beta"]  # serving other profiles only: no reason to refuse
    (home / "gateway_state.json").write_text(json.dumps(state))
    assert apply(m, home).code == 0


def test_validate_refuses_what_the_manifests_alone_tell(manifests: Path) -> None:
    m = write_fleet(manifests, [{"name": "alpha"}, {"name": "scout", "renamed_from": "alpha"}])
    run = hermes_fleet("validate", "-f", m, "-o", "json")
    assert run.code == 2, run.text
    (diag,) = [d for d in run.json()["diagnostics"] if d["severity"] == "error"]
    assert diag["path"] == "spec.bots[1].renamed_from" and diag["file"].endswith("fleet.yaml") and diag["line"] > 0
    assert "still declared" in diag["message"]


# --- rooms ----------------------------------------------------------------------------------------


@pytest.fixture
def gateway(home: Path):
    gw = FakeGateway(home).start()
    yield gw
    gw.stop()


def test_rooms_retire_the_old_member_and_seat_the_new_one_and_the_lead_moves(
    home: Path, manifests: Path, gateway: FakeGateway
) -> None:
    rooms = [{"name": "Ops", "members": ["alpha", "beta"], "who_answers": "lead:alpha"}]
    assert apply(fleet(manifests, alpha(), {"name": "beta"}, rooms=rooms), home).code == 0
    (room,) = gateway.live().values()
    old_id = next(m["member_id"] for m in room["members"] if m["profile"] == "alpha")
    renamed_rooms = [{"name": "Ops", "members": ["scout", "beta"], "who_answers": "lead:scout"}]
    m = fleet(manifests, alpha("scout", renamed_from="alpha"), {"name": "beta"}, rooms=renamed_rooms)
    run = apply(m, home)
    assert run.code == 0, run.text
    (room,) = gateway.live().values()
    assert sorted(x["profile"] for x in room["members"]) == ["beta", "scout"]
    new_id = next(x["member_id"] for x in room["members"] if x["profile"] == "scout")
    assert new_id != old_id
    assert old_id in {x["member_id"] for x in room.get("retired_members") or []}
    assert room["responder_policy"]["leader_member_id"] == new_id
    record = read_yaml(profile(home, "scout") / "profile.yaml")["ui_meta"]["hermes-bots"]
    assert record["groups"] == ["Ops"]
    assert_converged(m, home)


def test_a_root_honcho_file_linked_out_of_the_home_is_refused_not_written_through(home: Path, renamed, tmp_path: Path) -> None:
    m, _, _ = renamed
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"hosts": {"hermes_alpha": {}}}))
    (home / "honcho.json").symlink_to(outside)
    run = apply(m, home)
    assert run.code == 1 and "honcho.json" in run.text and "Traceback" not in run.text, run.text
    assert json.loads(outside.read_text()) == {"hosts": {"hermes_alpha": {}}}
    assert profile(home, "alpha").is_dir() and not profile(home, "scout").exists()  # refused before the move


def test_a_bot_and_its_routine_renamed_in_one_apply_keep_the_job(home: Path, renamed, manifests: Path) -> None:
    _, _, ids = renamed
    routines = [{**ROUTINES[0], "name": "Morning digest", "renamed_from": "Digest"}, ROUTINES[1]]
    m = fleet(manifests, {**alpha("scout", renamed_from="alpha"), "routines": routines}, {"name": "beta"})
    run = apply(m, home)
    assert run.code == 0, run.text
    names = {j["id"]: j["name"] for j in jobs(home, "scout")}
    assert names[ids["[bot:alpha] Digest"]] == "[bot:scout] Morning digest"
    assert {k for k in inventory(home) if k.startswith("routine/")} == {"routine/scout/Morning digest", "routine/scout/Sweep"}
    assert_converged(m, home)


def test_the_alias_note_appears_only_for_a_wrapper_hermes_would_remove(home: Path, renamed) -> None:
    """A wrapper as 0.19.0 `create_wrapper_script` writes it (`exec hermes -p alpha "$@"`): the note
    gives the command that still works after the rename (`--name alpha --remove` on the new profile:
    `hermes profile alias alpha --remove` fails with "Profile 'alpha' does not exist")."""
    m, _, _ = renamed
    wrappers = Path(os.environ["HOME"]) / ".local" / "bin"
    wrappers.mkdir(parents=True)
    (wrappers / "alpha").write_text('#!/bin/sh\nexec hermes -p alpha "$@"\n')
    notes = plan_json(m, home)["notes"]
    (note,) = [n for n in notes if "renamed from" in n]
    assert "`hermes profile alias scout --name alpha --remove` and `hermes profile alias scout`" in note
    (wrappers / "alpha").write_text("#!/bin/sh\nexec /usr/bin/something-else\n")  # not Hermes' wrapper
    assert not [n for n in plan_json(m, home)["notes"] if "renamed from" in n]
