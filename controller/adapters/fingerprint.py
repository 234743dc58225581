"""A digest of every home file a plan is made from, so a saved plan can tell that the home changed.

The files are those hermes-fleet reads and writes in the root and in each profile (config.yaml,
.env, SOUL.md, profile.yaml, the owner marker, the avatar, the cron store) and every fleet's
inventory. Hermes' own session database is left out: a bot that chats changes it, and the Bot
Chat it holds is compared through the plan itself. Reads are bounded; a file too large to read,
a link or anything else not a regular file is recorded by what it is, so a change to it still
shows.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from controller import bounded
from controller.adapters.home import OWNER_MARKER, PROFILES_DIR, ProfileLayout
from controller.adapters.inventory import inventory_dir
from controller.errors import TooLarge
from controller.hermes import AVATAR_EXTENSIONS

READ_LIMIT = 64 * 1024 * 1024  # the largest file digested; a larger one is recorded by its size
PROFILE_FILES = (
    ProfileLayout.CONFIG,
    ProfileLayout.ENV,
    ProfileLayout.SOUL,
    ProfileLayout.META,
    OWNER_MARKER,
    ProfileLayout.JOBS,
    *(ProfileLayout.avatar_name(ext) for ext in AVATAR_EXTENSIONS),
)
MAX_PROFILES = 100_000  # folders under profiles/ looked at (a hostile home cannot make this unbounded)


def observed_files(root: Path) -> dict[str, str]:
    """`{path relative to the root: digest}` for every file a plan depends on that exists."""
    found: dict[str, str] = {}
    folders = [root, *_profile_folders(root)]
    for folder in folders:
        for name in PROFILE_FILES:
            _add(found, root, folder / name)
    directory = inventory_dir(root)
    if directory.is_dir() and not directory.is_symlink():
        for entry in sorted(os.scandir(directory), key=lambda e: e.name)[:MAX_PROFILES]:
            if entry.name.endswith(".json"):
                _add(found, root, Path(entry.path))
    return found


def digest(files: dict[str, str]) -> str:
    """One digest for the whole set (names and contents)."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]}\n".encode())
    return "sha256:" + h.hexdigest()


def _profile_folders(root: Path) -> list[Path]:
    profiles = root / PROFILES_DIR
    if not profiles.is_dir() or profiles.is_symlink():
        return []
    with os.scandir(profiles) as entries:
        names = sorted(e.name for e in entries if not e.name.startswith("."))[:MAX_PROFILES]
    return [profiles / name for name in names]


def _add(found: dict[str, str], root: Path, path: Path) -> None:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        found[path.relative_to(root).as_posix()] = f"unreadable:{exc.errno}"
        return
    found[path.relative_to(root).as_posix()] = _file_digest(path, info)


def _file_digest(path: Path, info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError as exc:
            return f"link:unreadable:{exc.errno}"
    if not stat.S_ISREG(info.st_mode):
        return bounded.kind_of(info.st_mode)
    try:
        return "sha256:" + hashlib.sha256(bounded.read_bytes(path, READ_LIMIT)).hexdigest()
    except TooLarge:
        return f"large:{info.st_size}:{info.st_mtime_ns}"
    except OSError as exc:
        return f"unreadable:{exc.errno}"
