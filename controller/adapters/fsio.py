"""Atomic, mode-keeping file writes: the one way this package writes a file.

Every write goes: temp file in the same folder -> write -> fsync -> os.replace -> fsync(folder),
so a crash leaves each file either old or new (PRODUCT.md safety rule 5). `WRITE_HOOKS` lets the
fault-injection tests stop a run at the Nth write point.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from controller.errors import ChangedUnderUs

# Called with the target path just before each os.replace / rename that publishes a change.
# Tests append a hook that raises (or os._exit) at the Nth call.
WRITE_HOOKS: list[Callable[[Path], None]] = []


def run_write_hooks(path: Path) -> None:
    for hook in WRITE_HOOKS:
        hook(path)


def fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644, expect: object = UNCHECKED) -> None:
    """Replace `path` with `data` atomically.

    An existing file keeps its mode and owner; a new file gets `mode` (0600 for secrets) from the
    moment it exists, never wider. A symlink is written through to its target, as Hermes does.
    With `expect` (the bytes we read, or None for "did not exist"), the file is compared again
    just before the replace and ChangedUnderUs is raised if another writer got there first; the
    caller reads again and retries. Hermes' own writers take no lock, so this is the best there is.
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    folder = path.parent
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    final_mode = stat.S_IMODE(st.st_mode) if st else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, final_mode & 0o777)
        if st is not None and os.geteuid() == 0:
            with contextlib.suppress(OSError):
                os.fchown(fd, st.st_uid, st.st_gid)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        run_write_hooks(path)
        if expect is not UNCHECKED and read_or_none(path) != expect:
            raise ChangedUnderUs(path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def read_or_none(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist (what `expect` compares against)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644, expect: object = UNCHECKED) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, expect=expect)


def publish_dir(staging: Path, final: Path) -> None:
    """Publish a fully built directory with one rename (a half-built profile is never visible)."""
    run_write_hooks(final)
    os.rename(staging, final)
    fsync_dir(final.parent)
