"""A profile's Hermes cron store (`cron/jobs.json`), read and written under Hermes' own lock.

Protocol (docs/hermes/cron.md#store-and-lock, cron/jobs.py in hermes-agent 0.19.0): every
read-modify-write holds an exclusive `flock` on `cron/.jobs.lock`; the file is
`{"jobs": [...], "updated_at": ...}`, written atomically, mode 0600 in a 0700 folder. Hermes'
scheduler rewrites it every 60 s, so we always re-read inside the lock and change only our jobs.
A store that does not parse is reported and never overwritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from controller.adapters import fsio, homebounds
from controller.adapters.home import ProfileLayout
from controller.adapters.locking import flock_within
from controller.errors import ConflictError, HermesStateError

LOCK_TIMEOUT = 30.0  # Hermes itself waits this long for .jobs.lock
POLL = 0.05


def jobs_path(profile_dir: Path) -> Path:
    return ProfileLayout(profile_dir).jobs


def read_jobs(profile_dir: Path) -> list[dict[str, Any]] | None:
    """The jobs of a profile's store; None when the store does not exist yet."""
    path = jobs_path(profile_dir)
    data = fsio.read_bounded(path, homebounds.JOBS_BYTES)  # a FIFO or a huge file: a clear HermesStateError
    if data is None:
        return None
    try:
        text = data.decode("utf-8-sig")  # Hermes tolerates a BOM too
    except UnicodeDecodeError as exc:
        raise HermesStateError(f"cannot read {path}: {exc}", path=str(path)) from exc
    # strict=False: Hermes' own fallback accepts raw control characters.
    data = homebounds.parse_json(text, str(path), "the cron store", _UNPARSEABLE, strict=False)
    if isinstance(data, list):
        return [j for j in data if isinstance(j, dict)]
    if isinstance(data, dict) and isinstance(data.get("jobs", []), list):
        return [j for j in data.get("jobs", []) if isinstance(j, dict)]
    raise HermesStateError(f"{path} does not hold {{'jobs': [...]}}", path=str(path), hint=_UNPARSEABLE)


_UNPARSEABLE = "fix or remove it; hermes-fleet never overwrites a cron store it cannot parse"


@contextlib.contextmanager
def locked(profile_dir: Path, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    layout = ProfileLayout(profile_dir)
    cron, lock = layout.cron, layout.jobs_lock
    fsio.make_dirs(cron)
    with contextlib.suppress(OSError):
        os.chmod(cron, 0o700)
    try:
        handle = open(lock, "a+", encoding="utf-8")  # noqa: SIM115 - closed by `with` below
    except OSError as exc:
        raise fsio.state_error(exc, "open the cron lock", lock) from exc
    with handle:
        flock_within(
            handle.fileno(),
            lock,
            timeout,
            lambda: ConflictError(
                f"{lock} is held by another writer for over {timeout:.0f} s",
                hint="a Hermes process may be stuck; try again later",
            ),
            poll=POLL,
        )
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def update(profile_dir: Path, mutate: Callable[[list[dict[str, Any]]], bool], *, now: datetime) -> None:
    """Read-modify-write under the lock; `mutate` edits the list in place and says if it changed."""
    with locked(profile_dir):
        jobs = read_jobs(profile_dir) or []
        if not mutate(jobs):
            return
        payload = dumps_indented({"jobs": jobs, "updated_at": now.isoformat()})
        # Through a temp file even in a staging folder: fresh job ids and times make the bytes
        # run-specific (fsio.atomic_write_bytes).
        fsio.atomic_write_text(jobs_path(profile_dir), payload, mode=0o600, via_temp=True)
        with contextlib.suppress(OSError):
            os.chmod(jobs_path(profile_dir), 0o600)


def dumps_indented(data: Any) -> str:
    """`json.dumps(data, indent=2, ensure_ascii=False)`, the text hermes-fleet writes a cron store
    in (Hermes' own writer escapes non-ASCII; both read back the same, docs/hermes/cron.md), three
    times faster: with an indent, the json module takes its pure-Python encoder (a generator per
    level); this builds the same text with the C string encoder. Anything but JSON's own
    types (str keys, str, int, float, bool, None, dict, list) goes to json.dumps itself.
    `tests/adapters/test_cronstore_json.py` compares the two over generated documents."""
    out: list[str] = []
    try:
        _encode(data, "\n", out)
    except _NotPlain:
        return json.dumps(data, indent=2, ensure_ascii=False)
    return "".join(out)


class _NotPlain(Exception):
    pass


def _encode(value: Any, newline: str, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(_encode_str(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:
        out.append(json.dumps(value))  # repr, or NaN / Infinity as json writes them
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        first = True
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out.append(("{" if first else ",") + inner + _encode_str(key) + ": ")
            first = False
            _encode(item, inner, out)
        out.append(newline + "}")
    elif kind is list:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        for index, item in enumerate(value):
            out.append(("[" if index == 0 else ",") + inner)
            _encode(item, inner, out)
        out.append(newline + "]")
    else:
        raise _NotPlain


_encode_str = json.encoder.encode_basestring  # C: the string encoder of ensure_ascii=False
