"""`locking.is_held`: whether a process holds a flock, read from /proc/locks without taking it
(status must never make a starting reconciler exit)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from controller.adapters import locking


@pytest.mark.skipif(not locking.PROC_LOCKS.exists(), reason="needs Linux /proc/locks")
def test_a_held_lock_is_seen_and_a_free_or_missing_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "watch.lock"
    assert locking.is_held(path) is False
    path.write_text("123")
    assert locking.is_held(path) is False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert locking.is_held(path) is True
        other = tmp_path / "other.lock"
        other.write_text("")
        assert locking.is_held(other) is False  # another file on the same device
    finally:
        os.close(fd)
    assert locking.is_held(path) is False


def test_without_proc_locks_it_cannot_tell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "watch.lock"
    path.write_text("")
    monkeypatch.setattr(locking, "PROC_LOCKS", tmp_path / "no-such-file")
    assert locking.is_held(path) is None
