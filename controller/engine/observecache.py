"""The units of observation the cache (adapters/obscache.py) keeps, and their facts as plain data.

Four units per profile, each with the files whose stat keys decide whether it is read again:

- `profile:<name>`: config.yaml, profile.yaml, SOUL.md, assets/avatar.<ext>, the owner marker. Its
  facts are what observing makes of them; a profile with a read error is never cached. `.env` is
  not among them: it holds secrets, which no state file may hold, so it is read every time (but
  by a watch loop, which keeps an unmarked profile in memory: WatchObservations).
- `fence:<name>`: the profile folder, assets/ and cron/: the containment check found no symlink
  among the entries hermes-fleet writes (a profile with one is checked every time).
- `botchat:<name>`: state.db and its -wal file: whether the profile has a Bot Chat.
- `jobs:<name>`: cron/jobs.json: the cron store's jobs (None: no store).

Facts read back from the cache are checked for their shape; anything else is a miss.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from controller.adapters import filewatch, home, inputtrace, obscache, sessions
from controller.adapters import inventory as inventory_file
from controller.adapters.home import ProfileLayout
from controller.core.types import LiveProfile
from controller.errors import ControllerError
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE

L = ProfileLayout
PROFILE_FILES = (L.CONFIG, L.META, L.SOUL, *(L.avatar_name(e) for e in AVATAR_EXTENSIONS))
_STR_OR_NONE = ("description", "display_name", "soul")


def profile_keys(path: Path) -> tuple[obscache.Key, ...] | None:
    base = f"{path}/"
    return obscache.stat_keys([*(base + f for f in PROFILE_FILES), base + inventory_file.MARKER])


def fence_keys(path: Path) -> tuple[obscache.Key, ...] | None:
    """The folders whose listings the containment check reads (home.check_profile)."""
    base = str(path)
    return obscache.stat_keys([base, f"{base}/{L.ASSETS}", f"{base}/{L.CRON}"])


def no_links(path: Path) -> bool:
    """True when none of the entries hermes-fleet writes in the profile is a symlink: its check
    then depends on the folders' listings alone, which their stat keys cover."""
    wanted: dict[str, set[str]] = {}
    for rel in home.PROFILE_ENTRIES:
        folder, _, leaf = rel.rpartition("/")
        wanted.setdefault(folder, set()).add(leaf)
    for folder, names in wanted.items():
        try:
            with os.scandir(path / folder if folder else path) as listing:
                if any(e.name in names and e.is_symlink() for e in listing):
                    return False
        except OSError:
            continue
    return True


# The entries the containment check looks at (home.PROFILE_ENTRIES) whose kind no lookup of a
# fenced profile lstats already (fence_keys: its folders; profile_keys: the files it reads).
_LINKS_ONLY = tuple(e for e in home.PROFILE_ENTRIES if e not in {*PROFILE_FILES, inventory_file.MARKER, L.ASSETS, L.CRON})


def vouch_fence(path: Path) -> None:
    """A fence hit says that no entry hermes-fleet writes in the profile is a link: a trace (the
    settled plan) records that of each such entry. Not the folders' listings, which their keys in
    the cache stand for: a running gateway renames a heartbeat into cron/ every minute."""
    base = f"{path}/"
    inputtrace.vouch(inputtrace.LINK, [base + e for e in _LINKS_ONLY])


def botchat_keys(path: Path) -> tuple[obscache.Key, ...] | None:
    db = f"{path}/{sessions.STATE_DB}"
    return obscache.stat_keys([db, f"{db}-wal"])


def jobs_keys(path: Path) -> tuple[obscache.Key, ...] | None:
    return obscache.stat_keys([f"{path}/{L.JOBS}"])  # cronstore.jobs_path, without a Path per call


def profile_facts(live: LiveProfile) -> dict[str, Any]:
    """What a profile's cached files gave (not its .env, not its Bot Chat)."""
    return {
        "config": live.config,
        "description": live.description,
        "display_name": live.display_name,
        "meta": live.meta,
        "soul": live.soul,
        "avatar": list(live.avatar) if live.avatar else None,
        "avatar_files": list(live.avatar_files),
        "marker": live.marker,
    }


