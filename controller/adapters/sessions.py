"""The canonical "Bot Chat" session in a profile's `state.db`: find it, or create exactly one.

Called by the reconciler for every bot it manages. The row rules: docs/hermes/bot-mode.md#bot-chat
and docs/hermes/files.md#sessions-database; the table layout from hermes-agent 0.19 `hermes_state.py`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from controller.adapters import fsio
from controller.adapters.home import HomeLayout, ProfileLayout
from controller.errors import ConflictError, HermesStateError

T = TypeVar("T")

BOT_CHAT_TITLE = "Bot Chat"
STATE_DB = ProfileLayout.STATE_DB
# Rows with these sources are not a chat (docs/hermes/bot-mode.md#bot-chat): they count as absent.
NON_CHAT_SOURCES = frozenset({"kanban", "tool"})
BOT_CHAT_SOURCE = "cli"  # what `hermes chat -c "Bot Chat" --create-if-missing` (main) stores

# The bot writes its own state.db, so every statement on it is bounded (docs/reliability.md#state-db):
# SQLite waits at most BUSY_SECONDS for a lock, runs at most WORK_STEPS * STEP_OPS virtual machine
# steps per connection (a planted trigger or a huge scan is interrupted, in about a second), and
# returns no value longer than MAX_VALUE_BYTES. The step budget is a C iterator, not a Python
# callback: no Python code runs inside SQLite, so a SIGTERM is handled the moment it returns.
BUSY_SECONDS = 3.0
STEP_OPS = 1000
WORK_STEPS = 10_000
MAX_VALUE_BYTES = 1024 * 1024
_READ_COLUMNS = ("id", "source", "title", "archived")  # what a Bot Chat lookup needs of its row
_WRITTEN_TABLES = ("sessions", "schema_version")

# Hermes 0.19 stamps SCHEMA_VERSION 22 in `schema_version`. On every read-write open, SessionDB
# runs `CREATE ... IF NOT EXISTS` for all its tables, ADDs every declared column a live table
# lacks, and runs data migrations from the stored version. So a new DB only needs the tables
# that read-only readers query before any Hermes writer has opened it (`sessions`, `messages`,
# with their 0.19 columns), the unique title index, and the version marker; Hermes creates the
# rest (FTS tables, triggers, other indexes) itself. Newer Hermes migrates up from 22. Each
# statement below is, to the byte, the one 0.19.0's SCHEMA_SQL runs (SQLite keeps that text in
# sqlite_master): tests/adapters/test_sessions.py compares them with a DB the real 0.19.0 creates.
# 0.19.0 has no `hidden` column; main's reconciler adds it (DEFAULT 0) when it first opens the
# file, so the Bot Chat is hidden only where the column exists (docs/hermes/bot-mode.md#bot-chat).
HERMES_SCHEMA_VERSION = 22
_SESSION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "TEXT PRIMARY KEY"),
    ("source", "TEXT NOT NULL"),
    ("user_id", "TEXT"),
    ("session_key", "TEXT"),
    ("chat_id", "TEXT"),
    ("chat_type", "TEXT"),
    ("thread_id", "TEXT"),
    ("display_name", "TEXT"),
    ("origin_json", "TEXT"),
    ("expiry_finalized", "INTEGER DEFAULT 0"),
    ("model", "TEXT"),
    ("model_config", "TEXT"),
    ("system_prompt", "TEXT"),
    ("parent_session_id", "TEXT"),
    ("started_at", "REAL NOT NULL"),
    ("ended_at", "REAL"),
    ("end_reason", "TEXT"),
    ("message_count", "INTEGER DEFAULT 0"),
    ("tool_call_count", "INTEGER DEFAULT 0"),
    ("input_tokens", "INTEGER DEFAULT 0"),
    ("output_tokens", "INTEGER DEFAULT 0"),
    ("cache_read_tokens", "INTEGER DEFAULT 0"),
    ("cache_write_tokens", "INTEGER DEFAULT 0"),
    ("reasoning_tokens", "INTEGER DEFAULT 0"),
    ("cwd", "TEXT"),
    ("git_branch", "TEXT"),
    ("git_repo_root", "TEXT"),
    ("billing_provider", "TEXT"),
    ("billing_base_url", "TEXT"),
    ("billing_mode", "TEXT"),
    ("estimated_cost_usd", "REAL"),
    ("actual_cost_usd", "REAL"),
    ("cost_status", "TEXT"),
    ("cost_source", "TEXT"),
    ("pricing_version", "TEXT"),
    ("title", "TEXT"),
    ("api_call_count", "INTEGER DEFAULT 0"),
    ("handoff_state", "TEXT"),
    ("handoff_platform", "TEXT"),
    ("handoff_error", "TEXT"),
    ("compression_failure_cooldown_until", "REAL"),
    ("compression_failure_error", "TEXT"),
    ("compression_fallback_streak", "INTEGER NOT NULL DEFAULT 0"),
    ("profile_name", "TEXT"),
    ("rewind_count", "INTEGER NOT NULL DEFAULT 0"),
    ("archived", "INTEGER NOT NULL DEFAULT 0"),
)
_MESSAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    ("session_id", "TEXT NOT NULL REFERENCES sessions(id)"),
    ("role", "TEXT NOT NULL"),
    ("content", "TEXT"),
    ("tool_call_id", "TEXT"),
    ("tool_calls", "TEXT"),
    ("tool_name", "TEXT"),
    ("effect_disposition", "TEXT"),
    ("timestamp", "REAL NOT NULL"),
    ("token_count", "INTEGER"),
    ("finish_reason", "TEXT"),
    ("reasoning", "TEXT"),
    ("reasoning_content", "TEXT"),
    ("reasoning_details", "TEXT"),
    ("codex_reasoning_items", "TEXT"),
    ("codex_message_items", "TEXT"),
    ("platform_message_id", "TEXT"),
    ("observed", "INTEGER DEFAULT 0"),
    ("active", "INTEGER NOT NULL DEFAULT 1"),
    ("compacted", "INTEGER NOT NULL DEFAULT 0"),
    ("api_content", "TEXT"),
)


def _create_table_sql(table: str, columns: tuple[tuple[str, str], ...], extra: str = "") -> str:
    body = ",\n    ".join(f"{name} {decl}" for name, decl in columns)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n    {body}{extra}\n)"


_SCHEMA_STATEMENTS = (
    "CREATE TABLE IF NOT EXISTS schema_version (\n    version INTEGER NOT NULL\n)",
    _create_table_sql("sessions", _SESSION_COLUMNS, ",\n    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)"),
    _create_table_sql("messages", _MESSAGE_COLUMNS),
    # Same name and definition as Hermes', so its own `IF NOT EXISTS` finds it already there.
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) WHERE title IS NOT NULL",
)


# --- read ----------------------------------------------------------------------------------


def find_bot_chat(profile_dir: Path, *, root: Path | None = None) -> dict[str, Any] | None:
    """The profile's canonical Bot Chat row, or None. Read-only: never creates or writes a file.
    `root`: the home the profile folder is in, opened from there without following a link
    (`held_folder`)."""
    db = Path(profile_dir) / STATE_DB
    if not db.is_file():
        return None
    try:
        with held_folder(Path(profile_dir), root) as folder:
            row = _query_read_only(folder, _title_row_if_table)
    except sqlite3.Error as exc:
        raise HermesStateError(f"cannot read {db}: {_bounded_reason(exc)}", path=str(db)) from exc
    return row if row is not None and is_bot_chat(row) else None


class HeldFolder:
    """A profile folder open as a descriptor (`fsio.open_folder`), and the path SQLite opens its
    `state.db` by: `/proc/self/fd/<fd>/state.db`, which names the folder that was checked even if a
    link is put in its place afterwards (docs/reliability.md#state-db)."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        through = f"/proc/self/fd/{fd}"
        self.via_descriptor = os.path.isdir(through)
        self.db = f"{through}/{STATE_DB}" if self.via_descriptor else str(path / STATE_DB)

    def exists(self, name: str) -> bool:
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def check_opened(self, conn: sqlite3.Connection) -> None:
        """The file `conn` holds is this folder's `state.db` (the one a link in the folder leads to
        inside it), not a file a link planted after the check leads to: ContainmentError otherwise,
        before any statement of ours runs."""
        if not self.via_descriptor:
            return
        opened = str(conn.execute("PRAGMA database_list").fetchone()[2])
        where = fsio.folder_location(self.fd, self.path)
        try:
            want = os.stat(STATE_DB, dir_fd=self.fd)
        except OSError:
            want = None
        held = _held_inodes(opened)
        if want is None or not Path(opened).is_relative_to(where) or not held or held != {(want.st_dev, want.st_ino)}:
            raise fsio.moved(self.path / STATE_DB)


def _held_inodes(path: str) -> set[tuple[int, int]]:
    """(device, inode) of every file this process has open at `path` (/proc/self/fd)."""
    found = set()
    for entry in os.listdir("/proc/self/fd"):
        link = f"/proc/self/fd/{entry}"
        with contextlib.suppress(OSError):
            if os.readlink(link) == path:
                st = os.fstat(int(entry))
                if os.readlink(link) == path:  # not closed and reused by another thread meanwhile
                    found.add((st.st_dev, st.st_ino))
    return found


@contextlib.contextmanager
def held_folder(profile_dir: Path, root: Path | None) -> Iterator[HeldFolder]:
    """`profile_dir` open from `root` (or from its parent) with no link followed on the way."""
    fd = fsio.open_folder(profile_dir, root if root is not None else profile_dir.parent)
    try:
        yield HeldFolder(fd, profile_dir)
    finally:
        os.close(fd)


def is_bot_chat(row: dict[str, Any]) -> bool:
    """A `Bot Chat` row counts unless it is a kanban/tool run or archived (retired)."""
    return row.get("title") == BOT_CHAT_TITLE and (row.get("source") or "") not in NON_CHAT_SOURCES and not row.get("archived")


def _title_row_if_table(conn: sqlite3.Connection) -> dict[str, Any] | None:
    # One query, not a look in sqlite_master first: a database without the table (a Hermes that
    # never ran in this profile) is rare, and its error is told apart by the table's absence.
    try:
        row = _title_row(conn)
    except sqlite3.OperationalError as exc:
        if str(exc) == "interrupted" or _has_table(conn, "sessions"):
            raise
        return None
    return dict(row) if row is not None else None


def _query_read_only(folder: HeldFolder, query: Callable[[sqlite3.Connection], T]) -> T:
    # A `mode=ro` open of a WAL database creates -wal/-shm files when none exist. When neither
    # exists, every committed page is in the main file, so `immutable=1` reads it without
    # creating anything. If a writer races in, that read may fail or be stale: then read again
    # with a plain read-only open (the writer has created the sidecars by then).
    uri = f"file:{quote(folder.db)}?mode=ro"
    if not _has_sidecars(folder):
        try:
            result = _run(uri + "&immutable=1", folder, query)
            if not _has_sidecars(folder):
                return result
        except sqlite3.DatabaseError as exc:
            if str(exc) == "interrupted":  # over the step budget: reading again would only spend it again
                raise
    return _run(uri, folder, query)


def _has_sidecars(folder: HeldFolder) -> bool:
    return any(folder.exists(STATE_DB + suffix) for suffix in ("-wal", "-shm"))


def _run(uri: str, folder: HeldFolder, query: Callable[[sqlite3.Connection], T]) -> T:
    conn = _connect(uri)
    try:
        folder.check_opened(conn)
        return query(conn)
    finally:
        conn.close()


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None)
    conn.row_factory = sqlite3.Row
    _bound(conn)
    return conn


