"""What a computation read from the file system, so its result can be taken again while that is unchanged.

A build system's dependency tracing (tup, fabricate, Bazel's action keys) applied to one `plan`:
while a `Trace` is active on a thread, every path that thread looks at is recorded with its stat
key (device, inode, size, mtime_ns, ctime_ns, mode, uid, gid):

- a file opened (the interpreter's `open` audit event; `os.open` with a folder descriptor is
  resolved through /proc/self/fd), a SQLite database connected to (`sqlite3.connect`, with its
  `-wal` file, whose rows a reader sees too);
- a folder listed (`os.listdir`, `os.scandir`); a path only looked at needs no listing of its
  folder, as its own key (None when absent) changes when it comes, goes or is replaced;
- a path stat'ed, followed or not, or tested (`os.stat`, `os.lstat`, `os.access`, `os.readlink`,
  and so `os.path.exists`, `Path.is_dir`, `shutil.which` ...): these are wrapped while a trace runs.

A path whose mtime or ctime falls within the timestamp granularity of the moment it was recorded
may change again in the same tick without changing its key (git's racy-clean rule), so such a file
gets a digest of its bytes (read or only looked at: a cache hit vouches for the bytes by the key)
and such a folder a digest of its names, taken before the traced code reads it; `unchanged`
compares them again. The digests are keyed with the trace's salt (BLAKE2b): a racy file may be a
.env or a `from_file` secret, and a plain hash of one would check a guess of its value.

Whatever no stat key can vouch for taints the trace, and a tainted trace is never used: a process
started, a socket, a signal sent (a liveness probe), a file under /proc, /sys or /dev, a write.
`expected_process` lets one adapter run a probe whose answer it vouches for with paths it names.

Paths under `skip` (hermes-fleet's own caches, whose hits are vouched for by the stat keys of the
files they stand for) and what the import system reads (a module's source and bytecode, the
listings of the import path: the code is keyed separately) are not recorded. Imports are told by
the frame that raised the event, never by a file's name or place: a manifest may name `soul.py`,
and a Python installed in /usr holds no input of a plan but /usr/local/bin/hermes is one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from controller.manifests import parallel

Key = tuple[int, int, int, int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns, mode, uid, gid
FINE_NS = 20_000_000  # nanosecond timestamps still move by the kernel's clock tick (1-10 ms)
COARSE_NS = 2_000_000_000  # whole-second timestamps (FAT keeps even seconds)
DIGEST_LIMIT = 64 * 1024 * 1024  # a racy file larger than this taints the trace (it is not digested)
MAX_PATHS = 2_000_000  # more than this taints the trace (a memo that large is not worth keeping)

# Kinds of record: "f" a file read (followed), "d" a folder listed (followed), "s" a path stat'ed
# (followed), "l" a path lstat'ed (not followed), "k" whether a path is a link (not followed: an
# absent path and one of any other kind are alike, a link is recorded by its own key; `vouch`es
# only, for a check that looked for links among a folder's entries).
FILE, FOLDER, STAT, LSTAT, LINK = "f", "d", "s", "l", "k"

_stat, _lstat, _access, _readlink, _open = os.stat, os.lstat, os.access, os.readlink, os.open
_TAINTING = {
    "subprocess.Popen": "a process was started",
    "os.posix_spawn": "a process was started",
    "os.exec": "a process was started",
    "os.fork": "a process was started",
    "os.system": "a process was started",
    "socket.connect": "a socket was used",
    "socket.bind": "a socket was used",
    "socket.sendto": "a socket was used",
    "os.kill": "a signal was sent",
    "os.killpg": "a signal was sent",
    "os.truncate": "a file was written",
    "os.remove": "a file was written",
    "os.rename": "a file was written",
    "os.mkdir": "a file was written",
    "os.rmdir": "a file was written",
    "os.symlink": "a file was written",
    "os.chmod": "a file was written",
    "os.chown": "a file was written",
    "os.utime": "a file was written",
    "os.link": "a file was written",
}
_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "sqlite3.connect", *_TAINTING})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def key_of(st: os.stat_result, kind: str = FILE) -> Key:
    """The stat key; a folder only stat'ed (not listed) by what it is, not by what it holds (its
    size and times change with every entry made in it, which such a look does not see)."""
    if kind in (STAT, LSTAT) and stat.S_ISDIR(st.st_mode):
        return (st.st_dev, st.st_ino, 0, 0, 0, st.st_mode, st.st_uid, st.st_gid)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid, st.st_gid)


def granularity(key: Key) -> int:
    """The timestamp tick of the path's filesystem, told by its own timestamps: whole seconds for
    both (ext3, an ext4 of small inodes, FAT, HFS+) is a coarse one. (The clock's reading says
    nothing about the filesystem: it is never a whole second.)"""
    return COARSE_NS if key[3] % 1_000_000_000 == 0 and key[4] % 1_000_000_000 == 0 else FINE_NS


def is_racy(key: Key, now_ns: int) -> bool:
    return max(key[3], key[4]) >= now_ns - granularity(key)


@dataclass
class Record:
    key: Key | None  # None: absent
    digest: str = ""  # racy files and folders: of the bytes, of the sorted names and kinds


@dataclass
class Trace:
    """The paths one thread looked at, by (kind, path)."""

    skip: tuple[str, ...] = ()
    salt: bytes = b""  # keys the digests: a racy .env's or secret file's digest is no check for a guess
    records: dict[tuple[str, str], Record] = field(default_factory=dict)
    tainted: str = ""
    thread: int = field(default_factory=threading.get_ident)
    _busy: bool = False
    _vouched: int = 0

    def taint(self, why: str) -> None:
        if not self.tainted:
            self.tainted = why

    def note(self, kind: str, path: str, seen: os.stat_result | bool | None = True) -> None:
        """Record `path` (absolute) as `kind`: by what the traced code was given (`seen`, a stat
        result or None for absent), else stat'ed here."""
        if (kind, path) in self.records or self.tainted or path in _CONSTANT or self._ignored(path):
            return
        if len(self.records) >= MAX_PATHS:
            self.taint(f"more than {MAX_PATHS} paths were read")
            return
        if path.startswith(("/proc/", "/sys/", "/dev/")) or path in ("/proc", "/sys", "/dev"):
            self.taint(f"{path} was read (it has no stat key that says it is unchanged)")
            return
        self.records[(kind, path)] = _take(kind, path, seen, self.salt)
        if self.records[(kind, path)].digest == TAINT:
            self.taint(f"{path} changed while it was read, or cannot be digested")

    def inputs(self) -> list[tuple[str, str, Key | None, str]]:
        """(kind, path, key, digest) of each record, but a link check of a path also lstat'ed:
        its lstat key says whether it is a link already."""
        records = self.records
        return [(k, p, r.key, r.digest) for (k, p), r in records.items() if k != LINK or (LSTAT, p) not in records]

    def _ignored(self, path: str) -> bool:
        skipped = path.startswith(self.skip) or path + os.sep in self.skip
        return skipped and ".." not in path.split(os.sep)  # `cache/../x` is no cache's file


