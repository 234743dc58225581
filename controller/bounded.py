"""Bounded reads of regular files: the one way hermes-fleet reads a file someone else supplied.

Manifests, the files they name (`soul_file`, images, `from_file` secrets) and every file of the
Hermes home are read here. The file is opened without blocking (a FIFO would hang a plain
`open()`), checked with `fstat` to be a regular file (not a FIFO, device, socket or folder) and no
larger than the caller's limit *before* a byte is read, and then read up to that limit only (a
file that grows meanwhile is still refused). Failures are OSErrors, so each caller maps them once
onto its own error (a diagnostic, HermesStateError, SecretUnavailable); `TooLarge` and
`NotRegular` say which bound was hit.
"""

from __future__ import annotations

import os
import stat

from controller.errors import NotRegular, TooLarge

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """'a FIFO (named pipe)', 'a folder', ... for a stat mode; 'a regular file' for one."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file")


def read_bytes(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole file, if it is a regular file of at most `limit` bytes; else TooLarge / NotRegular.

    Symlinks are followed (callers that must not follow one check for it first). Any other
    OSError (missing, permission denied, I/O error) propagates as it is.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(path, kind_of(st.st_mode))
        if st.st_size > limit:
            raise TooLarge(path, st.st_size, limit)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew after the fstat
            raise TooLarge(path, len(data), limit)
        return data
    finally:
        os.close(fd)


def read_or_none(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """Like `read_bytes`, but None when the file does not exist."""
    try:
        return read_bytes(path, limit)
    except FileNotFoundError:
        return None
