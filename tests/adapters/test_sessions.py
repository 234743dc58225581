"""Tests for controller.adapters.sessions: unit tests, then checks against the real Hermes 0.19."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from controller.adapters import profiles, sessions
from controller.errors import ConflictError, HermesStateError
from tests.hermes_support import HermesCLI

SESSION_ID_RE = re.compile(r"^\d{8}_\d{6}_[0-9a-f]{6}$")


def rows(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM sessions ORDER BY started_at")]
    finally:
        conn.close()


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "hermes" / "profiles" / "bot1"
    path.mkdir(parents=True)
    return path


# --- unit ------------------------------------------------------------------------------------


def test_find_on_missing_db_creates_nothing(profile: Path) -> None:
    assert sessions.find_bot_chat(profile) is None
    assert os.listdir(profile) == []


def make_db(profile: Path, schema: str) -> None:
    conn = sqlite3.connect(profile / "state.db")
    conn.execute(schema)
    conn.commit()
    conn.close()


def test_find_on_db_without_sessions_table_is_none_and_creates_nothing(profile: Path) -> None:
    make_db(profile, "CREATE TABLE other (x)")
    assert sessions.find_bot_chat(profile) is None
    assert os.listdir(profile) == ["state.db"]  # the read opened it immutable: no -wal, no -shm


def test_find_reports_other_sqlite_errors(profile: Path) -> None:
    make_db(profile, "CREATE TABLE sessions (id TEXT)")  # no `title` column: not "no such table"
    with pytest.raises(HermesStateError, match="no such column"):
        sessions.find_bot_chat(profile)


def test_ensure_creates_one_row_and_is_idempotent(profile: Path) -> None:
    before = time.time()
    assert sessions.ensure_bot_chat(profile) is True
    assert sessions.ensure_bot_chat(profile) is False
    [row] = rows(profile / "state.db")
    assert row["title"] == "Bot Chat"
    assert row["source"] == "cli"
    assert SESSION_ID_RE.match(row["id"])
    assert before - 1 <= row["started_at"] <= time.time() + 1
    assert row["profile_name"] == "bot1"
    assert row["archived"] == 0
    assert row["message_count"] == 0
    assert sessions.find_bot_chat(profile)["id"] == row["id"]


def test_new_db_is_wal_and_carries_the_hermes_schema_marker(profile: Path) -> None:
    sessions.ensure_bot_chat(profile)
    conn = sqlite3.connect(profile / "state.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(22,)]
        index = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'idx_sessions_title_unique'").fetchone()[0]
        assert "UNIQUE" in index
    finally:
        conn.close()


def test_existing_db_keeps_its_journal_mode(profile: Path) -> None:
    """Hermes falls back to rollback mode where WAL is unsupported; we must not switch it back."""
    make_db(profile, "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT, started_at REAL NOT NULL)")
    assert sessions.ensure_bot_chat(profile) is True
    conn = sqlite3.connect(profile / "state.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_find_is_read_only(profile: Path) -> None:
    sessions.ensure_bot_chat(profile)
    db = profile / "state.db"
    files = sorted(os.listdir(profile))
    stamp = db.stat().st_mtime_ns
    assert sessions.find_bot_chat(profile) is not None
    assert sorted(os.listdir(profile)) == files  # no -wal / -shm created
    assert db.stat().st_mtime_ns == stamp


def test_find_reads_through_an_open_wal(profile: Path) -> None:
    sessions.ensure_bot_chat(profile)
    holder = sqlite3.connect(profile / "state.db")  # keeps -wal/-shm alive, as a running Hermes does
    try:
        holder.execute("UPDATE sessions SET id = 'through-the-wal'")
        holder.commit()
        assert sessions.find_bot_chat(profile)["id"] == "through-the-wal"
    finally:
        holder.close()


@pytest.mark.parametrize(("source", "archived"), [("kanban", 0), ("tool", 0), ("cli", 1)], ids=["kanban", "tool", "archived"])
def test_unusable_title_holder_is_absent_and_never_duplicated(profile: Path, source: str, archived: int) -> None:
    sessions.ensure_bot_chat(profile)
    db = profile / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET source = ?, archived = ?", (source, archived))
    conn.commit()
    conn.close()

    assert sessions.find_bot_chat(profile) is None
    with pytest.raises(ConflictError):
        sessions.ensure_bot_chat(profile)
    assert len(rows(db)) == 1  # no orphan, no second row


def test_hidden_column_is_set_when_present(profile: Path) -> None:
    conn = sqlite3.connect(profile / "state.db")
    conn.execute(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, title TEXT, "
        "started_at REAL NOT NULL, archived INTEGER NOT NULL DEFAULT 0, hidden INTEGER DEFAULT 0)"
    )
    conn.commit()
    conn.close()
    assert sessions.ensure_bot_chat(profile) is True
    [row] = rows(profile / "state.db")
    assert row["hidden"] == 1


def test_existing_other_sessions_are_kept(profile: Path) -> None:
    sessions.ensure_bot_chat(profile)
    db = profile / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET title = 'Old chat'")
    conn.commit()
    conn.close()
    assert sessions.ensure_bot_chat(profile) is True
    assert sorted(r["title"] for r in rows(db)) == ["Bot Chat", "Old chat"]


def test_concurrent_ensures_create_exactly_one(profile: Path) -> None:
    results: list[bool] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        try:
            results.append(sessions.ensure_bot_chat(profile))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == [False] * 7 + [True]
    assert len(rows(profile / "state.db")) == 1


def test_ensure_refuses_missing_profile(tmp_path: Path) -> None:
    with pytest.raises(HermesStateError):
        sessions.ensure_bot_chat(tmp_path / "nope")
    assert not (tmp_path / "nope").exists()


def test_ensure_refuses_a_foreign_sessions_table(profile: Path) -> None:
    conn = sqlite3.connect(profile / "state.db")
    conn.execute("CREATE TABLE sessions (x TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(HermesStateError):
        sessions.ensure_bot_chat(profile)


def test_default_profile_has_no_profile_name(hermes_root: Path) -> None:
    sessions.ensure_bot_chat(hermes_root)
    [row] = rows(hermes_root / "state.db")
    assert row["profile_name"] is None


# --- real Hermes 0.19 ------------------------------------------------------------------------


def assert_lists_bot_chat(hermes: HermesCLI, name: str, session_id: str) -> None:
    out = hermes.run("sessions", "list", profile=name)
    assert "Error" not in out.stdout + out.stderr, out.stdout + out.stderr
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("Bot Chat")), None)
    assert line is not None, out.stdout
    assert session_id in line


def new_bot_chat(root: Path, how: str) -> Path:
    """A new profile `bot` with its Bot Chat: written by SQLite in the published profile, or as
    the in-memory image a new profile's staging folder gets (sessions.new_db_image)."""
    if how == "sqlite":
        path = profiles.create_profile(root, "bot")
        assert sessions.ensure_bot_chat(path) is True
        return path
    made: list[bool] = []
    path = profiles.create_profile(
        root, "bot", fill=lambda staging: made.append(sessions.ensure_bot_chat(staging, profile="bot"))
    )
    assert made == [True]
    return path