def profile_fields(facts: Any, name: str) -> dict[str, Any] | None:
    """LiveProfile's fields from cached `facts`; None when they are not what profile_facts makes."""
    if not isinstance(facts, dict) or set(facts) != {*_STR_OR_NONE, "config", "meta", "avatar", "avatar_files", "marker"}:
        return None
    if any(facts[k] is not None and not isinstance(facts[k], str) for k in _STR_OR_NONE):
        return None
    if any(facts[k] is not None and not isinstance(facts[k], dict) for k in ("config", "meta")):
        return None
    avatar, files, marker = facts["avatar"], facts["avatar_files"], facts["marker"]
    if avatar is not None and not (isinstance(avatar, list) and len(avatar) == 2 and all(isinstance(a, str) for a in avatar)):
        return None
    if not isinstance(files, list) or not all(f in AVATAR_EXTENSIONS for f in files):
        return None
    if marker is not None and not (
        isinstance(marker, dict) and marker.get("profile") == name and isinstance(marker.get("fleet"), str)
    ):
        return None
    return {**facts, "avatar": tuple(avatar) if avatar else None, "avatar_files": tuple(files)}


def jobs_facts(facts: Any) -> tuple[bool, list[dict[str, Any]] | None]:
    """(True, the cached jobs of a cron store; None: no store), or (False, None) when `facts` are
    not a list of objects."""
    if facts is None:
        return True, None
    if isinstance(facts, list) and all(isinstance(j, dict) for j in facts):
        return True, facts
    return False, None


class WatchObservations:
    """The `watch` loop's observation cache (docs/cli.md#watch): held in memory from pass to pass.

    File events on `profiles/` (watchfiles) mark the profiles that changed; a pass takes every
    other profile as the previous pass observed it (in memory, its .env included: never saved),
    without a stat, and reads a marked profile's files again.
    The root profile's files are stat'ed every pass (they are not under `profiles/`). Every
    `full_every` passes (0: never) the whole home is read in full, the safety net for an event
    the watcher missed. The cache is written after a pass that read something."""

    def __init__(self, root: Path, full_every: int = 10) -> None:
        self.root = root
        self.full_every = full_every
        self.wanted = obscache.wanted(True)  # HERMES_FLEET_NO_CACHE=1: every pass reads in full
        self.cache = obscache.ObservationCache.load(root)
        self.passes = 0
        self._marked: set[str] = set()
        self._lock = threading.Lock()
        self._ready = False  # the watcher is installed: every change from now on is marked
        self._ready_before = False  # ... and was when the previous pass began

    def start(self, stop: threading.Event) -> threading.Thread:
        """Watch `profiles/` for changes until `stop` is set (a daemon thread)."""
        thread = threading.Thread(target=self._watch, args=(stop,), name="hermes-fleet-observe", daemon=True)
        thread.start()
        return thread

    def begin_pass(self) -> obscache.ObservationCache:
        """The cache this pass observes through."""
        self.passes += 1
        with self._lock:
            marked, self._marked = self._marked, set()
        cache = self.cache
        cache.reopen()
        cache.keep_live = True
        for name in marked:
            cache.live.pop((name, False), None)
            cache.live.pop((name, True), None)
        if not self.wanted or (self.full_every and self.passes % self.full_every == 0):
            cache.use = False  # the safety net: everything read, and recorded afresh
            cache.live.clear()
        # Trusted only when every unit was checked, in the previous pass, after the watcher was up.
        cache.trusted, self._ready_before = self._ready_before, self._ready
        if not cache.trusted:
            cache.live.clear()  # an event may have been missed: nothing kept is taken as it is
        cache.dirty = marked | {DEFAULT_PROFILE}
        cache.hits = cache.misses = 0
        return cache

    def end_pass(self, cache: obscache.ObservationCache) -> None:
        """Write the cache when this pass read anything (a full disk is no error: next pass reads)."""
        self.cache = cache
        if cache.misses:
            with contextlib.suppress(ControllerError):
                cache.save()

    def mark(self, paths: Iterable[str]) -> None:
        """Profiles whose files changed: the folder under profiles/ each path is in."""
        base = f"{self.root / home.PROFILES_DIR}{os.sep}"
        with self._lock:
            for path in paths:
                if path.startswith(base):
                    self._marked.add(path[len(base) :].split(os.sep, 1)[0])

    def _watch(self, stop: threading.Event) -> None:
        folder = self.root / home.PROFILES_DIR
        while not stop.is_set() and not folder.is_dir():
            stop.wait(1.0)  # a fresh home: its first apply makes profiles/
        if stop.is_set():
            return
        try:
            for changed in filewatch.batches(folder, stop=stop):
                self.mark(changed)
                self._ready = True  # it yields (an empty set on a timeout) once it watches
        finally:
            self._ready = self._ready_before = False