def _bounded_reason(exc: sqlite3.Error) -> str:
    """SQLite's message, with the bound that stopped it said in words."""
    if str(exc) == "interrupted":
        return f"stopped after {WORK_STEPS * STEP_OPS:,} SQLite steps (a planted trigger or view, or a damaged database?)"
    if "too big" in str(exc):
        return f"a value is over the {MAX_VALUE_BYTES:,}-byte bound hermes-fleet reads"
    return str(exc)


def _bound(conn: sqlite3.Connection) -> None:
    """Interrupt any statement of `conn` past its step budget, and refuse over-long values."""
    budget = itertools.chain(itertools.repeat(0, WORK_STEPS), itertools.repeat(1))
    conn.set_progress_handler(budget.__next__, STEP_OPS)
    if hasattr(conn, "setlimit"):  # Python 3.11+
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)


def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return row is not None


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def _title_row(conn: sqlite3.Connection) -> sqlite3.Row | None:
    # The unique title index allows at most one row with this exact title. Only the columns a
    # lookup needs: a bot may have put anything into the others (a 300 MB system prompt).
    names = ", ".join(c for c in _READ_COLUMNS if c in _columns(conn, "sessions")) or "title"
    row: sqlite3.Row | None = conn.execute(f"SELECT {names} FROM sessions WHERE title = ?", (BOT_CHAT_TITLE,)).fetchone()
    return row


