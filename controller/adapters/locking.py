"""The apply lock: one writer per Hermes home at a time.

An exclusive `flock` on `<root>/.hermes-fleet/apply.lock`, polled until a timeout, after which
the second apply exits 3 (conflict) naming the holder. The kernel drops the lock if the holder
dies, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

from controller.adapters.home import state_dir
from controller.errors import LockHeld

POLL_SECONDS = 0.1


@contextlib.contextmanager
def apply_lock(root: Path, *, timeout: float, purpose: str = "apply") -> Iterator[None]:
    folder = state_dir(root)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / "apply.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockHeld(
                        f"another hermes-fleet run holds the lock on {root} ({_holder(path)})",
                        hint="wait for it to finish, or raise --lock-timeout",
                    ) from None
                time.sleep(POLL_SECONDS)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "purpose": purpose, "since": time.time()}).encode())
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _holder(path: Path) -> str:
    try:
        data = json.loads(path.read_text() or "{}")
        return f"pid {data.get('pid')}, {data.get('purpose')}"
    except (OSError, ValueError):
        return "holder unknown"
