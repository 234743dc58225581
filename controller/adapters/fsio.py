"""Atomic, mode-keeping file writes, bounded reads, and the one OSError mapping of the adapters.

Every write goes: temp file in the same folder -> write -> fsync -> os.replace -> fsync(folder),
so a crash leaves each file either old or new (PRODUCT.md safety rule 5). Inside `grouped()` (one
object of an apply) the folder fsyncs wait for the end of the block, one per folder. `WRITE_HOOKS` lets the
fault-injection tests stop a run at the Nth write point.

Every OSError of a file operation in the home becomes a `HermesStateError` here (`state_error`):
the path, the system's reason, and what to do (read-only file system, permission denied, a folder
where a file must be, a full disk...). Temp files are named `.<name>.hf<pid>.<random>.tmp`, so a
later run can prove a leftover is the debris of a dead hermes-fleet process and sweep it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import home, homebounds
from controller.errors import ChangedUnderUs, ConflictError, ContainmentError, HermesStateError, NotRegular
from controller.hermes import DEFAULT_PROFILE

# The largest file of the home we read (config.yaml, .env, profile.yaml, SOUL.md, jobs.json, an
# avatar, the inventory, a status file): far above anything Hermes writes, small enough to hold.
MAX_STATE_BYTES = 64 * 1024 * 1024
TEMP_RE = re.compile(r"^\..+\.hf(\d+)\.[A-Za-z0-9_]+\.tmp$")

_HINTS = {
    errno.EROFS: "the file system is read-only: remount it read-write, or point --home at a writable Hermes home",
    errno.EACCES: "permission denied: run hermes-fleet as the user that owns the Hermes home, or fix the permissions",
    errno.EPERM: "the system refused it (an immutable or append-only file, or another owner): fix the attributes or owner",
    errno.EISDIR: "a folder is where a file must be: move the folder away, then run again",
    errno.ENOTDIR: "a file is where a folder must be: move the file away, then run again",
    errno.ENOSPC: "the disk is full: free space, then run again (what was written so far is kept)",
    errno.EDQUOT: "the disk quota is used up: free space, then run again (what was written so far is kept)",
    errno.ELOOP: "a symlink loop is in the way: replace the link with a real file or folder",
    errno.EFBIG: "the file is larger than hermes-fleet reads: shrink it or move it away",
    errno.EINVAL: "replace it with a regular file",
    errno.ENOENT: "a folder on the way does not exist (any more): check the Hermes home",
    errno.EIO: "the disk reported an I/O error: check the disk, then run again",
}


def state_error(exc: OSError, action: str, path: object | None = None) -> HermesStateError:
    """The HermesStateError for an OSError of `action` ("write", "read", "create the folder") on `path`."""
    where = path if path is not None else exc.filename
    reason = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno or 0, "check the path and its permissions, then run again")
    return HermesStateError(f"cannot {action} {where}: {reason}", path=str(where), hint=hint)


@contextlib.contextmanager
def mapped(action: str, path: object) -> Iterator[None]:
    """Turn an OSError inside the block into `state_error(exc, action, path)`."""
    try:
        yield
    except OSError as exc:
        raise state_error(exc, action, path) from exc


def read_bounded(path: Path, limit: int = MAX_STATE_BYTES) -> bytes | None:
    """A file of the home: its bytes, None when it does not exist; a HermesStateError when it is
    not a regular file, is over `limit`, or cannot be read (never blocks on a FIFO)."""
    try:
        return bounded.read_or_none(path, limit)
    except OSError as exc:
        raise state_error(exc, "read", path) from exc


def read_json(path: Path, what: str, hint: str, limit: int = MAX_STATE_BYTES) -> Any:
    """The JSON document in a file of the home (None when there is none): read as `read_bounded`
    does; a HermesStateError naming `what` and saying `hint` when it does not parse."""
    raw = read_bounded(path, limit)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except ValueError as exc:
        raise HermesStateError(f"cannot read {what} {path}: {exc}", path=str(path), hint=hint) from exc
    del raw  # the bytes go before the parse: a 41 MB inventory is not held three times over
    return homebounds.parse_json(text, str(path), what, hint, walk=False)


def remove(path: Path) -> bool:
    """Remove a file if it is there (True if it was); other errors mapped. The name is removed
    from its folder as opened and checked (`pinned`): a link on the way is never followed out."""
    path = Path(path)
    try:
        with _folder(path) as folder_fd:
            os.unlink(path.name, dir_fd=folder_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise state_error(exc, "remove", path) from exc
    return True


def make_dirs(path: Path, mode: int = 0o777) -> None:
    """`mkdir -p` with the error mapped (a read-only home, a file in the way...).

    Under a fenced home each folder is made and opened relative to its parent's descriptor
    (mkdirat, openat with O_NOFOLLOW): a link on the way is followed only where a write would
    follow it (inside a profile, to a folder of that profile: `_may_follow`); a link planted at
    `profiles/`, at a profile or under `.hermes-fleet/` is refused (ContainmentError)."""
    path = Path(path)
    root = fenced_home(path)
    if root is None or Path(os.path.abspath(path)) == Path(os.path.abspath(root)):
        with mapped("create the folder", path):
            path.mkdir(parents=True, exist_ok=True, mode=mode)
        return
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = path.relative_to(os.path.realpath(root))
    if ".." in rel.parts:
        raise _moved(path)
    with mapped("create the folder", path):
        fd = os.open(os.path.realpath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth in range(1, len(rel.parts) + 1):
            here = rel.parts[:depth]
            inner = _make_one(fd, Path(root).joinpath(*here), here, mode if depth == len(rel.parts) else 0o777)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _make_one(parent_fd: int, path: Path, parts: tuple[str, ...], mode: int) -> int:
    """A descriptor of folder `path` (its last name in `parent_fd`), made if missing."""
    name = path.name
    with mapped("create the folder", path):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=parent_fd)
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if not stat.S_ISLNK(st.st_mode):
                raise
    if not _may_follow(parts):
        raise _moved(path)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent_fd)
    try:
        fence = fence_of(path / "_")
        if fence is not None:
            home.check_inside_real(_where(fd, path), path, *fence)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _may_follow(parts: tuple[str, ...]) -> bool:
    """Whether a link at `parts` (under the home) is one Hermes' own writes go through: a folder
    inside a profile (`profiles/<name>/...`) or a root-profile folder; never `profiles/`, a
    profile itself, or anything of `.hermes-fleet/`."""
    if parts[0] == home.STATE_DIR:
        return False
    if parts[0] == home.PROFILES_DIR:
        return len(parts) >= 3
    return True


def write_no_follow(folder: Path, rel: str, data: bytes) -> Path:
    """Write `folder/rel` without following a link: each folder below `folder` is opened with
    O_NOFOLLOW (made when missing), the bytes go to a new temp file beside the target, which
    then replaces the target's name; a target that is a link (a bots/alpha.yaml planted as a link
    to ~/.bashrc) is refused, never written through (export writes a user's folder this way). Any
    other OSError (a read-only folder, a full disk) is a HermesStateError naming the file."""
    *dirs, name = rel.split("/")
    with mapped("write", folder / rel):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)  # the folder named on the command line itself
        try:
            for part in dirs:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                fd = _reopen(fd, part, folder / rel)
            _replace_no_follow(fd, name, data, folder / rel)
        finally:
            os.close(fd)
    return folder / rel


def _reopen(fd: int, part: str, target: Path) -> int:
    """The folder `part` inside `fd` (which is closed once it is open; left to the caller on an error)."""
    try:
        inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        raise _link_refused(target, f"{part!r} on its way is a link or not a folder") from exc
    os.close(fd)
    return inner


def _replace_no_follow(fd: int, name: str, data: bytes, target: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise _link_refused(target, "it is a link")
    tmp = f".{name}.{os.getpid()}.tmp"
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd)
    try:
        with os.fdopen(out, "wb") as handle:
            handle.write(data)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)  # replaces a name, never writes through one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise


def _link_refused(target: Path, why: str) -> ContainmentError:
    return ContainmentError(
        f"export refuses to write {target}: {why}; export never writes through a link",
        path=str(target),
        hint="remove the link (or export to an empty folder)",
    )


# Called with the target path just before each os.replace / rename that publishes a change.
# Tests append a hook that raises (or os._exit) at the Nth call.
WRITE_HOOKS: list[Callable[[Path], None]] = []


def run_write_hooks(path: Path) -> None:
    for hook in WRITE_HOOKS:
        hook(path)


# Inside `grouped()`: the folders whose fsync is deferred to the end of the block, by (device,
# inode) -> an open descriptor (a staging folder renamed into place meanwhile is still the same one).
_GROUP: ContextVar[dict[tuple[int, int], int] | None] = ContextVar("fsio_group", default=None)


# Inside `deferred()`: no fsync at all; the caller syncs the whole file system once before it
# publishes what it wrote (a new profile, built in its staging folder: `sync_filesystem`).
_DEFERRED: ContextVar[bool] = ContextVar("fsio_deferred", default=False)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Skip every file and folder fsync in the block. Only for writes nobody can see yet (a
    staging folder): the caller must call `sync_filesystem` before it makes them visible."""
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


def is_deferred() -> bool:
    """Inside `deferred()`: the writes go into a folder nobody can see yet (a staging folder)."""
    return _DEFERRED.get()


def sync_file(fd: int) -> None:
    """fsync an open file, unless inside `deferred()`."""
    if not _DEFERRED.get():
        os.fsync(fd)


def sync_filesystem(path: Path) -> None:
    """Make everything written so far on the file system holding `path` durable, in one call.

    Linux `syncfs(2)`: one journal commit for all of a new profile's files instead of one fsync
    (and commit) per file. Where the C library has no syncfs, every file and folder below `path`
    is fsynced instead. Errors are mapped (state_error): nothing may be published unsynced.
    """
    with mapped("sync", path):
        fd = os.open(path, os.O_RDONLY)
        try:
            if _syncfs(fd):
                return
        finally:
            os.close(fd)
        for top, _, names in os.walk(path):  # never follows a link to a folder
            for name in [*names, "."]:
                target = os.path.join(top, name)
                if not stat.S_ISREG(os.lstat(target).st_mode) and name != ".":
                    continue  # a link (its target is not ours to sync), a FIFO, a device
                fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)