def test_a_staged_profile_gets_the_same_database_sqlite_would_write(tmp_path: Path) -> None:
    def dump(db: Path) -> dict:
        conn = sqlite3.connect(db)
        try:
            return {
                "mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
                "ok": conn.execute("PRAGMA integrity_check").fetchone()[0],
                "schema": sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")),
                "version": conn.execute("SELECT version FROM schema_version").fetchall(),
                "rows": [{k: v for k, v in r.items() if k not in ("id", "started_at")} for r in rows(db)],
            }
        finally:
            conn.close()

    image = new_bot_chat(tmp_path / "a", "image")
    written = new_bot_chat(tmp_path / "b", "sqlite")
    assert dump(image / "state.db") == dump(written / "state.db")
    assert dump(image / "state.db")["mode"] == "wal" and dump(image / "state.db")["rows"][0]["profile_name"] == "bot"
    assert SESSION_ID_RE.match(rows(image / "state.db")[0]["id"])
    assert sorted(p.name for p in image.iterdir() if p.name.startswith("state.db")) == ["state.db"]
    assert sessions.ensure_bot_chat(image) is False  # found, as any Bot Chat


@pytest.mark.hermes
@pytest.mark.parametrize("how", ["sqlite", "image"])
def test_hermes_lists_our_bot_chat(hermes: HermesCLI, hermes_root: Path, how: str) -> None:
    path = new_bot_chat(hermes_root, how)
    session_id = sessions.find_bot_chat(path)["id"]

    assert_lists_bot_chat(hermes, "bot", session_id)
    # Hermes' own view: the row by title, and a healthy store after its migrations ran.
    out = hermes.python(
        "from hermes_state import SessionDB\n"
        "db = SessionDB()\n"
        "row = db.get_session_by_title('Bot Chat')\n"
        "print(row['id'], row['source'], row['message_count'])\n"
        "print(db.resolve_session_by_title('Bot Chat'))\n",
        profile="bot",
    )
    assert out.stdout.split() == [session_id, "cli", "0", session_id]
    stats = hermes.run("sessions", "stats", profile="bot")
    assert "Total sessions: 1" in stats.stdout
    assert "cli: 1" in stats.stdout
    # Our row survived Hermes opening, migrating and re-opening the DB; still exactly one.
    assert sessions.ensure_bot_chat(path) is False
    assert len(rows(path / "state.db")) == 1


