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
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from controller.errors import ContainmentError, UsageError
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE


@dataclass(frozen=True)
class ProfileLayout:
    """Every path hermes-fleet knows in one profile folder (the root profile's folder is the root).

    The names (class attributes) are relative to the folder; the properties are the paths. Where
    Hermes puts each file: docs/hermes/home.md#layout, docs/hermes/files.md and docs/hermes/cron.md.
    """

    path: Path

    CONFIG: ClassVar[str] = "config.yaml"
    ENV: ClassVar[str] = ".env"
    SOUL: ClassVar[str] = "SOUL.md"
    META: ClassVar[str] = "profile.yaml"  # the profile's description and `ui_meta`
    OWNER_MARKER: ClassVar[str] = ".hermes-fleet-owner.json"  # ours: which fleet owns the profile
    STATE_DB: ClassVar[str] = "state.db"  # sessions (the Bot Chat)
    STATE_DB_SIDECARS: ClassVar[tuple[str, ...]] = ("-wal", "-shm", "-journal")
    ASSETS: ClassVar[str] = "assets"
    CRON: ClassVar[str] = "cron"
    JOBS: ClassVar[str] = "cron/jobs.json"
    JOBS_LOCK: ClassVar[str] = "cron/.jobs.lock"
    CRON_OUTPUT: ClassVar[str] = "cron/output"  # cron/output/<job id>/<run>.md
    TICKER_HEARTBEAT: ClassVar[str] = "cron/ticker_heartbeat"
    TICKER_LAST_SUCCESS: ClassVar[str] = "cron/ticker_last_success"
    GATEWAY_PID: ClassVar[str] = "gateway.pid"
    GATEWAY_STATE: ClassVar[str] = "gateway_state.json"
    AUTH: ClassVar[str] = "auth.json"
    HONCHO: ClassVar[str] = "honcho.json"  # in a profile and in the root (docs/hermes/rename.md)
    SKILLS: ClassVar[str] = "skills"
    MEMORIES: ClassVar[tuple[str, ...]] = ("memories/MEMORY.md", "memories/USER.md")
    NO_BUNDLED_SKILLS: ClassVar[str] = ".no-bundled-skills"  # Hermes checks only that it exists
    # The folders `hermes profile create` (0.19.0 `_PROFILE_DIRS`) makes in every new profile.
    CREATED_DIRS: ClassVar[tuple[str, ...]] = (
        "memories", "sessions", SKILLS, "skins", "logs", "plans", "workspace", CRON, "home",
    )  # fmt: skip

    @staticmethod
    def avatar_name(ext: str) -> str:
        """`assets/avatar.<ext>` (docs/hermes/bot-mode.md#avatars)."""
        return f"{ProfileLayout.ASSETS}/avatar.{ext}"

    def avatar(self, ext: str) -> Path:
        return self.path / self.avatar_name(ext)

    @property
    def config(self) -> Path:
        return self.path / self.CONFIG

    @property
    def env(self) -> Path:
        return self.path / self.ENV

    @property
    def soul(self) -> Path:
        return self.path / self.SOUL

    @property
    def meta(self) -> Path:
        return self.path / self.META

    @property
    def owner_marker(self) -> Path:
        return self.path / self.OWNER_MARKER

    @property
    def state_db(self) -> Path:
        return self.path / self.STATE_DB

    @property
    def assets(self) -> Path:
        return self.path / self.ASSETS

    @property
    def cron(self) -> Path:
        return self.path / self.CRON

    @property
    def jobs(self) -> Path:
        return self.path / self.JOBS

    @property
    def jobs_lock(self) -> Path:
        return self.path / self.JOBS_LOCK

    @property
    def honcho(self) -> Path:
        return self.path / self.HONCHO

    def __truediv__(self, rel: str) -> Path:
        return self.path / rel


# Every folder hermes-fleet writes files into inside a profile (fsio's temp files land there too).
PROFILE_WRITTEN_DIRS = ("", ProfileLayout.CRON, ProfileLayout.ASSETS)
OWNER_MARKER = ProfileLayout.OWNER_MARKER
# Every path hermes-fleet writes inside a profile (the avatar's folder and file, the cron store and
# Hermes' lock beside it, the sessions database and its sidecars).
PROFILE_ENTRIES = (
    ProfileLayout.CONFIG,
    ProfileLayout.ENV,
    ProfileLayout.SOUL,
    ProfileLayout.META,
    OWNER_MARKER,
    ProfileLayout.STATE_DB,
    *(ProfileLayout.STATE_DB + s for s in ProfileLayout.STATE_DB_SIDECARS),
    ProfileLayout.ASSETS,
    *(ProfileLayout.avatar_name(ext) for ext in AVATAR_EXTENSIONS),
    ProfileLayout.CRON,
    ProfileLayout.JOBS,
    ProfileLayout.JOBS_LOCK,
)