TAINT = "taint"


def _take(kind: str, path: str, seen: os.stat_result | bool | None = True, salt: bytes = b"") -> Record:
    """The key of `path`; with a digest when it is racy: a file's bytes whether it was read or
    only looked at (a cache hit vouches for its bytes by its key), a listed folder's names."""
    if seen is None:
        return Record(None)
    try:
        st = seen if isinstance(seen, os.stat_result) else _lstat(path) if kind in (LSTAT, LINK) else _stat(path)
    except OSError:
        return Record(None)
    if kind == LINK and not stat.S_ISLNK(st.st_mode):
        return Record(None)
    key = key_of(st, kind)
    if not is_racy(key, time.time_ns()) or (kind != FOLDER and stat.S_ISDIR(st.st_mode)):
        return Record(key)
    return Record(key, _digest(kind, path, st, salt))


def _digest(kind: str, path: str, st: os.stat_result, salt: bytes = b"") -> str:
    """Of a racy file's bytes or a racy folder's names, keyed with `salt`; TAINT when it cannot be
    taken. Keyed, as the process key is (adapters/settled.py): the file may be a .env or a secret."""
    try:
        if stat.S_ISLNK(st.st_mode):
            data = b"link:" + os.fsencode(_readlink(path))
        elif kind == FOLDER:
            entries = _entries(path) if stat.S_ISDIR(st.st_mode) else None
            data = b"not a folder" if entries is None else "\0".join(entries).encode("utf-8", "surrogateescape")
        elif not stat.S_ISREG(st.st_mode):
            data = f"kind {stat.S_IFMT(st.st_mode)}".encode()
        elif st.st_size > DIGEST_LIMIT:
            return TAINT
        else:
            from controller import bounded

            data = b"file:" + bounded.read_bytes(path, DIGEST_LIMIT)
        return hashlib.blake2b(data, key=salt, digest_size=32).hexdigest()
    except Exception:  # gone, unreadable, grown: the trace is not kept
        return TAINT


def _entries(path: str) -> list[str]:
    """A folder's names, each with what it is as the listing says (a file swapped for a link of the
    same name in the folder's tick is a change: the containment check reads that)."""
    with os.scandir(path) as listing:
        return sorted(f"{e.name}/{'l' if e.is_symlink() else 'd' if e.is_dir(follow_symlinks=False) else 'f'}" for e in listing)