# --- write ---------------------------------------------------------------------------------


def ensure_bot_chat(profile_dir: Path, *, profile: str | None = None, root: Path | None = None) -> bool:
    """Make sure the profile has exactly one Bot Chat; True if this call created it.

    Check and insert run in one `BEGIN IMMEDIATE` transaction, so two writers (or Hermes itself)
    can never produce a second row or an untitled orphan. `profile`: the profile's name when
    `profile_dir` is its staging folder (a new profile, not yet published).
    """
    profile_dir = Path(profile_dir)
    if not profile_dir.is_dir():
        raise HermesStateError(f"profile directory {profile_dir} does not exist", path=str(profile_dir))
    # Its real file, never a hard link: SQLite writes in place (fsio.in_place).
    db = fsio.in_place(profile_dir / STATE_DB, sidecars=ProfileLayout.STATE_DB_SIDECARS)
    new = not os.path.lexists(db)
    if new and fsio.is_deferred() and _CAN_SERIALIZE:
        # A new profile's staging folder: nobody else can open this DB, so it is built in memory
        # and written as one file (about 0.3 ms instead of 3 ms of SQLite file I/O per bot).
        fsio.atomic_write_bytes(db, new_db_image(profile or _profile_name(profile_dir)), mode=0o644)
        return True
    with held_folder(profile_dir, root or fsio.fenced_home(profile_dir)) as folder:
        created = _write_bot_chat(folder, db, new, profile or _profile_name(profile_dir))
    if new:
        _sync_file(db)
        fsio.fsync_dir(profile_dir)
    return created


