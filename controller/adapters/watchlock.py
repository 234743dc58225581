"""The reconciler's lifetime lock: one `hermes-fleet watch` per home, whatever its selection (docs/watch.md).

An exclusive, non-blocking `flock` on `<root>/.hermes-fleet/watch.lock` holding the holder's PID;
a second reconciler exits 3 (conflict) at once, naming it. The kernel drops the lock when the
holder dies, and `status` asks `locking.is_held` whether a reconciler still runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from controller.adapters import fsio, locking
from controller.adapters.home import StateLayout, state_dir
from controller.errors import ConflictError

LOCK_FILE = StateLayout.WATCH_LOCK


@contextlib.contextmanager
def reconciler_lock(root: Path) -> Iterator[None]:
    """One reconciler per home for its whole life; a second one exits 3 at once."""
    path = state_dir(root) / LOCK_FILE
    fd = locking.open_lock_file(root, path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise ConflictError(
                f"another hermes-fleet watch is running on {root} (pid {holder})",
                hint="stop it first; two reconcilers on one home would fight (one watch per home, even with disjoint "
                "--bot/-l selections: give that one watch every bot it should converge)",
            ) from None
        with fsio.mapped("write the lock file", path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)
