"""state.db is opened through the folder that was checked (docs/reliability.md#state-db).

A bot (or the root profile's bot, which can write `profiles/`) swaps a folder on the path to
`state.db` for a link between hermes-fleet's check and SQLite's open. SQLite opens files by path and
follows links, so the folder chain is opened first, one name at a time without following a link
(`fsio.open_folder`), SQLite is handed `/proc/self/fd/<fd>/state.db`, and the file SQLite then holds
is compared with the one in the held folder (`sessions.HeldFolder.check_opened`). Each swap here is a
real rename and a real symlink on a real file system.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from controller.adapters import home, sessions
from controller.errors import ContainmentError


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A home with `alpha` (a Bot Chat) and `victim` (a state.db without one)."""
    root = tmp_path / "home"
    for name in ("alpha", "victim"):
        (root / "profiles" / name).mkdir(parents=True)
    assert sessions.ensure_bot_chat(root / "profiles" / "alpha", root=root)
    with sqlite3.connect(root / "profiles" / "victim" / "state.db") as conn:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT, archived INTEGER)")
    conn.close()
    return root


def swap_for_link(folder: Path, target: Path) -> Path:
    """Move `folder` aside and put a link to `target` at its name; returns where it went."""
    aside = folder.with_name(folder.name + ".aside")
    os.rename(folder, aside)
    os.symlink(target, folder)
    return aside


def test_a_profile_folder_swapped_after_its_check_is_refused_for_reads_and_writes(root: Path) -> None:
    path = home.check_profile(root, "alpha")  # the check passes: a real folder
    victim = root / "profiles" / "victim" / "state.db"
    before = digest(victim)
    swap_for_link(path, root / "profiles" / "victim")
    with pytest.raises(ContainmentError, match="changed while hermes-fleet was writing it"):
        sessions.find_bot_chat(path, root=root)
    with pytest.raises(ContainmentError):
        sessions.ensure_bot_chat(path, root=root)
    assert digest(victim) == before  # no Bot Chat row written into the other profile
    assert sorted(os.listdir(victim.parent)) == ["state.db"]  # and no journal opened there


def test_a_parent_folder_swapped_after_the_check_is_refused(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    (other / "profiles" / "alpha").mkdir(parents=True)
    with sqlite3.connect(other / "profiles" / "alpha" / "state.db") as conn:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT, archived INTEGER)")
    conn.close()
    before = digest(other / "profiles" / "alpha" / "state.db")
    path = home.check_profile(root, "alpha")
    swap_for_link(root / "profiles", other / "profiles")  # what the root profile's bot can do
    with pytest.raises(ContainmentError):
        sessions.find_bot_chat(path, root=root)
    with pytest.raises(ContainmentError):
        sessions.ensure_bot_chat(path, root=root)
    assert digest(other / "profiles" / "alpha" / "state.db") == before


def test_a_state_db_link_planted_out_of_the_profile_is_refused_after_sqlite_opened_it(root: Path) -> None:
    """The read has no check of its own at the file's name: SQLite follows the link, and the file
    it holds is found to be another profile's before any statement runs."""
    alpha = root / "profiles" / "alpha"
    os.rename(alpha / "state.db", alpha / "state.db.aside")
    os.symlink(root / "profiles" / "victim" / "state.db", alpha / "state.db")
    with pytest.raises(ContainmentError, match=r"state\.db"):
        sessions.find_bot_chat(alpha, root=root)


def test_a_state_db_link_inside_its_own_profile_is_still_followed(root: Path) -> None:
    alpha = root / "profiles" / "alpha"
    (alpha / "data").mkdir()
    os.rename(alpha / "state.db", alpha / "data" / "state.db")
    os.symlink("data/state.db", alpha / "state.db")
    assert sessions.find_bot_chat(alpha, root=root) is not None


def test_the_held_folder_is_the_checked_one_after_a_swap(root: Path) -> None:
    """A swap after the folder is open changes nothing: the descriptor path names the folder that
    was checked, wherever it was moved to, and never the link now at its name."""
    alpha = root / "profiles" / "alpha"
    with sessions.held_folder(alpha, root) as folder:
        aside = swap_for_link(alpha, root / "profiles" / "victim")
        conn = sqlite3.connect(f"file:{folder.db}?mode=ro", uri=True)
        try:
            folder.check_opened(conn)
            (opened,) = [row[2] for row in conn.execute("PRAGMA database_list")]
            titles = [row[0] for row in conn.execute("SELECT title FROM sessions")]
        finally:
            conn.close()
    assert opened == str(aside / "state.db") and titles == ["Bot Chat"]