def _write_bot_chat(folder: HeldFolder, db: Path, new: bool, profile_name: str | None) -> bool:
    """ensure_bot_chat's SQLite part, on the `state.db` of the folder held open."""
    try:
        conn = sqlite3.connect(folder.db, timeout=BUSY_SECONDS, isolation_level=None)
    except sqlite3.Error as exc:
        raise HermesStateError(f"cannot open {db}: {exc}", path=str(db)) from exc
    conn.row_factory = sqlite3.Row
    _bound(conn)
    try:
        folder.check_opened(conn)
        if new:
            # A DB this call creates: SQLite's own syncs (about nine for the journal-mode switch,
            # the commit and the checkpoint at close) are replaced by one fsync of the finished
            # file below. A kill loses nothing either way (every write is in the OS); a power cut
            # before that fsync can only lose the new Bot Chat, which the next apply re-creates.
            conn.execute("PRAGMA synchronous=OFF")
        began = _prepare(conn)
        return _insert_if_missing(conn, profile_name, began=began)
    except sqlite3.Error as exc:
        reason = _bounded_reason(exc)
        raise HermesStateError(f"cannot write the Bot Chat session to {db}: {reason}; nothing was written", path=str(db)) from exc
    except HermesStateError as exc:
        if exc.path is not None:
            raise
        raise HermesStateError(f"{db}: {exc.message}", path=str(db), hint=exc.hint) from exc
    finally:
        conn.close()


# Connection.serialize/deserialize: Python 3.11+ on an SQLite built with them (3.36+ by default).
_CAN_SERIALIZE = hasattr(sqlite3.Connection, "serialize") and hasattr(sqlite3.Connection, "deserialize")
_TEMPLATE: list[bytes] = []  # the empty schema's image, made once per process


def new_db_image(profile_name: str | None) -> bytes:
    """The bytes of a new `state.db` holding the schema (as `_prepare` creates it) and one Bot
    Chat row (as `_insert_if_missing` writes it), in WAL mode as Hermes keeps it.

    SQLite builds it in memory; an in-memory image carries the legacy journal mark, so bytes 18
    and 19 of the header (the file format write and read versions, 1 legacy, 2 WAL: SQLite's
    file format, section 1.3) are set to 2, which is all `PRAGMA journal_mode=WAL` changes in the
    file (docs/hermes/files.md#sessions-database).
    """
    if not _TEMPLATE:
        conn = _connect(":memory:")
        try:
            conn.execute("BEGIN")
            for statement in _SCHEMA_STATEMENTS:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (HERMES_SCHEMA_VERSION,))
            conn.execute("COMMIT")
            _TEMPLATE.append(conn.serialize())
        finally:
            conn.close()
    # The template's sessions table is empty and has our columns: the row goes in as
    # _insert_if_missing would put it, without its checks (no title, no id to collide with).
    values = _row_values({name for name, _ in _SESSION_COLUMNS}, profile_name, _session_id())
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.deserialize(_TEMPLATE[0])
        marks = ", ".join("?" * len(values))
        conn.execute(f"INSERT INTO sessions ({', '.join(values)}) VALUES ({marks})", tuple(values.values()))
        image = bytearray(conn.serialize())
    finally:
        conn.close()
    image[18] = image[19] = 2
    return bytes(image)