@dataclass(frozen=True)
class StateLayout:
    """hermes-fleet's own state, `<root>/.hermes-fleet/` (Hermes never looks inside)."""

    path: Path

    INVENTORY: ClassVar[str] = "inventory"  # inventory/<fleet>.json
    HISTORY: ClassVar[str] = "history"  # history/<fleet>/<entry>
    REPLACED: ClassVar[str] = "replaced"  # replaced/<stamp>/<path in the home>: kept copies
    BACKUPS: ClassVar[str] = "backups"  # backups/<stamp>-<bot>/{BACKUP.json,profile/}
    BACKUP_META: ClassVar[str] = "BACKUP.json"
    BACKUP_TREE: ClassVar[str] = "profile"
    GIT: ClassVar[str] = "git"  # the reconciler's clones
    CACHE: ClassVar[str] = "cache"
    PARSE_CACHE: ClassVar[str] = "cache/parsed.json"
    OBSERVATION_CACHE: ClassVar[str] = "cache/observed.json"  # stat keys and facts (adapters/obscache.py)
    SETTLED_PLAN: ClassVar[str] = "cache/settled-plan.json"  # the last apply's no-op plan, by its inputs (adapters/settled.py)
    OUTBOX: ClassVar[str] = "outbox"  # outbox/<webhook>/<event id>.json
    APPLY_LOCK: ClassVar[str] = "apply.lock"
    WATCH_LOCK: ClassVar[str] = "watch.lock"
    WATCH_STATUS: ClassVar[str] = "watch-status.json"
    SUSPENDED: ClassVar[str] = "suspended.json"  # hermes-fleet suspend: who, when, why
    BASELINE: ClassVar[str] = "baseline"  # baseline/<fleet>.json: digests of the keys apply left alone
    DEMO: ClassVar[str] = "demo"  # the demo's manifests
    # Its own entries, none of which may be a symlink (`check_state`).
    ENTRIES: ClassVar[tuple[str, ...]] = (
        INVENTORY, HISTORY, REPLACED, BACKUPS, GIT, APPLY_LOCK, WATCH_LOCK, WATCH_STATUS, SUSPENDED,
    )  # fmt: skip
    # The folders that hold files written through fsio (so a killed run's temp files), and how deep
    # `profiles.sweep_leftovers` looks in each: "flat" the folder, "children" also each folder in
    # it, "tree" every folder below. The git clones are git's own files, never swept.
    SWEPT: ClassVar[dict[str, str]] = {
        "": "flat", INVENTORY: "flat", CACHE: "flat", BACKUPS: "children", HISTORY: "children",
        REPLACED: "tree", OUTBOX: "children", BASELINE: "flat",
    }  # fmt: skip

    def __truediv__(self, rel: str) -> Path:
        return self.path / rel

    @property
    def inventory(self) -> Path:
        return self.path / self.INVENTORY

    @property
    def history(self) -> Path:
        return self.path / self.HISTORY

    @property
    def replaced(self) -> Path:
        return self.path / self.REPLACED

    @property
    def backups(self) -> Path:
        return self.path / self.BACKUPS

    @property
    def git(self) -> Path:
        return self.path / self.GIT

    @property
    def cache(self) -> Path:
        return self.path / self.CACHE

    @property
    def parse_cache(self) -> Path:
        return self.path / self.PARSE_CACHE

    @property
    def observation_cache(self) -> Path:
        return self.path / self.OBSERVATION_CACHE

    @property
    def settled_plan(self) -> Path:
        return self.path / self.SETTLED_PLAN

    @property
    def outbox(self) -> Path:
        return self.path / self.OUTBOX

    @property
    def apply_lock(self) -> Path:
        return self.path / self.APPLY_LOCK

    @property
    def watch_lock(self) -> Path:
        return self.path / self.WATCH_LOCK

    @property
    def watch_status(self) -> Path:
        return self.path / self.WATCH_STATUS

    @property
    def baseline(self) -> Path:
        return self.path / self.BASELINE

    @property
    def suspended(self) -> Path:
        return self.path / self.SUSPENDED


@dataclass(frozen=True)
class HomeLayout:
    """Every path under a Hermes home (its root): the root profile, `profiles/<name>/`, and
    hermes-fleet's own `.hermes-fleet/`. The one place these names are spelt
    (tests/unit/test_home_layout.py checks that no other module spells them)."""

    root: Path

    PROFILES: ClassVar[str] = "profiles"
    TOMBSTONES: ClassVar[str] = ".deleted"  # Hermes main: profiles/.deleted/<name> marks a deleted profile
    STATE: ClassVar[str] = ".hermes-fleet"
    ACTIVE_PROFILE: ClassVar[str] = "active_profile"  # the root's sticky profile name (docs/hermes/rename.md)

    @property
    def profiles(self) -> Path:
        return self.root / self.PROFILES

    def tombstone(self, name: str) -> Path:
        return self.root / self.PROFILES / self.TOMBSTONES / name

    @property
    def active_profile(self) -> Path:
        return self.root / self.ACTIVE_PROFILE

    def profile(self, name: str) -> ProfileLayout:
        """The default profile is the root itself; named profiles live in `<root>/profiles/<name>`."""
        return ProfileLayout(self.root if name == DEFAULT_PROFILE else self.root / self.PROFILES / name)

    @property
    def state(self) -> StateLayout:
        return StateLayout(self.root / self.STATE)


STATE_DIR = HomeLayout.STATE  # our own state under the root: inventory, lock, backups
PROFILES_DIR = HomeLayout.PROFILES


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
    if home.parent.name == HomeLayout.PROFILES:
        return home.parent.parent
    return home


def profile_dir(root: Path, name: str) -> Path:
    """The default profile is the root itself; named profiles live in `<root>/profiles/<name>`."""
    return HomeLayout(root).profile(name).path


def state_dir(root: Path) -> Path:
    return HomeLayout(root).state.path


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


STATE_ENTRIES = StateLayout.ENTRIES


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