def unchanged(records: Iterable[tuple[str, str, Key | None, str]], salt: bytes = b"") -> bool:
    """True when every recorded path still has its key (and a racy one its digest, keyed with `salt`)."""
    for kind, path, key, digest in records:
        try:
            st: os.stat_result | None = _lstat(path) if kind in (LSTAT, LINK) else _stat(path)
        except OSError:
            st = None
        if kind == LINK and st is not None and not stat.S_ISLNK(st.st_mode):
            st = None
        if (None if st is None else key_of(st, kind)) != key:
            return False
        if digest and (st is None or _digest(kind, path, st, salt) != digest):
            return False
    return True


# --- recording --------------------------------------------------------------------------------------

_active: Trace | None = None
_one = threading.Lock()
_hook_installed = False
_guard = threading.local()


@contextlib.contextmanager
def tracing(skip: Iterable[str] = (), salt: bytes = b"") -> Iterator[Trace]:
    """Record what this thread reads until the block ends; the digests of racy paths are keyed
    with `salt`. One trace at a time per process: Busy when another thread's runs (the caller
    goes without)."""
    global _active, _hook_installed
    if not _one.acquire(blocking=False):
        raise Busy("another trace is running in this process")
    try:
        trace = Trace(skip=tuple(os.path.join(os.path.abspath(s), "") for s in skip), salt=salt)
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True
        _active = trace
        os.stat, os.lstat, os.access, os.readlink, os.open = _w_stat, _w_lstat, _w_access, _w_readlink, _w_open
        try:
            yield trace
        finally:
            os.stat, os.lstat, os.access, os.readlink, os.open = _stat, _lstat, _access, _readlink, _open
            _active = None
    finally:
        _one.release()


class Busy(Exception):
    pass


@contextlib.contextmanager
def expected_process() -> Iterator[None]:
    """A child process the caller vouches for (it records the paths its answer depends on with
    `vouch`): it does not taint the trace."""
    trace = _current()
    if trace is not None:
        trace._vouched += 1
    try:
        yield
    finally:
        if trace is not None:
            trace._vouched -= 1


def taint(why: str) -> None:
    """Mark the running trace, if any, as not to be used (an answer no path vouches for)."""
    trace = _current()
    if trace is not None:
        trace.taint(why)


def vouch(kind: str, paths: Iterable[str]) -> None:
    """Record `paths` as inputs of the running trace, if any (an answer that depends on them)."""
    if _current() is not None:
        for path in paths:
            _note(kind, absolute(path))


def _current() -> Trace | None:
    trace = _active
    if trace is None or trace.thread != threading.get_ident() or getattr(_guard, "busy", False):
        return None
    return trace


_FDS = "/proc/self/fd/"
# An absolute path in normal form (no "." or ".." part, no "//"), not one through a descriptor.
_PLAIN = re.compile(r"/(?!proc/self/fd/)(?:(?!\.\.?(?:/|\Z))[^/]+/)*(?!\.\.?\Z)[^/]+\Z")

_CONSTANT = frozenset({"/dev/null", "/proc/self/fd"})  # the same whenever read: not inputs


def _path_of(value: Any, dir_fd: int | None = None) -> str | None:
    """The absolute path named by an argument of os.*, or None when it names none (an fd)."""
    if isinstance(value, int):
        return None
    try:
        path = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if not path:
        return None  # "" names no file (a stat of it always fails), not the working folder
    if dir_fd is not None and not os.path.isabs(path):
        base = _readlink(f"/proc/self/fd/{dir_fd}")
        path = os.path.join(base, path)
    if path.startswith(_FDS):
        fd, _, rest = path[len(_FDS) :].partition("/")
        if not rest:
            return None  # this process's own descriptor (adapters/sessions.py checks what SQLite holds)
        if fd.isdigit():
            path = os.path.join(_readlink(f"{_FDS}{fd}"), rest)
    return absolute(path)


def absolute(path: str) -> str:
    """`path` made absolute, "." and "//" folded; a ".." is left for the kernel to resolve: after a
    symlink, `link/..` is the parent of the link's target, not the folder that holds the link."""
    path = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    return path if ".." in path.split(os.sep) else os.path.normpath(path)