@pytest.mark.hermes
@pytest.mark.parametrize("how", ["sqlite", "image"])
def test_hermes_reads_our_fresh_db_read_only(hermes: HermesCLI, hermes_root: Path, how: str) -> None:
    """Cross-profile readers open state.db read-only, with no schema init: our DB must serve them."""
    path = new_bot_chat(hermes_root, how)
    out = hermes.python(
        "from pathlib import Path\n"
        "from hermes_state import SessionDB\n"
        f"db = SessionDB(db_path=Path({str(path / 'state.db')!r}), read_only=True)\n"
        "print([s['title'] for s in db.list_sessions_rich()])\n"
        "print(db.get_session_by_title('Bot Chat')['source'])\n"
    )
    assert out.stdout.splitlines() == ["['Bot Chat']", "cli"]


@pytest.mark.hermes
def test_bot_chat_in_a_db_hermes_created_first(hermes: HermesCLI, hermes_root: Path) -> None:
    path = profiles.create_profile(hermes_root, "bot")
    # `sessions list` is offline and creates state.db through SessionDB().
    first = hermes.run("sessions", "list", profile="bot")
    assert "No sessions found" in first.stdout
    assert (path / "state.db").is_file()

    assert sessions.ensure_bot_chat(path) is True
    assert sessions.ensure_bot_chat(path) is False
    assert_lists_bot_chat(hermes, "bot", sessions.find_bot_chat(path)["id"])


@pytest.mark.hermes
def test_hermes_refuses_a_second_bot_chat_title(hermes: HermesCLI, hermes_root: Path) -> None:
    """Hermes' own rename path sees our row through the same unique title index."""
    path = profiles.create_profile(hermes_root, "bot")
    sessions.ensure_bot_chat(path)
    out = hermes.python(
        "from hermes_state import SessionDB\n"
        "db = SessionDB()\n"
        "db.create_session('20200101_000000_aaaaaa', source='cli')\n"
        "try:\n"
        "    db.set_session_title('20200101_000000_aaaaaa', 'Bot Chat')\n"
        "    print('accepted')\n"
        "except ValueError as exc:\n"
        "    print('refused', exc)\n",
        profile="bot",
    )
    assert out.stdout.startswith("refused"), out.stdout


def _schema_of(db: Path, names: set[str] | None = None) -> dict[str, object]:
    """What a reader of the file sees of these objects: their CREATE text, columns and version."""
    conn = sqlite3.connect(db)
    try:
        found = {name: sql for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL")}
        keep = set(found) if names is None else names
        return {
            "sql": {name: found.get(name) for name in sorted(keep)},
            "columns": {t: conn.execute(f'PRAGMA table_info("{t}")').fetchall() for t in ("sessions", "messages")},
            "version": conn.execute("SELECT version FROM schema_version").fetchall(),
        }
    finally:
        conn.close()


@pytest.mark.hermes
@pytest.mark.parametrize("how", ["sqlite", "image"])
def test_our_state_db_has_the_schema_hermes_creates(hermes: HermesCLI, hermes_root: Path, tmp_path: Path, how: str) -> None:
    """Every table and index we create is, to the byte of its CREATE statement, what 0.19.0's own
    SessionDB creates in a new file (hermes_state.py SCHEMA_SQL and the title index); the rest
    of its schema Hermes adds on its first read-write open."""
    ours = new_bot_chat(hermes_root, how) / "state.db"
    theirs = tmp_path / "hermes-made.db"
    hermes.python(
        f"from pathlib import Path\nfrom hermes_state import SessionDB\nSessionDB(db_path=Path({str(theirs)!r})).close()\n"
    )
    mine = _schema_of(ours)
    assert mine == _schema_of(theirs, set(mine["sql"]))  # type: ignore[arg-type]
    tables = {"schema_version", "sessions", "messages", "idx_sessions_title_unique", "sqlite_sequence"}  # AUTOINCREMENT
    assert set(mine["sql"]) == tables  # type: ignore[arg-type]
    assert "hidden" not in {c[1] for c in mine["columns"]["sessions"]}  # type: ignore[index]  # 0.19.0 has none
