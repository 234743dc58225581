"""Where the Hermes root and each profile live, by Hermes' own rules, and what stays inside them.

Mirrors `get_default_hermes_root()` of hermes-agent (docs/hermes/home.md#root): `--home`, else
HERMES_HOME (a path under `<root>/profiles/<name>` maps back to the root), else `~/.hermes`.

Containment (docs/reliability.md#containment): a bot's writes stay inside its own real profile
folder. `check_profile` refuses a profile folder (or `profiles/`) that is a symlink, and any file
or folder hermes-fleet writes in a profile whose symlink leads out of that profile (into another
profile, into `.hermes-fleet/`, out of the home); a link that stays inside the profile is followed,
as Hermes follows it (docs/hermes/files.md#symlinks). `check_state_path` refuses any symlink on the
way to our own state under `.hermes-fleet/`. Both raise ContainmentError (exit 3). A link planted
after these checks is caught at the write itself (fsio's fence, which uses `profile_fence` and
`check_inside_real`).
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.errors import ContainmentError, UsageError
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE

STATE_DIR = ".hermes-fleet"  # our own state under the root: inventory, lock, backups
PROFILES_DIR = "profiles"
OWNER_MARKER = ".hermes-fleet-owner.json"
# Every path hermes-fleet writes inside a profile (the avatar's folder and file, the cron store and
# Hermes' lock beside it, the sessions database and its sidecars).
PROFILE_ENTRIES = (
    "config.yaml",
    ".env",
    "SOUL.md",
    "profile.yaml",
    OWNER_MARKER,
    "state.db",
    "state.db-wal",
    "state.db-shm",
    "state.db-journal",
    "assets",
    *(f"assets/avatar.{ext}" for ext in AVATAR_EXTENSIONS),
    "cron",
    "cron/jobs.json",
    "cron/.jobs.lock",
)


def resolve_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The Hermes home: `--home`, else `$HERMES_HOME` (its root when it names a profile), else ~/.hermes."""
    root = _root_named(explicit)
    if os.path.exists(root) and not os.path.isdir(root):
        named = "--home" if explicit else "$HERMES_HOME"
        raise UsageError(
            f"{named} {root} is not a folder", hint="give the Hermes home folder (the one that holds config.yaml and profiles/)"
        )
    return root


def _root_named(explicit: str | os.PathLike[str] | None) -> Path:
    if explicit:
        return Path(explicit).expanduser().absolute()
    native_home = Path.home() / ".hermes"
    env = os.environ.get("HERMES_HOME", "").strip()
    if not env:
        return native_home
    home = Path(env).expanduser().absolute()
    try:
        home.relative_to(native_home)
        return native_home
    except ValueError:
        pass
    if home.parent.name == "profiles":
        return home.parent.parent
    return home


def profile_dir(root: Path, name: str) -> Path:
    """The default profile is the root itself; named profiles live in `<root>/profiles/<name>`."""
    return root if name == DEFAULT_PROFILE else root / "profiles" / name


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def profile_fence(root: Path, name: str) -> tuple[Path, tuple[Path, ...]]:
    """(the real folder a profile's writes must stay in, real folders inside it that are not its own)."""
    home = _real(root)
    if name == DEFAULT_PROFILE:
        return home, (home / PROFILES_DIR, home / STATE_DIR)
    return home / PROFILES_DIR / name, ()


def check_profiles_root(root: Path) -> Path:
    """`<root>/profiles`, refused (ContainmentError) when it is a symlink."""
    path = Path(root) / PROFILES_DIR
    _refuse_link(path)
    return path


def profile_entries(root: Path) -> frozenset[str] | None:
    """The names in `<root>/profiles` (empty when there is no such folder), read with one listing;
    None when it cannot be listed (the caller then looks at each profile, which words the error).
    ContainmentError when `profiles/` is a symlink."""
    path = check_profiles_root(root)
    try:
        return frozenset(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except OSError:
        return None


def check_profile_dir(root: Path, name: str) -> Path:
    """The profile's folder, refused (ContainmentError) when it or `profiles/` is a symlink."""
    path = profile_dir(root, name)
    if name != DEFAULT_PROFILE:
        check_profiles_root(root)
        _refuse_link(path)
    return path


def _refuse_link(path: Path) -> None:
    if os.path.islink(path):
        raise ContainmentError(
            f"{path} is a symlink (to {_real(path)}); hermes-fleet writes a bot only into a real "
            "profile folder, never through a link into another profile or out of the home",
            path=str(path),
            hint="replace the link with the folder itself, or take the bot out of the manifests",
        )


def check_profile(root: Path, name: str, entries: tuple[str, ...] = PROFILE_ENTRIES) -> Path:
    """The profile's folder, after refusing every way out of it (see the module docstring).

    One directory listing per folder (`.`, `assets`, `cron`): only the entries that are links are
    resolved, so checking a profile costs about three system calls.
    """
    path = check_profile_dir(root, name)
    own, foreign = profile_fence(root, name)
    wanted: dict[str, set[str]] = {}
    for rel in entries:
        folder, _, leaf = rel.rpartition("/")
        wanted.setdefault(folder, set()).add(leaf)
    for folder, names in wanted.items():
        try:
            listing = list(os.scandir(path / folder if folder else path))
        except OSError:
            continue  # missing (or unreadable): nothing there can lead anywhere
        for entry in listing:
            if entry.name in names and entry.is_symlink():
                check_inside(Path(entry.path), own, foreign, owner=f"profile {name!r}")
    return path


def check_inside(path: Path, own: Path, foreign: tuple[Path, ...] = (), *, owner: str) -> None:
    """Refuse `path` when its real location (after every symlink) is not inside `own`, or is inside
    one of `foreign` (folders within `own` that belong to others)."""
    check_inside_real(_real(path), path, own, foreign, owner)


def check_inside_real(real: Path, path: Path, own: Path, foreign: tuple[Path, ...], owner: str) -> None:
    """`check_inside` for `path` whose real location is known (`real`: fsio's open folder)."""
    if real.is_relative_to(own) and not any(real.is_relative_to(f) for f in foreign):
        return
    raise ContainmentError(
        f"{path} leads to {real}, which is not part of {owner}; hermes-fleet follows a symlink "
        "only when it stays inside the profile it belongs to (for the root profile: outside "
        f"{PROFILES_DIR}/ and {STATE_DIR}/)",
        path=str(path),
        hint="replace the link with a regular file or folder (or point it inside the same profile)",
    )


STATE_ENTRIES = ("inventory", "history", "replaced", "backups", "git", "apply.lock", "watch.lock", "watch-status.json")


def check_state(root: Path) -> None:
    """Refuse (ContainmentError) `.hermes-fleet/` or any of its own entries that is a symlink."""
    for rel in STATE_ENTRIES:
        check_state_path(root, state_dir(root) / rel)


def check_state_path(root: Path, path: Path) -> None:
    """Refuse any symlink between the home and `path`, a path of our own state under `.hermes-fleet/`."""
    home = _real(root)
    current = Path(root)
    for part in Path(path).relative_to(root).parts:
        current = current / part
        if os.path.islink(current):
            raise ContainmentError(
                f"{current} is a symlink (to {_real(current)}); hermes-fleet keeps its state only in "
                f"real files and folders under {home / STATE_DIR}",
                path=str(current),
                hint="replace the link with a real folder (move its contents in), then run again",
            )