def _note(kind: str, value: Any, dir_fd: int | None = None, seen: os.stat_result | bool | None = True) -> None:
    trace = _current()
    if trace is None:
        return
    _guard.busy = True  # what is done here is not recorded
    try:
        if dir_fd is None and type(value) is str and _PLAIN.match(value):
            path: str | None = value  # the common case: an absolute path already in normal form
        else:
            path = _path_of(value, dir_fd)
        if path is not None:
            trace.note(kind, path, seen)
    except OSError:
        trace.taint("a path was named through a folder descriptor that cannot be resolved")
    finally:
        _guard.busy = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    trace = _current()
    if trace is None or event not in _EVENTS or _untraced():
        return
    if event == "open":
        if getattr(_guard, "opened_at", False):
            _guard.opened_at = False  # os.open with a folder descriptor: recorded by _w_open, resolved
        elif _writes(args[1], args[2]):
            trace.taint("a file was opened for writing")
        else:
            _note(_opened(args[2]), args[0])
    elif event in ("os.listdir", "os.scandir"):
        listed = "." if args[0] is None else args[0]
        _note(FOLDER, f"{_FDS}{listed}/." if isinstance(listed, int) else listed)  # a folder's descriptor: its path
    elif event == "sqlite3.connect":
        database = _database_path(args[0])
        if database is None:
            trace.taint("a database was opened that is not a file")
            return
        _note(FILE, database)
        _note(STAT, database + "-wal")
    elif event in _TAINTING and not (trace._vouched and event in ("subprocess.Popen", "os.posix_spawn", "os.fork")):
        trace.taint(_TAINTING[event])


def _untraced() -> bool:
    """Whether the event comes from code whose reads are no input of the answer, told by the frame
    that raised it (never by a file's name: a manifest may name `soul.py`):

    - the import system (a module's source, its cached bytecode, the listing of a folder on the
      import path): the code, keyed apart (adapters/settled.py);
    - the manifests' parallel parse (manifests/parallel.py): it reads this machine's CPUs and
      threads (/proc, /sys) to decide whether to fork, and its child parses only files this
      process stat'ed first (recorded by the wrapped `os.stat`)."""
    caller = sys._getframe(1).f_back  # the frame that raised it (0: this function, 1: _audit)
    name = caller.f_code.co_filename if caller is not None else ""
    return name.startswith(_IMPORT_FRAMES) or name == _PARALLEL_PARSE


_IMPORT_FRAMES = ("<frozen importlib._bootstrap", "<frozen zipimport")
_PARALLEL_PARSE = parallel.__file__


def _opened(flags: Any) -> str:
    """The kind of record of an open with `flags`: a folder opened (O_DIRECTORY, to open files
    beneath it) is only looked at, as by a stat (its listing is not read, and a running Hermes
    renames files into the home's folders all the time); anything else is a file read."""
    if isinstance(flags, int) and flags & os.O_DIRECTORY:
        return LSTAT if flags & os.O_NOFOLLOW else STAT
    return FILE


def _writes(mode: Any, flags: Any) -> bool:
    """Whether an `open` event's mode (io.open) or flags (os.open) can write."""
    return (isinstance(flags, int) and bool(flags & _WRITE_FLAGS)) or (isinstance(mode, str) and bool(set(mode) & set("wax+")))


def _database_path(value: Any) -> str | None:
    """The file of a `sqlite3.connect` argument (a path, or a `file:` URI as `?mode=ro` opens take)."""
    try:
        text = os.fsdecode(os.fspath(value))
    except TypeError:
        return None
    if text.startswith("file:"):
        text = text[len("file:") :].partition("?")[0]
    return None if text in ("", ":memory:") else text


def _w_stat(path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> os.stat_result:
    kind = STAT if follow_symlinks else LSTAT
    try:
        st = _stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    except (FileNotFoundError, NotADirectoryError):
        _note(kind, path, dir_fd, None)
        raise
    except OSError:
        _note(kind, path, dir_fd)
        raise
    _note(kind, path, dir_fd, st)
    return st


def _w_lstat(path: Any, *, dir_fd: int | None = None) -> os.stat_result:
    return _w_stat(path, dir_fd=dir_fd, follow_symlinks=False)


def _w_access(
    path: Any, mode: int, *, dir_fd: int | None = None, effective_ids: bool = False, follow_symlinks: bool = True
) -> bool:
    _note(STAT if follow_symlinks else LSTAT, path, dir_fd)
    return _access(path, mode, dir_fd=dir_fd, effective_ids=effective_ids, follow_symlinks=follow_symlinks)


def _w_readlink(path: Any, *, dir_fd: int | None = None) -> Any:
    _note(LSTAT, path, dir_fd)
    return _readlink(path, dir_fd=dir_fd)


def _w_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    if dir_fd is not None and not flags & _WRITE_FLAGS and _current() is not None:
        _note(_opened(flags), path, dir_fd)
        _guard.opened_at = True  # the audit event that follows names the path relative to dir_fd
    try:
        return _open(path, flags, mode, dir_fd=dir_fd)
    finally:
        _guard.opened_at = False