def _syncfs(fd: int) -> bool:
    """syncfs(fd); False when this C library has none. An error is raised as OSError."""
    call = _libc_call("syncfs")
    if call is None:
        return False
    if call(fd) != 0:
        raise _c_error()
    return True


@functools.cache
def _libc_call(name: str) -> Any:
    """A function of the C library by name (None when it has none), looked up once. ctypes is
    imported lazily: only a run that creates a profile or guards a write needs it."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None, use_errno=True), name)
    except (AttributeError, OSError):
        return None


def _c_error(path: object = None) -> OSError:
    import ctypes

    err = ctypes.get_errno()
    return OSError(err, os.strerror(err), *([str(path)] if path is not None else []))


def fsync_dir(folder: Path) -> None:
    """Make the names in `folder` durable (a rename into it); inside `grouped()`, at its end."""
    if _DEFERRED.get():
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        group = _GROUP.get()
        if group is not None:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) in group:
                os.close(fd)
            else:
                if len(group) >= GROUP_MAX_FOLDERS:
                    _sync_group(group)  # never hold more descriptors than this
                group[(st.st_dev, st.st_ino)] = fd
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


GROUP_MAX_FOLDERS = 256  # open folder descriptors a group holds at most; then it syncs them early


@contextlib.contextmanager
def grouped() -> Iterator[None]:
    """Group the folder fsyncs of the writes in the block (the bots of one apply): each file is
    still synced before its rename (so it is old or new, never torn), and each folder once when
    the block ends (or when it holds GROUP_MAX_FOLDERS), even on an error. A kill in the block
    loses nothing a per-write folder fsync would keep (the renames are done either way); only a
    power cut can undo some of the block's renames, each file then back at its old, whole
    version. Nested blocks join the outermost."""
    if _GROUP.get() is not None:
        yield
        return
    group: dict[tuple[int, int], int] = {}
    token = _GROUP.set(group)
    try:
        yield
    finally:
        _GROUP.reset(token)
        _sync_group(group)


def sync_group_now() -> None:
    """Inside `grouped()`: sync the folders it holds now (what must be durable before the next
    write, e.g. a profile's move before the inventory records it)."""
    group = _GROUP.get()
    if group is not None:
        _sync_group(group)


def _sync_group(group: dict[tuple[int, int], int]) -> None:
    for fd in group.values():
        with contextlib.suppress(OSError):
            os.fsync(fd)
        os.close(fd)
    group.clear()


# --- the fence: where a write may land ----------------------------------------------------------
#
# `home.check_profile` refuses a link that leads out of a profile before a run writes; a link
# planted after that check and before the write (by whoever can write the profile) must not move
# the write either. So every write and removal goes through a descriptor of its folder (`pinned`):
# the folder is opened once, where it really is is checked against the fence of the home being
# written (the profile's own real folder, `.hermes-fleet/`, or the root minus both), and the temp
# file, the rename and the unlink are all relative to that descriptor (openat, renameat). Just
# before the rename the path is looked at again (`recheck`): a folder swapped for a link, or a link
# planted at the file's name, refuses the write. Whatever lands after that recheck still lands in
# the folder that was checked: a rename replaces a link at its name, it never follows it.

_FENCES: list[Path] = []  # the homes being written (module state: a worker thread is fenced too)


@contextlib.contextmanager
def fenced(root: Path) -> Iterator[None]:
    """Fence every write and removal under `root` in the block (locking.apply_lock: the run that
    holds a home's apply lock)."""
    _FENCES.append(Path(os.path.abspath(root)))
    try:
        yield
    finally:
        _FENCES.pop()


def fenced_home(path: Path) -> Path | None:
    """The fenced home `path` is in (as it was named), or None."""
    for root in reversed(_FENCES):
        if Path(path).is_relative_to(root) or Path(path).is_relative_to(os.path.realpath(root)):
            return root
    return None


def fence_of(path: Path) -> tuple[Path, tuple[Path, ...], str] | None:
    """(the real folder a write at `path` must stay in, real folders in it that are not its own,
    whose it is), by where `path` is in a fenced home; None outside every fenced home."""
    for root in reversed(_FENCES):
        if not Path(path).is_relative_to(root):
            continue
        parts = Path(path).relative_to(root).parts
        if ".." in parts:
            raise ContainmentError(
                f"{path} climbs out of its folder ('..'); hermes-fleet writes only at the names it makes",
                path=str(path),
                hint="an inventory or backup record names a path that is no profile: move that record away",
            )
        if parts[:1] == (home.PROFILES_DIR,) and len(parts) > 2:
            own, foreign = home.profile_fence(root, parts[1])
            return own, foreign, f"profile {parts[1]!r}"
        if parts[:1] in ((home.PROFILES_DIR,), (home.STATE_DIR,)):
            return Path(os.path.realpath(root / parts[0])), (), f"{parts[0]}/ of the home"
        own, foreign = home.profile_fence(root, DEFAULT_PROFILE)
        return own, foreign, "the root profile"
    return None


@contextlib.contextmanager
def _folder(path: Path) -> Iterator[int]:
    """A descriptor of `path`'s folder, checked against the fence (ContainmentError)."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fence = fence_of(path)
        if fence is not None:
            home.check_inside_real(_where(fd, path.parent), path.parent, *fence)
        yield fd
    finally:
        os.close(fd)


def _where(fd: int, lexical: Path) -> Path:
    """Where the folder open at `fd` really is (Linux: its /proc link; else the real path of
    `lexical`, which must still be that folder)."""
    with contextlib.suppress(OSError):
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    real = Path(os.path.realpath(lexical))
    if not _same(os.stat(real), os.fstat(fd)):
        raise _moved(lexical)
    return real


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def moved(path: Path) -> ContainmentError:
    """The error of a file or folder found changed for a link between its check and its use."""
    return _moved(path)


def _moved(path: Path) -> ContainmentError:
    return ContainmentError(
        f"{path} changed while hermes-fleet was writing it (a symlink or another folder was put in "
        "its place); nothing was written there",
        path=str(path),
        hint="find out who changes the profile (a bot's own tools?), then run again",
    )


def open_folder(path: Path, within: Path) -> int:
    """A descriptor of folder `path`, opened one name at a time from `within` (the home, as the user
    named it: the only link followed) with O_NOFOLLOW | O_DIRECTORY. A folder on the way swapped for a
    link after it was checked is refused (ContainmentError), and what is opened through the
    descriptor (`/proc/self/fd/<fd>/<name>`) is in the folder that was checked, wherever it is moved
    afterwards. The caller closes it."""
    path, within = Path(path), Path(within)
    base = Path(os.path.realpath(within))
    try:
        rel = path.relative_to(within)
    except ValueError:
        rel = path.relative_to(base)  # a real path (`in_place`): relative to the real home
    if ".." in rel.parts:
        raise _moved(path)
    with mapped("open the folder", path):
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.parts:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a link (or a file) where the folder was
            raise _moved(path) from None
        raise state_error(exc, "open the folder", path) from exc
    return fd


def folder_location(fd: int, lexical: Path) -> Path:
    """Where the folder open at `fd` is now (see `_where`)."""
    return _where(fd, lexical)


MAX_LINK_HOPS = 8  # a link to a link to ...: Linux follows 40; Hermes' files need one at most


@contextlib.contextmanager
def pinned(path: Path) -> Iterator[tuple[int, Path, os.stat_result | None]]:
    """(the descriptor of the folder the write goes into, the file's path there, its lstat or
    None when there is none yet). A symlink at the file's name is followed, as Hermes follows it,
    when its target stays inside the fence (`home.check_profile` has said so; this checks again);
    ContainmentError when it or the folder leads out of it."""
    path = Path(path)
    for _ in range(MAX_LINK_HOPS):
        with _folder(path) as folder_fd:
            try:
                st: os.stat_result | None = os.stat(path.name, dir_fd=folder_fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is None or not stat.S_ISLNK(st.st_mode):
                yield folder_fd, path, st
                return
            target = Path(os.path.realpath(path))  # a dangling link: the target file is created
            fence = fence_of(path)
            if fence is not None:
                home.check_inside_real(target, path, *fence)
        path = target
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))


def in_place(path: Path, sidecars: tuple[str, ...] = ()) -> Path:
    """Where a writer that changes a file in place (SQLite and its `-wal`/`-shm` sidecars, named
    `path` + suffix) may open `path`: its real location, checked against the fence as `pinned`
    checks a replace. ContainmentError when it, or a sidecar, is a hard link (more than one name:
    the same file may be another profile's, and a write in place would change it there too). A
    link planted at its name afterwards: the caller opens the returned real path, with no link."""
    with pinned(path) as (folder_fd, real, st):
        where = _where(folder_fd, real.parent) / real.name
        for name in (real.name, *(real.name + suffix for suffix in sidecars)):
            try:
                found = st if name == real.name else os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if found is not None and not stat.S_ISDIR(found.st_mode) and found.st_nlink > 1:
                raise ContainmentError(
                    f"{real.parent / name} has {found.st_nlink} names (a hard link): the same file may be "
                    "another profile's, and hermes-fleet never writes such a file in place",
                    path=str(real.parent / name),
                    hint="give the profile its own copy (cp the file, then mv the copy over the link), then run again",
                )
        return where


def recheck(folder_fd: int, path: Path, st: os.stat_result | None) -> None:
    """Right before the rename: `path`'s folder is still the one open at `folder_fd`, and no link
    has been put at its name (ContainmentError otherwise: nothing is published)."""
    try:
        again = os.stat(path.parent)
    except OSError:
        raise _moved(path.parent) from None
    if not _same(again, os.fstat(folder_fd)):
        raise _moved(path.parent)
    with contextlib.suppress(FileNotFoundError):
        now = os.stat(path.name, dir_fd=folder_fd, follow_symlinks=False)
        if stat.S_ISLNK(now.st_mode):
            raise _moved(path)


def _sync_folder_fd(folder_fd: int) -> None:
    """fsync_dir for a folder open at `folder_fd` (the descriptor stays the caller's)."""
    if _DEFERRED.get():
        return
    group = _GROUP.get()
    if group is None:
        with contextlib.suppress(OSError):
            os.fsync(folder_fd)
        return
    st = os.fstat(folder_fd)
    if (st.st_dev, st.st_ino) not in group:
        if len(group) >= GROUP_MAX_FOLDERS:
            _sync_group(group)
        group[(st.st_dev, st.st_ino)] = os.dup(folder_fd)


UNCHECKED = object()  # `expect` default: replace whatever is there


def retrying(write: Callable[[], None], *, attempts: int = 3) -> None:
    """Run a read-modify-write until it lands on an unchanged file (Hermes' own writers of
    config.yaml, .env and profile.yaml take no lock); the last ChangedUnderUs propagates."""
    for attempt in range(attempts):
        try:
            write()
            return
        except ChangedUnderUs:
            if attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def atomic_write_bytes(
    path: Path,
    data: bytes | Iterable[bytes],
    *,
    mode: int = 0o644,
    expect: object = UNCHECKED,
    via_temp: bool = False,
    private: bool = False,
) -> None:
    """Replace `path` with `data` atomically (`data` may be an iterable of chunks, written as they
    are made: a 40 MB inventory never exists whole in memory).

    An existing file keeps its mode and owner; a new file gets `mode` (0600 for secrets) from the
    moment it exists, never wider. A symlink is written through to its target, as Hermes does; the
    caller has checked that it stays inside what it owns (adapters.home.check_profile), and inside a
    fenced home the write checks it again and goes through its folder's descriptor (`pinned`,
    `recheck`: a link planted meanwhile is refused, never followed). A folder, a FIFO
    or a device at `path` is refused, and every OSError becomes a HermesStateError (`state_error`).
    With `expect` (the bytes we read, or None for "did not exist"), the new file goes in only if
    the file still holds them at the moment of the replace (`_replace_if_unchanged`: compare, then
    swap and check what came out); else ChangedUnderUs is raised and the caller reads again and
    retries. Hermes' own writers take no lock: one that read before our write and replaces after
    can still put its stale copy over ours (the next apply restores ours); none is lost under ours.

    Inside `deferred()` (a staging folder nobody can see), a file that does not exist yet is
    created in place: no temp file, no rename (a third of the cost); the folder is synced whole and
    published with one rename, and a kill in between leaves only the staging folder, which the
    next run sweeps. `via_temp=True` keeps the temp file and rename there too, for a file with
    run-specific bytes (time stamps, fresh ids): its complete bytes then exist under a temp name
    just before it gets its own (the write hook), which is how the crash tests prove that a
    published file holds bytes this run wrote in full (docs/reliability.md#new-profiles).

    `private=True` (a file of secrets): an existing file's mode loses every bit for others (a
    hand-made 0644 `.env` becomes 0640; Hermes' own `_secure_file` makes it 0600).
    """
    try:
        if _DEFERRED.get() and not via_temp and expect in (UNCHECKED, None) and _create_new(Path(path), data, mode):
            return
        _atomic_write(Path(path), data, mode=mode, expect=expect, private=private)
    except OSError as exc:
        raise state_error(exc, "write", path) from exc


def _create_new(path: Path, data: bytes | Iterable[bytes], mode: int) -> bool:
    """Create `path` with `data` in place; False when something is there already (the caller then
    takes the temp-file path, which handles links and refuses non-files)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o777)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, mode & 0o777)  # not narrowed by the umask: what the temp-file path gives
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                handle.writelines(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    return True


def _atomic_write(path: Path, data: bytes | Iterable[bytes], *, mode: int, expect: object, private: bool = False) -> None:
    with pinned(path) as (folder_fd, path, st):
        name = path.name
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise NotRegular(path, bounded.kind_of(st.st_mode))
        final_mode = stat.S_IMODE(st.st_mode) if st else mode
        if private:
            final_mode &= ~0o007
        fd, tmp = _temp_file(folder_fd, name)
        try:
            os.fchmod(fd, final_mode & 0o777)
            if st is not None and os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
            with os.fdopen(fd, "wb") as handle:
                if isinstance(data, bytes):
                    handle.write(data)
                else:
                    handle.writelines(data)  # written as made: the whole text never exists at once
                handle.flush()
                sync_file(handle.fileno())
            run_write_hooks(path)
            recheck(folder_fd, path, st)
            if expect is UNCHECKED:
                os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
            else:
                _replace_if_unchanged(folder_fd, tmp, path, expect)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder_fd)
            raise
        _sync_folder_fd(folder_fd)


def _replace_if_unchanged(folder_fd: int, tmp: str, path: Path, expect: object) -> None:
    """Replace `path` by `tmp` (both names in `folder_fd`) only if `path` holds `expect` (bytes;
    None: no file) at the very moment of the replace, else ChangedUnderUs (the caller reads again
    and retries).

    Comparing first and replacing after leaves a moment in which another writer's replace (Hermes'
    `config set` takes no lock) would be lost under ours. Linux `renameat2(RENAME_EXCHANGE)` swaps
    the two names in one step: what comes out at `tmp` is what `path` held at that instant; if it
    is not `expect`, the swap is undone (their file back in place) and nothing of theirs is lost.
    A new file is published with RENAME_NOREPLACE (EEXIST: someone made it first). Where the
    system has no renameat2, or the file system refuses the flag, it compares and replaces.
    """
    name = path.name
    if bounded.read_or_none(path, MAX_STATE_BYTES) != expect:
        raise ChangedUnderUs(path)
    if expect is None:
        try:
            if _rename2(folder_fd, tmp, name, _RENAME_NOREPLACE):
                return
        except FileExistsError:
            raise ChangedUnderUs(path) from None
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        return
    if not _rename2(folder_fd, tmp, name, _RENAME_EXCHANGE):
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        return
    if bounded.read_or_none(path.parent / tmp, MAX_STATE_BYTES) == expect:
        os.unlink(tmp, dir_fd=folder_fd)  # the old version
        return
    _rename2(folder_fd, tmp, name, _RENAME_EXCHANGE)  # another writer got in between: theirs goes back
    raise ChangedUnderUs(path)


_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _rename2(folder_fd: int, old: str, new: str, flags: int, *, to_fd: int | None = None) -> bool:
    """renameat2(folder_fd, old, to_fd or folder_fd, new, flags); False when the system or the file
    system cannot (ENOSYS, EINVAL: the caller falls back). Other errors are raised as OSError."""
    call = _libc_call("renameat2")
    if call is None:
        return False
    if call(folder_fd, os.fsencode(old), folder_fd if to_fd is None else to_fd, os.fsencode(new), flags) == 0:
        return True
    error = _c_error(new)
    if error.errno in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise error


def _temp_file(folder_fd: int, name: str) -> tuple[int, str]:
    """A new, empty, private temp file beside the target, in the folder `folder_fd`:
    `.<name>.hf<pid>.<random>.tmp` (the shape sweep_temp_files proves is ours); (its descriptor,
    its name). What tempfile.mkstemp does, without its per-character random name loop (a third of
    an atomic write's own time)."""
    for _ in range(100):
        tmp = f".{name}.hf{os.getpid()}.{secrets.token_hex(6)}.tmp"
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
            return os.open(tmp, flags, 0o600, dir_fd=folder_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name", name)


def read_or_none(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist (what `expect` compares against)."""
    return read_bounded(path)


def atomic_write_text(
    path: Path, text: str, *, mode: int = 0o644, expect: object = UNCHECKED, via_temp: bool = False, private: bool = False
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, expect=expect, via_temp=via_temp, private=private)


def publish_dir(staging: Path, final: Path) -> None:
    """Publish a fully built directory with one rename (a half-built profile is never visible).

    The rename is relative to descriptors of both parent folders, opened and checked against the
    fence (`_folder`); `staging` must be a real folder (a link put in its place is never moved into
    place), nothing may be at `final` (RENAME_NOREPLACE), and just before the rename both parents
    are looked at again (`recheck`). What was moved is checked to be the folder that was looked at;
    if a link was swapped in at that instant it is moved back. ConflictError when something
    appeared at `final` meanwhile; ContainmentError for a link; HermesStateError otherwise.
    """
    staging, final = Path(staging), Path(final)
    try:
        with _folder(staging) as src_fd, _folder(final) as dst_fd:
            source = _real_folder_at(src_fd, staging)
            run_write_hooks(final)
            recheck(src_fd, staging, source)
            recheck(dst_fd, final, None)
            _rename_no_replace(src_fd, staging.name, dst_fd, final.name)
            moved = os.stat(final.name, dir_fd=dst_fd, follow_symlinks=False)
            if not _same(moved, source):  # a link swapped in between the look and the rename
                with contextlib.suppress(OSError):
                    os.rename(final.name, staging.name, src_dir_fd=dst_fd, dst_dir_fd=src_fd)
                raise _moved(staging)
            _sync_folder_fd(dst_fd)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise ConflictError(f"{final} appeared while hermes-fleet was creating it", hint="run apply again") from exc
        raise state_error(exc, "move into place", final) from exc


def _real_folder_at(folder_fd: int, path: Path) -> os.stat_result:
    """The lstat of `path` in the folder open at `folder_fd`: a real folder (ContainmentError for a
    link: it would be moved into place instead of the folder)."""
    st = os.stat(path.name, dir_fd=folder_fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        raise _moved(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
    return st


def _rename_no_replace(src_fd: int, old: str, dst_fd: int, new: str) -> None:
    """Rename `old` (in `src_fd`) to `new` (in `dst_fd`), never over something there (EEXIST)."""
    if _rename2(src_fd, old, new, _RENAME_NOREPLACE, to_fd=dst_fd):
        return
    try:  # no renameat2: look, then rename (an empty folder that appeared meanwhile would be replaced)
        os.stat(new, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(old, new, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), new)


# --- leftovers of a killed run ---------------------------------------------------------------


def dead_pid(pid: int) -> bool:
    """True when no process has this id, or it is this very process (a leftover can only be a
    dead run's then: the caller sweeps under the apply lock before it writes anything)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: alive, another user's
        return False
    return False


def sweep_temp_files(folder: Path) -> list[Path]:
    """Remove this tool's temp files (`.<name>.hf<pid>.<random>.tmp`) left in `folder` by a dead
    process (SIGKILL, power loss); a live writer's are kept, anything else is never touched."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed  # missing or unreadable: nothing of ours to prove
    for entry in entries:
        match = TEMP_RE.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False) or not dead_pid(int(match.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError), mapped("remove the leftover", entry.path):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed
