"""The observation cache: what each observed file of the home held, by its stat key.

`<home>/.hermes-fleet/cache/observed.json` (0600) maps a unit of observation (a profile's files, its
Bot Chat database, its cron store) to the stat keys of the files it reads (device, inode, size,
mtime_ns, ctime_ns; null for a file that is absent) and the facts they gave. A unit whose files all
have their recorded keys is not read again; anything else is read in full:

- a changed key (an edit, a replace, a file that came or went);
- a racy timestamp, as git's racy-clean rule: a file whose mtime or ctime is not older than the
  cache's own write time minus the filesystem's timestamp granularity may have been changed again
  within the same tick, after it was read, without changing its key;
- a symlink among the files (its target can change behind an unchanged link);
- a cache of another version of hermes-fleet, or one that is not a file this module writes (a bot
  can write its own home: the cache is hostile input, read bounded and checked entry by entry).

The cache is a shortcut for reading, never the source of truth for a write: `apply` plans again
under the lock with every file it may change read in full (engine/reconciling.py). It is written by
`apply` (after its writes) and by the `watch` loop, never by `plan` or `status`, which write nothing.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from controller import __version__, bounded
from controller.adapters import configfile, fsio
from controller.adapters.home import HomeLayout, check_state_path

VERSION = 2  # 2: a profile whose owner marker names another profile is never cached
MAX_CACHE_BYTES = 512 * 1024 * 1024  # about 5 KB a bot: 10,000 bots are ~50 MB
COARSE_NS = 2_000_000_000  # whole-second timestamps (FAT keeps even seconds): 2 s
FINE_NS = 20_000_000  # nanosecond timestamps still move by the kernel's clock tick (1-10 ms)

Key = tuple[int, int, int, int, int] | None  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns); None: absent
NO_CACHE_ENV = "HERMES_FLEET_NO_CACHE"  # "1": every verb reads the home in full, as --no-cache


def wanted(use: bool = True) -> bool:
    """Whether a read-only verb should take the cache: not with --no-cache (`use=False`) nor with
    HERMES_FLEET_NO_CACHE=1 (it then reads every file as before, recording nothing)."""
    return use and os.environ.get(NO_CACHE_ENV) != "1"


def cache_path(root: Path) -> Path:
    return HomeLayout(root).state.observation_cache


def stat_keys(paths: Iterable[str]) -> tuple[Key, ...] | None:
    """The stat key of each path (None for an absent one); None when one is a symlink or cannot be
    stat'ed (such a unit is never cached)."""
    keys: list[Key] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            keys.append(None)
            continue
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            return None
        keys.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(keys)


def granularity(written_ns: int) -> int:
    """How far apart two timestamps of the cache's filesystem can be and still be one tick."""
    return COARSE_NS if written_ns % 1_000_000_000 == 0 else FINE_NS


def racy(keys: Sequence[Key], written_ns: int) -> bool:
    """True when one file's mtime or ctime is not older than the cache's write time minus the
    granularity: it may have changed after it was read, in the same tick (git's racy-clean rule)."""
    limit = written_ns - granularity(written_ns)
    return any(k is not None and max(k[3], k[4]) >= limit for k in keys)


class ObservationCache:
    """The units of one home: looked up by `get`, recorded afresh by `put`, written by `save`.

    `use=False` (`--no-cache`) never hits: every unit is read in full (and recorded, so a `watch`
    pass with --no-cache still leaves a cache for the next one)."""

    def __init__(self, root: Path, entries: dict[str, Any] | None = None, written_ns: int = 0, *, use: bool = True) -> None:
        self.root = root
        self.use = use
        self._old: dict[str, Any] = entries or {}
        self._written_ns = written_ns
        self._new: dict[str, tuple[tuple[Key, ...], Any]] = {}
        self.hits = 0
        self.misses = 0
        self.trusted = False  # a watch loop with file events: units of profiles not in `dirty` are not stat'ed
        self.dirty: set[str] = set()
        # The units recorded by earlier rounds of this process, keys as tuples (no JSON round trip).
        self._carried: dict[str, tuple[tuple[Key, ...], Any]] = {}
        # A watch loop's observed profiles, in memory only (never saved: they hold .env values),
        # by (profile, with its Bot Chat); taken as they are while trusted and not dirty.
        self.keep_live = False
        self.live: dict[tuple[str, bool], Any] = {}

    @classmethod
    def load(cls, root: Path, *, use: bool = True) -> ObservationCache:
        """The cache of `root`; an empty one when there is none or it cannot be trusted. With
        `use=False` or HERMES_FLEET_NO_CACHE=1 in the environment, one that never hits."""
        if not use or os.environ.get(NO_CACHE_ENV) == "1":
            return cls(root, use=False)
        entries, written_ns = _read(root)
        return cls(root, entries, written_ns)

    def lookup(self, unit: str, keys_of: Callable[[], tuple[Key, ...] | None]) -> tuple[bool, Any, tuple[Key, ...] | None]:
        """(hit, facts, keys): the facts of `unit` when its files still have the recorded keys and
        none is racy; `keys` (from `keys_of`, taken before any read) for `put` after a miss. A
        trusted unit (a watch loop's, with no file event since it was read) is taken unstat'ed."""
        if not self.use:
            self.misses += 1
            return False, None, keys_of()
        entry = self._new.get(unit)
        carried = entry is None and unit in self._carried
        if carried:
            entry = self._carried[unit]
        if entry is not None and self.trusted and unit.partition(":")[2] not in self.dirty:
            self.hits += 1
            self._new[unit] = entry
            return True, entry[1], entry[0]
        keys = keys_of()
        if keys is None:
            self.misses += 1
            return False, None, None
        if entry is not None and entry[0] == keys and not (carried and racy(keys, self._written_ns)):
            self.hits += 1
            self._new[unit] = entry
            return True, entry[1], keys
        raw = self._old.get(unit)
        if isinstance(raw, list) and len(raw) == 2 and _keys_of(raw[0]) == keys and not racy(keys, self._written_ns):
            self.hits += 1
            self._new[unit] = (keys, raw[1])
            return True, raw[1], keys
        self.misses += 1
        return False, None, keys

    def retain(self, units: Iterable[str]) -> None:
        """Record `units` again as they were, unlooked-up (a watch loop's kept profile): the cache
        written after this round still holds them."""
        for unit in units:
            entry = self._new.get(unit) or self._carried.get(unit)
            if entry is not None:
                self._new[unit] = entry

    def put(self, unit: str, keys: tuple[Key, ...] | None, facts: Any) -> None:
        """Record what `unit` held when its files had `keys` (taken before they were read)."""
        if keys is None:
            self._new.pop(unit, None)
            return
        self._new[unit] = (keys, facts)

    def forget(self, prefix: str = "") -> None:
        """Drop the recorded units whose name starts with `prefix` (a file event: read them again)."""
        for unit in [u for u in self._new if u.startswith(prefix)]:
            del self._new[unit]
        for unit in [u for u in self._old if u.startswith(prefix)]:
            del self._old[unit]
        for unit in [u for u in self._carried if u.startswith(prefix)]:
            del self._carried[unit]
        self.live.clear()

    def reopen(self, written_ns: int | None = None) -> None:
        """A new round of reads begins: what was recorded so far becomes the old entries, checked
        again by key and by the racy rule against `written_ns` (the last save when None; `now`
        after an apply's writes, which may have fallen in the same tick as their read)."""
        self._carried.update(self._new)
        self._new = {}
        self.use = True
        if written_ns is not None:
            self._written_ns = written_ns

    def take(self, other: ObservationCache) -> None:
        """Hold what `other` recorded instead of what this one did (a watch loop's cache, after
        an apply recorded the home afresh)."""
        self._old, self._new, self._written_ns = other._old, other._new, other._written_ns
        self._carried = other._carried
        self.live.clear()  # the apply wrote profiles: observe them again

    def save(self) -> None:
        """Write the units recorded in this run (atomic, 0600). A unit whose facts JSON cannot hold
        exactly (a non-text key, a date), or that shows a sign of a credential (a key named like
        one, a URL with a user or query part: configfile.may_hold_secret), is left out and read in
        full next time."""
        path = cache_path(self.root)
        check_state_path(self.root, path.parent)
        fsio.make_dirs(path.parent, mode=0o700)
        fsio.atomic_write_bytes(path, _render(self._new), mode=0o600)
        try:
            self._written_ns = os.stat(path).st_mtime_ns
        except OSError:
            self._written_ns = 0
        self.misses = 0


def _read(root: Path) -> tuple[dict[str, Any], int]:
    path = cache_path(root)
    try:
        check_state_path(root, path)
        written_ns = os.lstat(path).st_mtime_ns  # before the read: a newer file then only looks racier
        data = json.loads(bounded.read_bytes(path, MAX_CACHE_BYTES))
    except Exception:  # absent, a link, a FIFO, too big, not UTF-8 or not JSON: no cache, read everything
        return {}, 0
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or data.get("hermes_fleet") != __version__
        or not isinstance(data.get("units"), dict)
    ):
        return {}, 0
    return data["units"], written_ns


def _keys_of(raw: Any) -> tuple[Key, ...] | None:
    """The keys as recorded, or None when they are not a list of null / five integers."""
    if not isinstance(raw, list):
        return None
    keys: list[Key] = []
    for item in raw:
        if item is None:
            keys.append(None)
        elif isinstance(item, list) and len(item) == 5 and all(type(n) is int for n in item):
            keys.append((item[0], item[1], item[2], item[3], item[4]))
        else:
            return None
    return tuple(keys)


def exact_json(value: Any) -> bool:
    """True when `value` survives a JSON round trip unchanged (text keys, finite numbers)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(exact_json(v) for v in value)
    if isinstance(value, dict):
        return all(type(k) is str and exact_json(v) for k, v in value.items())
    return False


def _render(units: dict[str, tuple[tuple[Key, ...], Any]]) -> Iterator[bytes]:
    def compact(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")

    yield b'{"hermes_fleet":' + compact(__version__) + b',"version":' + compact(VERSION) + b',"units":{'
    first = True
    for unit in sorted(units):
        keys, facts = units[unit]
        if not exact_json(facts) or configfile.may_hold_secret(facts):
            continue  # read in full next time: no secret is kept in a state file
        yield (b"" if first else b",") + compact(unit) + b":" + compact([[list(k) if k else None for k in keys], facts])
        first = False
    yield b"}}\n"