def _sync_file(path: Path) -> None:
    """fsync a file (the DB after its connection closed: the WAL is checkpointed into it)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            fsio.sync_file(fd)  # inside fsio.deferred(): the staging folder's one syncfs instead
        finally:
            os.close(fd)


def _prepare(conn: sqlite3.Connection) -> bool:
    """Check Hermes' table, or create the schema of a new DB; True when a transaction is left
    open (the schema), which the Bot Chat insert then commits with it: one commit, not two."""
    conn.execute("PRAGMA foreign_keys=ON")
    if _has_table(conn, "sessions"):
        # Hermes' DB: keep the journal mode it chose (it falls back from WAL on filesystems
        # that lack it), and check the columns we write are there.
        missing = {"id", "source", "title", "started_at"} - _columns(conn, "sessions")
        if missing:
            raise HermesStateError(f"state.db has an unexpected sessions table (missing {sorted(missing)})")
        return False
    # A new DB: WAL, as Hermes uses. The mode is stored in the file, and is set outside any
    # transaction; where the filesystem refuses it, stay in rollback mode as Hermes does.
    with contextlib.suppress(sqlite3.OperationalError):
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        _refuse_triggers(conn)
        for statement in _SCHEMA_STATEMENTS:
            conn.execute(statement)
        if conn.execute("SELECT 1 FROM schema_version LIMIT 1").fetchone() is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (HERMES_SCHEMA_VERSION,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return True


def _insert_if_missing(conn: sqlite3.Connection, profile_name: str | None, *, began: bool = False) -> bool:
    if not began:
        conn.execute("BEGIN IMMEDIATE")
    try:
        _refuse_triggers(conn)
        found = _title_row(conn)
        if found is not None:
            conn.execute("ROLLBACK")
            row = dict(found)
            if is_bot_chat(row):
                return False
            raise ConflictError(
                f"the title {BOT_CHAT_TITLE!r} is held by session {row['id']} "
                f"(source={row['source']!r}, archived={row.get('archived', 0)}), "
                "which is not a usable Bot Chat",
                hint="rename or unarchive that session in Hermes; a second Bot Chat is never created",
            )
        values = _new_row(conn, profile_name)
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        conn.execute(f"INSERT INTO sessions ({names}) VALUES ({marks})", tuple(values.values()))
        conn.execute("COMMIT")
        return True
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _refuse_triggers(conn: sqlite3.Connection) -> None:
    """A trigger on a table we write would run the bot's SQL inside our write: refused before
    the write, inside its transaction (no trigger can appear meanwhile). Hermes 0.19.0 puts
    triggers on `messages` only (hermes_state.py, _FTS_TRIGGERS), which we never write."""
    marks = ", ".join("?" * len(_WRITTEN_TABLES))
    found = conn.execute(
        f"SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ({marks})", _WRITTEN_TABLES
    ).fetchall()
    if found:
        names = ", ".join(f"{row[0]!r} on {row[1]}" for row in found)
        raise HermesStateError(
            f"state.db has a trigger Hermes does not make ({names}): hermes-fleet does not write the Bot Chat "
            "session into it (the trigger would run inside that write)",
            hint="drop the trigger (`DROP TRIGGER <name>`) if nobody needs it, then run again",
        )


def _new_row(conn: sqlite3.Connection, profile_name: str | None) -> dict[str, Any]:
    return _row_values(_columns(conn, "sessions"), profile_name, _new_session_id(conn))


def _row_values(columns: set[str], profile_name: str | None, session_id: str) -> dict[str, Any]:
    values: dict[str, Any] = {
        "id": session_id,
        "source": BOT_CHAT_SOURCE,
        "title": BOT_CHAT_TITLE,
        "started_at": time.time(),  # Hermes stores epoch seconds as REAL
    }
    if "profile_name" in columns:
        values["profile_name"] = profile_name
    if "hidden" in columns:  # Hermes main only; Bot Mode always hides the canonical chat
        values["hidden"] = 1
    return values


def _new_session_id(conn: sqlite3.Connection) -> str:
    while True:
        candidate = _session_id()
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (candidate,)).fetchone() is None:
            return candidate


def _session_id() -> str:
    # Hermes' format: local-time `YYYYMMDD_HHMMSS_<6 hex>` (cli.py uses datetime.now()).
    return f"{datetime.now():%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"


def _profile_name(profile_dir: Path) -> str | None:
    # Hermes records the named profile, and NULL for the default profile (the root).
    return profile_dir.name if profile_dir.parent.name == HomeLayout.PROFILES else None
