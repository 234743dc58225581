"""The apply lock: one writer per Hermes home at a time.

An exclusive `flock` on `<root>/.hermes-fleet/apply.lock`, polled until a timeout, after which
the second apply exits 3 (conflict) naming the holder. The kernel drops the lock if the holder
dies, so a crash never leaves a stale lock behind. A home where the lock cannot be made (read-only,
permission denied, a folder in the way) is a HermesStateError naming the path and the fix.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from controller import bounded
from controller.adapters import fsio
from controller.adapters.home import HomeLayout, check_state_path
from controller.errors import ControllerError, LockHeld

POLL_SECONDS = 0.1


@contextlib.contextmanager
def apply_lock(root: Path, *, timeout: float, purpose: str = "apply") -> Iterator[None]:
    path = HomeLayout(root).state.apply_lock
    fd = open_lock_file(root, path)
    try:
        flock_within(
            fd,
            path,
            timeout,
            lambda: LockHeld(
                f"another hermes-fleet run holds the lock on {root} ({_holder(path)})",
                hint="wait for it to finish, or raise --lock-timeout",
            ),
        )
        with fsio.mapped("write the lock file", path):
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps({"pid": os.getpid(), "purpose": purpose, "since": time.time()}).encode())
        with fsio.fenced(root):  # every write of the run through a checked folder descriptor
            yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def flock_within(
    fd: int, path: Path, timeout: float, timed_out: Callable[[], ControllerError], poll: float = POLL_SECONDS
) -> None:
    """Take an exclusive flock on `fd`, polling for up to `timeout` seconds; then raise `timed_out()`.
    A file system without locks (ENOLCK) or another OSError is a HermesStateError naming `path`."""
    deadline = time.monotonic() + max(timeout, 0.0)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise timed_out() from None
            time.sleep(poll)
        except OSError as exc:
            raise fsio.state_error(exc, "lock", path) from exc


def open_lock_file(root: Path, path: Path) -> int:
    """Create `.hermes-fleet/` (0700) and open a lock file in it (0600), refusing symlinks on the way
    and mapping every OSError (a read-only home, permission denied, a folder in the way)."""
    check_state_path(root, path)
    fsio.make_dirs(path.parent, mode=0o700)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise fsio.state_error(exc, "open the lock file", path) from exc


def _holder(path: Path) -> str:
    try:
        data = json.loads(bounded.read_bytes(path, 4096) or b"{}")
        return f"pid {data.get('pid')}, {data.get('purpose')}"
    except (OSError, ValueError, AttributeError):
        return "holder unknown"


PROC_LOCKS = Path("/proc/locks")
PROC_LOCKS_LIMIT = 4 * 1024 * 1024


def is_held(path: Path) -> bool | None:
    """Whether some process holds a flock on `path`, read from Linux's /proc/locks without taking
    the lock (a momentary probe would make a starting reconciler exit); None when that cannot be
    told (no /proc/locks). A missing file is not held."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open(PROC_LOCKS, "rb") as handle:
            text = handle.read(PROC_LOCKS_LIMIT).decode("ascii", errors="replace")
    except OSError:
        return None
    return any(len(f) > 5 and f[1] == "FLOCK" and f[5] == device for f in (line.split() for line in text.splitlines()))
