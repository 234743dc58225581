"""Attacks on the settled plan (adapters/inputtrace.py, adapters/settled.py, verbs/fastplan.py):
each test converges a home, changes one thing a full `plan` depends on, and checks that `plan`
still prints what `plan --no-cache` (a full plan, nothing kept) prints. An input the trace missed
shows as a replayed "No changes" (or a stale output) where the full plan sees the change."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from controller.adapters import settled
from tests.integration.helpers import Run, apply, plan, write_fleet

BOT = {"name": "alpha", "title": "One", "config": {"agent.max_turns": 12}, "env": {"OR_KEY": {"from_env": "OR_KEY"}}}
BETA = {"name": "beta", "title": "Two"}


def converge(manifest: Path, home: Path, *flags: str) -> None:
    """Apply twice (the second past the tick of the first's writes) and check the memo is kept."""
    first = apply(manifest, home, *flags)
    assert first.code == 0, first.text
    time.sleep(0.05)
    second = apply(manifest, home, *flags)
    assert second.code == 0, second.text
    assert settled.path_of(home).is_file(), "the converged apply keeps the settled plan"
    time.sleep(0.05)  # what the test changes next is past the memo's tick: only stat keys can catch it


def both(manifest: Path, home: Path, *flags: str) -> tuple[Run, Run]:
    """(plan, plan --no-cache), after checking they print the same."""
    fast = plan(manifest, home, *flags)
    full = plan(manifest, home, "--no-cache", *flags)
    assert (fast.code, fast.out, fast.err) == (full.code, full.out, full.err)
    return fast, full


def assert_change_seen(manifest: Path, home: Path, *flags: str, shows: str = "", change: bool = True) -> Run:
    """Both plans alike, and the full one shows the change (`change`: as a change, not only a note)."""
    _, full = both(manifest, home, *flags)
    if change:
        assert "No changes" not in full.out or full.code != 0, full.text
    if shows:
        assert shows in full.text, full.text
    return full


# --- manifests and the files they name ------------------------------------------------------------


def test_a_folder_given_to_f_gaining_a_manifest(home: Path, manifests: Path) -> None:
    write_fleet(manifests, [BOT, BETA])
    converge(manifests, home)
    doc = {"apiVersion": "hermes-fleet/v1", "kind": "Bot", "metadata": {"name": "gamma", "fleet": "acme"}, "spec": {}}
    (manifests / "gamma.yaml").write_text(json.dumps(doc))
    assert_change_seen(manifests, home, shows="gamma")


def test_a_soul_file_edited(home: Path, manifests: Path) -> None:
    (manifests / "soul.md").write_text("You are alpha.\n")
    manifest = write_fleet(manifests, [{**BOT, "soul_file": "soul.md"}, BETA])
    converge(manifest, home)
    (manifests / "soul.md").write_text("You are beta.\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_a_from_file_secret_edited(home: Path, manifests: Path) -> None:
    from tests.integration.conftest import SECRET_FILE

    (manifests / "token.txt").write_text(SECRET_FILE + "\n")
    manifest = write_fleet(manifests, [{**BOT, "env": {"TOKEN": {"from_file": "token.txt"}}}, BETA])
    converge(manifest, home)
    (manifests / "token.txt").write_text("file-rotated-value-000000\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_an_absolute_from_file_secret_edited(home: Path, manifests: Path, tmp_path: Path) -> None:
    secrets = tmp_path / "run-secrets"
    secrets.mkdir()
    (secrets / "token").write_text("first\n")
    manifest = write_fleet(manifests, [{**BOT, "env": {"TOKEN": {"from_file": str(secrets / "token")}}}, BETA])
    converge(manifest, home)
    (secrets / "token").write_text("other\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


@pytest.mark.parametrize("name", ["soul.py", "soul.pyc", "soul.so"])
def test_a_file_named_like_code_is_an_input_too(home: Path, manifests: Path, name: str) -> None:
    """The trace leaves out the interpreter's imports; a file a manifest names is no import,
    whatever it is called."""
    (manifests / name).write_text("You are alpha.\n")
    manifest = write_fleet(manifests, [{**BOT, "soul_file": name}, BETA])
    converge(manifest, home)
    (manifests / name).write_text("You are gamma.\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_a_manifest_file_named_like_code(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA], name="fleet.py")
    converge(manifest, home)
    manifest.write_text(manifest.read_text().replace('"Two"', '"Too"'))
    assert_change_seen(manifest, home, shows="bot/beta")


# --- the home: profiles, links, markers -----------------------------------------------------------


def test_a_managed_profile_folder_replaced_by_a_link_to_a_copy(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    beta = home / "profiles" / "beta"
    copy = tmp_path / "beta-copy"
    shutil.copytree(beta, copy, symlinks=True)
    shutil.rmtree(beta)
    beta.symlink_to(copy)
    full = assert_change_seen(manifest, home)
    assert full.code == 3, full.text


def test_an_unmanaged_profile_link_retargeted(home: Path, manifests: Path, tmp_path: Path) -> None:
    for name, title in (("one", "Gamma"), ("two", "One")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.yaml").write_text(f"bot:\n  title: {title}\n")
    manifest = write_fleet(manifests, [BOT, BETA])
    (home / "profiles").mkdir(parents=True)
    (home / "profiles" / "gamma").symlink_to(tmp_path / "one")
    converge(manifest, home)
    link = home / "profiles" / "gamma"
    link.unlink()
    link.symlink_to(tmp_path / "two")
    both(manifest, home)


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_a_env_link_retargeted(home: Path, manifests: Path, tmp_path: Path, where: str) -> None:
    """Inside the profile: the other file's values are drift. Outside: a link out of the profile
    is refused (exit 3)."""
    manifest = write_fleet(manifests, [BOT, BETA])
    assert apply(manifest, home).code == 0
    alpha = home / "profiles" / "alpha"
    (alpha / ".env").rename(alpha / "env.a")
    (alpha / ".env").symlink_to("env.a")
    converge(manifest, home)
    target = alpha / "env.b" if where == "inside" else tmp_path / "env.b"
    target.write_text("OR_KEY=another-value\n")
    (alpha / ".env").unlink()
    (alpha / ".env").symlink_to(target)
    full = assert_change_seen(manifest, home, shows="bot/alpha" if where == "inside" else "")
    assert full.code == (0 if where == "inside" else 3), full.text


def test_another_fleets_inventory_appearing(home: Path, manifests: Path, tmp_path: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    other_home = tmp_path / "other-home"
    other = write_fleet(tmp_path / "other", [BETA], fleet="other")
    assert apply(other, other_home).code == 0
    inventories = other_home / ".hermes-fleet" / "inventory"
    for path in inventories.glob("*.json"):
        shutil.copy(path, home / ".hermes-fleet" / "inventory" / path.name)
    both(manifest, home)


def test_an_owner_marker_planted_in_a_managed_profile(home: Path, manifests: Path) -> None:
    from controller.adapters.home import OWNER_MARKER
    from controller.adapters.inventory import marker_text

    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    marker = home / "profiles" / "beta" / OWNER_MARKER
    marker.write_text(marker_text("other", "beta"))
    both(manifest, home)
    marker.write_text(marker_text("acme", "someone"))
    both(manifest, home)


def test_an_owner_marker_planted_in_an_unmanaged_profile(home: Path, manifests: Path) -> None:
    from controller.adapters.home import OWNER_MARKER
    from controller.adapters.inventory import marker_text

    manifest = write_fleet(manifests, [BOT, BETA])
    (home / "profiles" / "gamma").mkdir(parents=True)
    converge(manifest, home)
    (home / "profiles" / "gamma" / OWNER_MARKER).write_text(marker_text("acme", "gamma"))
    both(manifest, home)


@pytest.mark.parametrize("how", ["renamed", "removed"])
def test_a_profile_folder_renamed_or_removed(home: Path, manifests: Path, how: str) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    beta = home / "profiles" / "beta"
    if how == "renamed":
        beta.rename(home / "profiles" / "beta2")
    else:
        shutil.rmtree(beta)
    assert_change_seen(manifest, home, shows="bot/beta")


def test_a_new_unmanaged_profile_with_a_profile_yaml(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    gamma = home / "profiles" / "gamma"
    gamma.mkdir()
    (gamma / "profile.yaml").write_text("bot:\n  title: One\n")  # alpha's @-tag: the Desktop's roster has both
    both(manifest, home)


def test_an_unmanaged_profiles_profile_yaml_edited(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    gamma = home / "profiles" / "gamma"
    gamma.mkdir(parents=True)
    (gamma / "profile.yaml").write_text("bot:\n  title: Gee\n")
    converge(manifest, home)
    (gamma / "profile.yaml").write_text("bot:\n  title: One\n")
    both(manifest, home)


@pytest.mark.parametrize("entry", ["state.db-shm", "state.db-journal", "cron/.jobs.lock"])
def test_a_link_out_of_the_profile_planted_where_hermes_fleet_writes(
    home: Path, manifests: Path, tmp_path: Path, entry: str
) -> None:
    """home.check_profile refuses a link among the entries hermes-fleet writes that leads out of
    the profile (exit 3). The observation cache skips that check while the profile's folders keep
    their stat keys (their listings unchanged); the settled plan must see the listing change too."""
    manifest = write_fleet(manifests, [{**BOT, "routines": [{"name": "digest", "schedule": "0 8 * * *", "prompt": "Hi"}]}])
    converge(manifest, home)
    outside = tmp_path / "outside"
    outside.write_text("")
    link = home / "profiles" / "alpha" / entry
    assert link.parent.is_dir()
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    full = assert_change_seen(manifest, home)
    assert full.code == 3, full.text


def test_a_cron_store_edited_keeping_its_size_and_mtime(home: Path, manifests: Path) -> None:
    routine = {"name": "digest", "schedule": "0 8 * * *", "prompt": "Summarize the news."}
    manifest = write_fleet(manifests, [{**BOT, "routines": [routine]}, BETA])
    converge(manifest, home)
    jobs = home / "profiles" / "alpha" / "cron" / "jobs.json"
    before = jobs.stat()
    jobs.write_text(jobs.read_text().replace("Summarize the news.", "Summarize the NEWS."))
    os.utime(jobs, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert jobs.stat().st_size == before.st_size
    assert_change_seen(manifest, home, shows="routine/")


def test_the_root_config_edited(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA], config={"timezone": "Europe/Berlin"})
    converge(manifest, home)
    config = home / "config.yaml"
    config.write_text(config.read_text().replace("Europe/Berlin", "Europe/Zurich"))
    assert_change_seen(manifest, home, shows="Europe/Berlin")


def test_the_managed_scope_config_edited(home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    managed = tmp_path / "etc-hermes"
    managed.mkdir()
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    (managed / "config.yaml").write_text("agent:\n  max_turns: 3\n")
    first = assert_change_seen(manifest, home, shows="max_turns", change=False)
    converge(manifest, home)
    (managed / "config.yaml").write_text("display:\n  compact: true\n")
    assert both(manifest, home)[1].out != first.out


def test_the_managed_scope_folder_appearing(home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    managed = tmp_path / "etc-hermes"
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(managed))
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    managed.mkdir()
    (managed / "config.yaml").write_text("agent:\n  max_turns: 3\n")
    assert_change_seen(manifest, home, shows="max_turns", change=False)


def _delete_bot_chat(db: Path, keep_open: bool = False) -> sqlite3.Connection | None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DELETE FROM sessions WHERE title = 'Bot Chat'")
    if keep_open:
        return conn
    conn.close()
    return None


def test_the_bot_chat_row_removed(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    _delete_bot_chat(home / "profiles" / "alpha" / "state.db")
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_the_bot_chat_row_removed_in_a_wal_a_writer_holds_open(home: Path, manifests: Path) -> None:
    """Hermes keeps state.db in WAL mode with a connection open while it runs: a delete then lands
    in state.db-wal, state.db itself keeps its bytes."""
    manifest = write_fleet(manifests, [BOT, BETA])
    db = home / "profiles" / "alpha" / "state.db"
    assert apply(manifest, home).code == 0
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE IF NOT EXISTS scratch (x)")
    try:
        converge(manifest, home)
        before = db.stat()
        conn.execute("DELETE FROM sessions WHERE title = 'Bot Chat'")
        assert db.stat().st_mtime_ns == before.st_mtime_ns, "the delete is in the WAL only"
        assert_change_seen(manifest, home, shows="bot/alpha")
    finally:
        conn.close()


# --- secrets in the memo ---------------------------------------------------------------------------


def test_the_memo_keeps_no_secret_nor_a_plain_digest_of_one(home: Path, manifests: Path) -> None:
    """A file recorded within the tick of its write is kept with a digest of its bytes: a .env, a
    `from_file` secret can be such files (made racy here by dating them ahead). A plain sha256 of
    a secret is a check for a guess: the memo keeps only digests keyed with its salt."""
    import hashlib

    from tests.integration.conftest import SECRET_FILE, SECRET_OR, SECRET_PEER

    (manifests / "token.txt").write_text(SECRET_FILE + "\n")
    env = {"OR_KEY": {"from_env": "OR_KEY"}, "PEER": {"from_env": "SPARK_KEY"}, "TOKEN": {"from_file": "token.txt"}}
    manifest = write_fleet(manifests, [{**BOT, "env": env}, BETA])
    converge(manifest, home)
    ahead = time.time_ns() + 5_000_000_000
    for path in (manifests / "token.txt", home / "profiles" / "alpha" / ".env"):
        os.utime(path, ns=(ahead, ahead))
    assert apply(manifest, home).code == 0
    text = settled.path_of(home).read_text()
    memo = settled.load(home)
    assert memo is not None
    racy = {Path(p).name for _, p, _, d in memo.records if d}
    assert {".env", "token.txt"} <= racy, "the test makes them racy: the apply wrote them in the memo's tick"
    for secret in (SECRET_OR, SECRET_PEER, SECRET_FILE):
        assert secret not in text
    for path in (manifests / "token.txt", home / "profiles" / "alpha" / ".env"):
        assert hashlib.sha256(path.read_bytes()).hexdigest() not in text, path
    assert replayed_same(manifest, home)
    (manifests / "token.txt").write_text("file-rotated-value-000000\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


def replayed_same(manifest: Path, home: Path) -> bool:
    """The plan is answered from the memo (it holds) and prints what the full plan prints."""
    memo = settled.load(home)
    from controller import cli
    from controller.verbs import fastplan

    args = cli.build_parser().parse_args(["plan", "-f", str(manifest), "--home", str(home)])
    holds = memo is not None and memo.holds(fastplan.params(args, home))
    both(manifest, home)
    return holds


# --- renames, routines and time -------------------------------------------------------------------


def _renamed(home: Path, manifests: Path) -> Path:
    """alpha renamed to omega (done: the memo is kept with renamed_from still in the manifest)."""
    manifest = write_fleet(manifests, [BOT, BETA])
    assert apply(manifest, home).code == 0
    manifest = write_fleet(manifests, [{**BOT, "name": "omega", "renamed_from": "alpha"}, BETA])
    converge(manifest, home)
    return manifest


def test_a_finished_rename_then_a_wrapper_alias_for_the_old_name(home: Path, manifests: Path) -> None:
    manifest = _renamed(home, manifests)
    wrapper = Path(os.environ["HOME"]) / ".local" / "bin" / "alpha"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text('#!/bin/sh\nexec hermes -p alpha "$@"\n')
    both(manifest, home)


def test_a_finished_rename_then_the_old_profile_back(home: Path, manifests: Path) -> None:
    from controller.adapters.home import OWNER_MARKER
    from controller.adapters.inventory import marker_text

    manifest = _renamed(home, manifests)
    old = home / "profiles" / "alpha"
    old.mkdir()
    (old / OWNER_MARKER).write_text(marker_text("acme", "alpha"))
    both(manifest, home)


def test_a_rename_cut_short_after_the_move(home: Path, manifests: Path) -> None:
    """The folder moved by hand (as an interrupted apply leaves it) under a settled plan that still
    has alpha: the full plan sees alpha gone and omega unknown."""
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    (home / "profiles" / "alpha").rename(home / "profiles" / "omega")
    assert_change_seen(manifest, home, shows="bot/alpha")
    renamed = write_fleet(manifests, [{**BOT, "name": "omega", "renamed_from": "alpha"}, BETA])
    both(renamed, home)


def test_a_gateway_starting_for_the_root_during_a_settled_rename(home: Path, manifests: Path) -> None:
    manifest = _renamed(home, manifests)
    pid = {"pid": os.getpid(), "kind": "hermes-gateway", "argv": ["hermes", "gateway", "run"]}
    (home / "gateway.pid").write_text(json.dumps(pid))
    both(manifest, home)


ROUTINE = {"name": "digest", "schedule": "0 8 * * *", "prompt": "Summarize the news."}


def test_tz_of_the_environment_changed(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    manifest = write_fleet(manifests, [{**BOT, "routines": [ROUTINE]}, BETA])
    try:
        converge(manifest, home)
        monkeypatch.setenv("TZ", "Asia/Tokyo")
        time.tzset()
        both(manifest, home)
        manifest.write_text(manifest.read_text().replace("0 8 * * *", "0 9 * * *"))
        full = assert_change_seen(manifest, home, shows="routine/")
        assert "Asia/Tokyo" in full.out or "JST" in full.out, full.out
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_bots_timezone_edited_in_its_config(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [{**BOT, "config": {"timezone": "Europe/Berlin"}, "routines": [ROUTINE]}, BETA])
    converge(manifest, home)
    config = home / "profiles" / "alpha" / "config.yaml"
    config.write_text(config.read_text().replace("Europe/Berlin", "Europe/Zurich"))
    assert_change_seen(manifest, home, shows="Europe/Berlin")


def test_a_one_shot_routine_ran_and_was_removed_by_hermes(home: Path, manifests: Path) -> None:
    soon = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() + 3600))
    manifest = write_fleet(manifests, [{**BOT, "routines": [{**ROUTINE, "schedule": soon}]}, BETA])
    converge(manifest, home)
    jobs = home / "profiles" / "alpha" / "cron" / "jobs.json"
    data = json.loads(jobs.read_text())
    data["jobs"] = []
    jobs.write_text(json.dumps(data))
    both(manifest, home)


# --- how the manifests are given ------------------------------------------------------------------


GAMMA = {"apiVersion": "hermes-fleet/v1", "kind": "Bot", "metadata": {"name": "gamma", "fleet": "acme"}, "spec": {"title": "G"}}


def test_a_fleet_in_several_files_is_kept_and_an_edit_of_any_is_seen(home: Path, manifests: Path) -> None:
    """Two files or more are parsed with manifests/parallel.py, which looks at /proc before it
    forks: a fleet in several files is kept (it was never kept before), and each file is an input."""
    write_fleet(manifests, [BOT, BETA])
    (manifests / "gamma.yaml").write_text(json.dumps(GAMMA))
    converge(manifests, home)
    (manifests / "gamma.yaml").write_text(json.dumps(GAMMA).replace('"G"', '"H"'))
    assert_change_seen(manifests, home, shows="bot/gamma")


def test_a_fleet_parsed_partly_in_a_forked_child(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A large fleet in several files has its last files parsed by a forked child: the child's
    files are stat'ed by this process first, so an edit of one is seen."""
    from controller.manifests import parallel

    children = []
    real_start = parallel.start

    def start(*args: object, **kwargs: object) -> parallel.Child | None:
        child = real_start(*args, **kwargs)  # type: ignore[arg-type]
        children.append(child)
        return child

    monkeypatch.setattr(parallel, "start", start)
    padding = "# padding\n" * 20_000  # 200 KB: the child's share is worth a fork (MIN_SHARE_BYTES)
    write_fleet(manifests, [BOT, BETA], name="a-fleet.yaml")
    fleet = manifests / "a-fleet.yaml"
    fleet.write_text(fleet.read_text() + padding * 2)
    gamma = manifests / "z-gamma.yaml"
    gamma.write_text(json.dumps(GAMMA) + "\n" + padding)
    converge(manifests, home)
    if not any(children):
        pytest.skip("this machine does not fork for a parse (one CPU, or threads)")
    gamma.write_text(json.dumps(GAMMA).replace('"G"', '"H"') + "\n" + padding)
    assert_change_seen(manifests, home, shows="bot/gamma")


def test_manifests_from_stdin_are_never_replayed(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    manifest = write_fleet(manifests, [BOT, BETA])
    text = manifest.read_bytes()

    def stdin(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    stdin(text)
    assert apply(Path("-"), home).code == 0
    stdin(text)
    assert apply(Path("-"), home).code == 0
    assert not settled.path_of(home).exists(), "stdin has no stat key: a plan of it is never kept"
    other = text.replace(b'"Two"', b'"Too"')
    stdin(other)
    fast = plan(Path("-"), home)
    stdin(other)
    full = plan(Path("-"), home, "--no-cache")
    assert (fast.code, fast.out) == (full.code, full.out)
    assert "bot/beta" in full.out


def test_a_file_of_a_whole_second_filesystem_is_racy_for_its_second() -> None:
    """On a filesystem that keeps whole seconds (ext3, FAT, HFS+), a file recorded half a second
    after its write can be written again in that second without changing its key: it must carry
    a digest. Its tick is told by its own timestamps, not by the clock's reading."""
    from controller.adapters import inputtrace

    second = 1_700_000_000 * 1_000_000_000
    coarse = (1, 2, 10, second, second, 0o100644, 0, 0)
    fine = (1, 2, 10, second + 123_456_789, second + 123_456_789, 0o100644, 0, 0)
    assert inputtrace.is_racy(coarse, second + 500_000_000)
    assert inputtrace.is_racy(coarse, second + 1_900_000_000)
    assert not inputtrace.is_racy(coarse, second + 2_100_000_000)
    assert inputtrace.is_racy(fine, second + 130_000_000)
    assert not inputtrace.is_racy(fine, second + 500_000_000)


def test_an_avatar_image_edited(home: Path, manifests: Path) -> None:
    from tests.integration.helpers import tiny_png

    (manifests / "alpha.png").write_bytes(tiny_png((200, 30, 60)))
    manifest = write_fleet(manifests, [{**BOT, "avatar": {"image": "alpha.png"}}, BETA])
    converge(manifest, home)
    (manifests / "alpha.png").write_bytes(tiny_png((10, 200, 60)))
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_a_manifest_folder_link_retargeted_to_a_copy(home: Path, manifests: Path, tmp_path: Path) -> None:
    """A copy keeps every file's size and mtime; the link's target is another folder all the same."""
    write_fleet(manifests, [BOT, BETA])
    link = tmp_path / "current"
    link.symlink_to(manifests)
    converge(link, home)
    copy = tmp_path / "release-2"
    shutil.copytree(manifests, copy)
    shutil.copystat(manifests, copy)
    fleet = copy / "fleet.yaml"
    before = fleet.stat()
    fleet.write_text(fleet.read_text().replace('"Two"', '"Too"'))
    os.utime(fleet, ns=(before.st_atime_ns, before.st_mtime_ns))
    link.unlink()
    link.symlink_to(copy)
    assert_change_seen(link, home, shows="bot/beta")


def test_a_soul_file_named_through_a_link_and_dot_dot(home: Path, manifests: Path) -> None:
    """`link/../soul.md` is where the kernel says, after the link: not `soul.md` beside the
    manifest, as a lexical normalization of the path would have it."""
    (manifests / "real" / "sub").mkdir(parents=True)
    (manifests / "link").symlink_to("real/sub")
    (manifests / "real" / "soul.md").write_text("You are alpha.\n")
    (manifests / "soul.md").write_text("A decoy beside the manifest.\n")
    manifest = write_fleet(manifests, [{**BOT, "soul_file": "link/../soul.md"}, BETA])
    converge(manifest, home)
    (manifests / "real" / "soul.md").write_text("You are omega.\n")
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_the_trace_resolves_dot_dot_after_a_link_as_the_kernel_does(tmp_path: Path) -> None:
    from controller.adapters import inputtrace

    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to("real/sub")
    (tmp_path / "real" / "soul.md").write_text("read\n")
    (tmp_path / "soul.md").write_text("decoy\n")
    time.sleep(0.05)
    with inputtrace.tracing() as trace:
        with open(f"{tmp_path}/link/../soul.md") as handle:
            assert handle.read() == "read\n"
        os.stat(f"{tmp_path}/link/../soul.md")
    records = [(k, p, r.key, r.digest) for (k, p), r in trace.records.items()]
    assert inputtrace.unchanged(records)
    (tmp_path / "real" / "soul.md").write_text("changed\n")
    assert not inputtrace.unchanged(records)


def test_hermes_installed_on_path_after_the_memo(
    home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No hermes on PATH when the memo was made ("Hermes version unknown"); then one is put in a
    folder on PATH: its version is read by the full plan."""
    from tests.hermes_support import require_hermes

    real = require_hermes()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    assert "Hermes version unknown" in plan(manifest, home).out
    (bin_dir / "hermes").symlink_to(real)
    fast, _ = both(manifest, home)
    assert "Hermes version unknown" not in fast.out


def _hermes_venv(folder: Path) -> Path:
    """A Python environment that reads as a Hermes install to hermes-fleet's probes: a `hermes`
    console script whose `#!` names its Python, and hermes-agent's package metadata (what
    importlib.metadata reads: METADATA's Name and Version). Returns its site-packages."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    meta = site / "hermes_agent-0.19.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: hermes-agent\nVersion: 0.19.0\n")
    (folder / "bin" / "hermes").write_text(f"#!{python}\nimport sys\nsys.exit(0)\n")
    (folder / "bin" / "hermes").chmod(0o755)
    return site


def test_the_mcp_library_installed_after_the_memo(
    home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet with MCP servers asks the Hermes environment whether it has the mcp library (a
    child process): the answer is kept with the folders it was looked for in, so such a fleet
    gets a settled plan, and the library appearing there is seen."""
    site = _hermes_venv(tmp_path / "hermes-venv")
    monkeypatch.setenv("PATH", f"{tmp_path / 'hermes-venv' / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    manifest = write_fleet(manifests, [{**BOT, "mcp_servers": {"docs": {"url": "https://mcp.example.com/mcp"}}}, BETA])
    converge(manifest, home)
    assert "no mcp library" in plan(manifest, home).out
    (site / "mcp").mkdir()
    (site / "mcp" / "__init__.py").write_text("")
    fast, _ = both(manifest, home)
    assert "no mcp library" not in fast.out


def test_a_settled_plan_does_not_depend_on_the_clock(home: Path, manifests: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo has no expiry: a plan of no-ops must print the same whenever it runs. Routines
    (a frequent one, a one-shot an hour ahead) planned with the clock two days on."""
    from datetime import UTC, datetime, timedelta

    from controller.engine import reconciling
    from controller.manifests import validating

    soon = time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() + 3600))
    routines = [{**ROUTINE, "schedule": "*/5 * * * *"}, {**ROUTINE, "name": "once", "schedule": soon}]
    manifest = write_fleet(manifests, [{**BOT, "routines": routines}, BETA])
    converge(manifest, home)

    class Later(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return datetime.now(tz or UTC) + timedelta(days=2)

    monkeypatch.setattr(reconciling, "datetime", Later)
    monkeypatch.setattr(validating, "datetime", Later)
    for flags in [(), ("-o", "json"), ("--detail",)]:
        both(manifest, home, *flags)


@pytest.mark.xfail(
    strict=True,
    reason="the memo is not bound to anything a bot cannot write: a bot (the same user, writing its "
    "home) can drop its own files' records from a well-formed memo and then drift unseen by `plan`; "
    "needs a MAC keyed outside the bots' reach (a design decision; the observation cache shares it)",
)
def test_a_memo_forged_by_a_bot_that_writes_the_home(home: Path, manifests: Path) -> None:
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    memo = settled.load(home)
    assert memo is not None
    config = str(home / "profiles" / "alpha" / "config.yaml")
    kept = [r for r in memo.records if r[1] != config]
    settled.save(home, settled.Settled(memo.params, memo.process, memo.code, memo.salt, kept, memo.outputs))
    path = home / "profiles" / "alpha" / "config.yaml"
    path.write_text(path.read_text().replace("max_turns: 12", "max_turns: 99"))
    assert_change_seen(manifest, home, shows="bot/alpha")


def test_a_racy_folder_whose_file_became_a_link_of_the_same_name(tmp_path: Path) -> None:
    """A folder listed within its tick is kept with a digest of its listing; a file replaced by a
    link of the same name in that tick keeps every name (and the folder's key, within the tick:
    given here by taking the folder's new key into the record)."""
    from controller.adapters import inputtrace

    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / "state.db-shm").write_text("")
    ahead = time.time_ns() + 5_000_000_000
    os.utime(folder, ns=(ahead, ahead))
    with inputtrace.tracing() as trace:
        os.listdir(folder)
    records = [(k, p, r.key, r.digest) for (k, p), r in trace.records.items()]
    assert records and all(d for _, _, _, d in records), "a racy folder carries a digest"
    (folder / "state.db-shm").unlink()
    (folder / "state.db-shm").symlink_to(tmp_path / "outside")
    key = inputtrace.key_of(folder.stat(), inputtrace.FOLDER)
    assert not inputtrace.unchanged([(k, p, key, d) for k, p, _, d in records])


def test_the_managed_scope_folder_a_link_retargeted(
    home: Path, manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, text in (("a", "agent:\n  max_turns: 3\n"), ("b", "display:\n  compact: true\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(text)
    link = tmp_path / "etc-hermes"
    link.symlink_to(tmp_path / "a")
    monkeypatch.setenv("HERMES_MANAGED_DIR", str(link))
    manifest = write_fleet(manifests, [BOT, BETA])
    converge(manifest, home)
    assert "max_turns" in plan(manifest, home).out
    link.unlink()
    link.symlink_to(tmp_path / "b")
    fast, _ = both(manifest, home)
    assert "max_turns" not in fast.out


def test_the_cron_tickers_heartbeat_keeps_the_settled_plan(home: Path, manifests: Path) -> None:
    """A running gateway's cron ticker writes cron/ticker_heartbeat every minute, atomically (a
    temp file renamed: 0.19.0 cron/jobs.py:_atomic_write_epoch), so the cron folder's listing key
    moves each time: what no plan reads must not make every plan a full one."""
    manifest = write_fleet(manifests, [{**BOT, "routines": [ROUTINE]}, BETA])
    converge(manifest, home)
    cron = home / "profiles" / "alpha" / "cron"
    temp = cron / ".hb_x.tmp"
    temp.write_text(f"{time.time()}\n")
    temp.rename(cron / "ticker_heartbeat")
    memo = settled.load(home)
    from controller import cli
    from controller.verbs import fastplan

    args = cli.build_parser().parse_args(["plan", "-f", str(manifest), "--home", str(home)])
    assert memo is not None and memo.holds(fastplan.params(args, home))


def test_a_folder_opened_is_looked_at_and_a_listing_by_its_descriptor_is_a_listing(tmp_path: Path) -> None:
    """Opening a folder (to open files beneath it, as the Bot Chat lookup does) reads nothing of
    its listing: a file renamed into it keeps the record. Listing it through its descriptor does."""
    from controller.adapters import inputtrace

    folder = tmp_path / "profile"
    folder.mkdir()
    time.sleep(0.05)
    with inputtrace.tracing() as trace:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        os.close(fd)
    opened = [(k, p, r.key, r.digest) for (k, p), r in trace.records.items()]
    assert [k for k, *_ in opened] == [inputtrace.LSTAT]
    with inputtrace.tracing() as trace:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.listdir(fd)
        finally:
            os.close(fd)
    listed = [(k, p, r.key, r.digest) for (k, p), r in trace.records.items() if k == inputtrace.FOLDER]
    assert [p for _, p, _, _ in listed] == [str(folder)]
    (folder / "ticker_heartbeat").write_text("1\n")
    assert inputtrace.unchanged(opened)
    assert not inputtrace.unchanged(listed)
