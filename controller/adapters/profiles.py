"""Named Hermes profiles on disk: list, create (staged + one rename), back up, restore.

The reconciler calls these to make `profiles/<name>/` exist or go away. Layout facts come from
hermes-agent 0.19 `hermes_cli/profiles.py` (docs/hermes/home.md#create-and-clone); tombstones and the
channel strip on clone come from Hermes main. Nothing outside the Hermes root is ever written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from controller import bounded
from controller.adapters import fsio, homebounds
from controller.adapters.home import (
    OWNER_MARKER,
    PROFILE_WRITTEN_DIRS,
    PROFILES_DIR,
    HomeLayout,
    ProfileLayout,
    StateLayout,
    check_profile_dir,
    check_profiles_root,
    check_state_path,
    profile_dir,
)
from controller.errors import ConflictError, HermesStateError, UsageError
from controller.hermes import DEFAULT_PROFILE
from controller.hermes.env import PROFILE_ENV_HEADER

PROFILE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\Z")
# `hermes profile create` refuses these (0.19 `_RESERVED_NAMES`); so do we.
RESERVED_NAMES = frozenset({"hermes", "default", "test", "tmp", "root", "sudo"})

TOMBSTONE_DIR = HomeLayout.TOMBSTONES  # Hermes main: profiles/.deleted/<name> marks a deleted profile
BACKUPS_DIR = StateLayout.BACKUPS
BACKUP_META = StateLayout.BACKUP_META
BACKUP_TREE = StateLayout.BACKUP_TREE

# What `hermes profile create` (0.19) makes in every new profile.
PROFILE_DIRS = ProfileLayout.CREATED_DIRS
# What `--clone-from` copies, when present in the source.
CLONE_TREES = (ProfileLayout.SKILLS,)
CLONE_SUBDIR_FILES = ProfileLayout.MEMORIES
NO_BUNDLED_SKILLS_MARKER = ProfileLayout.NO_BUNDLED_SKILLS
STAGING_INFIX = ".staging-"  # profiles/.<bot>.staging-<pid>: a profile being built, never listed by Hermes
_STAGING_RE = re.compile(r"^\.[a-z0-9][a-z0-9_-]{0,63}\.staging-(\d+)$")

_NO_SKILLS_TEXT = "Bundled-skill seeding is off for this profile (created by hermes-fleet).\n"

# --- Messaging channels a clone leaves behind -------------------------------------------------
# Hermes main strips a clone's messaging channels unless `--clone-channels` is given (bot tokens,
# allowlists, API_SERVER_KEY, `platforms:` sections; docs/hermes/home.md#create-and-clone and main's
# `profile_channels` tests): two profiles holding one bot token knock each other off the platform.
# 0.19 copies them verbatim. We follow main, conservatively:
#  * .env: drop keys of every 0.19 messaging adapter (prefixes from gateway/config.py) and the
#    gateway allowlist / relay / multiplex keys. HASS_, TWILIO_ and EMAIL_ are shared with tools,
#    so (like main) they are dropped only when the source's config.yaml configures that platform.
#  * config.yaml: drop `platforms:`, the per-platform top-level sections, and the multiplexer
#    settings (`gateway.multiplex_profiles`, `gateway.profile_routes`, and their top-level forms),
#    so the clone never believes it is the host's multiplexer.
_CHANNEL_ENV_PREFIXES = (
    "TELEGRAM_",
    "DISCORD_",
    "WHATSAPP_",
    "SLACK_",
    "SIGNAL_",
    "MATTERMOST_",
    "MATRIX_",
    "DINGTALK_",
    "API_SERVER_",
    "WEBHOOK_",
    "MSGRAPH_WEBHOOK_",
    "FEISHU_",
    "WECOM_",
    "WEIXIN_",
    "BLUEBUBBLES_",
    "QQBOT_",
    "QQ_",
    "YUANBAO_",
    "SMS_",
    "GATEWAY_ALLOW",
    "GATEWAY_RELAY_",
    "GATEWAY_MULTIPLEX_PROFILES",
)
_SHARED_ENV_PREFIXES = {"homeassistant": ("HASS_",), "sms": ("TWILIO_",), "email": ("EMAIL_",)}
_CHANNEL_CONFIG_SECTIONS = (
    "platforms",
    "telegram",
    "discord",
    "whatsapp",
    "whatsapp_cloud",
    "slack",
    "signal",
    "mattermost",
    "matrix",
    "homeassistant",
    "email",
    "sms",
    "dingtalk",
    "api_server",
    "webhook",
    "msgraph_webhook",
    "feishu",
    "wecom",
    "wecom_callback",
    "weixin",
    "bluebubbles",
    "qqbot",
    "yuanbao",
    "relay",
    "multiplex_profiles",
    "profile_routes",
)
_CHANNEL_GATEWAY_KEYS = ("multiplex_profiles", "profile_routes")
_ENV_KEY_RE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


@dataclass(frozen=True)
class BackupInfo:
    """One backup made by `backup_profile`: `path/BACKUP.json` beside the tree in `path/profile/`.

    `records` are the fleet's inventory entries of the bot and its routines at the time of the
    prune, so a restore gives the fleet back its ownership (docs/cli.md, restore).
    """

    path: Path
    name: str
    fleet: str
    created_at: str
    original_path: str
    records: dict[str, Any] = field(default_factory=dict)

    @property
    def tree(self) -> Path:
        return self.path / BACKUP_TREE


# --- names and safety ----------------------------------------------------------------------


def validate_profile_name(name: str) -> None:
    """Refuse anything Hermes would not treat as a creatable named profile."""
    if name == DEFAULT_PROFILE:
        raise UsageError("the 'default' profile is the Hermes root itself; it is never created or moved")
    if not PROFILE_NAME_RE.match(name):
        raise UsageError(f"invalid profile name {name!r}: must match {PROFILE_NAME_RE.pattern}")
    if name in RESERVED_NAMES:
        raise UsageError(f"profile name {name!r} is reserved by Hermes")


def _profiles_root(root: Path) -> Path:
    return check_profiles_root(Path(root))


def _named_dir(root: Path, name: str) -> Path:
    """`profiles/<name>`, refused (ContainmentError) when it or `profiles/` is a symlink."""
    return check_profile_dir(Path(root), name)


def is_tombstoned(root: Path, name: str) -> bool:
    """True when Hermes main deleted `name` (profiles/.deleted/<name>); never recreate it then."""
    return os.path.lexists(HomeLayout(Path(root)).tombstone(name))


def live_profiles(root: Path) -> list[str]:
    """Named profiles Hermes 0.19 serves: every name-matching directory, minus main's tombstones."""
    base = _profiles_root(root)
    if not base.is_dir():
        return []
    names = []
    for entry in sorted(base.iterdir()):
        name = entry.name
        # is_dir() follows symlinks, exactly like Hermes' own scan.
        if name == DEFAULT_PROFILE or not PROFILE_NAME_RE.match(name) or not entry.is_dir():
            continue
        if not is_tombstoned(root, name):
            names.append(name)
    return names


def sweep_leftovers(root: Path, names: Collection[str]) -> list[Path]:
    """Remove what a killed hermes-fleet run left (SIGKILL, power loss; SIGTERM and SIGINT clean up
    themselves): its staging folders in `profiles/`, and its temp files (`.<name>.hf<pid>.<random>.tmp`,
    fsio) in every folder it writes: the root profile, the given profiles, `.hermes-fleet/` and
    its inventory, parse cache, hand-edit baseline, backups, history and kept copies of replaced files. Only under the
    apply lock, and only leftovers of a dead process (fsio.dead_pid); a folder that is a symlink is
    not entered."""
    root = Path(root)
    removed = sweep_staging(root)
    layout = HomeLayout(root)
    profiles = [DEFAULT_PROFILE, *(n for n in sorted(set(names) - {DEFAULT_PROFILE}) if PROFILE_NAME_RE.match(n))]
    folders = [layout.profile(name) / rel for name in profiles for rel in PROFILE_WRITTEN_DIRS]
    folders += _state_folders(layout.state)
    for folder in folders:
        if _no_link_below(root, folder):
            removed += fsio.sweep_temp_files(folder)
    return removed


def _state_folders(state: StateLayout) -> list[Path]:
    """The folders of `.hermes-fleet/` that hold our files, as deep as StateLayout.SWEPT says."""
    folders = []
    for rel, depth in StateLayout.SWEPT.items():
        folder = state / rel
        folders.append(folder)
        if depth == "flat" or not folder.is_dir() or os.path.islink(folder) or os.path.islink(state.path):
            continue
        if depth == "children":
            folders += [Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        else:  # "tree": nested as in the home (os.walk never follows a link)
            folders += [Path(top) for top, _, _ in os.walk(folder)][1:]
    return folders


def _no_link_below(root: Path, path: Path) -> bool:
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if os.path.islink(current):
            return False
    return True


# --- create --------------------------------------------------------------------------------


def create_profile(
    root: Path,
    name: str,
    *,
    clone_from: str | None = None,
    create_empty: bool = False,
    extra_files: dict[str, str] | None = None,  # written into the staging dir (the owner marker)
    fill: Callable[[Path], None] | None = None,  # writes the rest of the profile into the staging dir
) -> Path:
    """Build `profiles/<name>` as `hermes profile create` (0.19) would, then publish it with one rename.

    Differences from Hermes, on purpose: no SOUL.md persona (Hermes seeds a missing one on first
    use), no `~/.local/bin` wrapper, no bundled-skill sync (the PyPI wheel ships none), and a
    clone leaves messaging channels behind (as Hermes main does). A cloned config.yaml is copied
    as it is: Hermes 0.19 also runs its config migration on an outdated clone (adding
    `_config_version` and its comment blocks); we leave that to Hermes' own tools.

    The whole profile (`fill`: its config, .env, soul, profile.yaml, Bot Chat) is written into the
    staging folder with no fsync per file, then made durable with one `fsio.sync_filesystem`
    before the rename publishes it: a crash before the rename leaves only the staging folder (the
    next run sweeps it), and after it every file is whole (docs/reliability.md#new-profiles).
    """
    root = Path(root)
    validate_profile_name(name)
    if clone_from is not None and create_empty:
        raise UsageError("create_empty and clone_from are mutually exclusive (a clone copies skills)")
    target = _named_dir(root, name)
    _refuse_existing(root, name, target)
    source = _clone_source(root, clone_from) if clone_from is not None else None

    base = target.parent
    fsio.make_dirs(base)
    staging = base / f".{name}{STAGING_INFIX}{os.getpid()}"
    _remove_staging(staging)  # a leftover of a crashed earlier run with our pid
    try:
        with fsio.deferred():
            with fsio.mapped("build the new profile in", staging):  # reading the clone source included
                _build_profile(staging, source=source, create_empty=create_empty)
            for rel, text in (extra_files or {}).items():
                fsio.atomic_write_text(staging / rel, text)
            if fill is not None:
                fill(staging)
            if not ProfileLayout(staging).env.exists():  # after `fill`: a bot's env keys go in with the header
                fsio.atomic_write_text(ProfileLayout(staging).env, PROFILE_ENV_HEADER, mode=0o600)
        fsio.sync_filesystem(staging)
        # Re-check just before publishing: another writer may have created or tombstoned it.
        _refuse_existing(root, name, target)
        fsio.publish_dir(staging, target)  # ConflictError if it appeared meanwhile
    except BaseException:
        with contextlib.suppress(Exception):  # never hide the error that brought us here
            _remove_staging(staging)
        raise
    return target


def _refuse_existing(root: Path, name: str, target: Path) -> None:
    if os.path.lexists(target):
        raise ConflictError(f"profile {name!r} already exists at {target}")
    if is_tombstoned(root, name):
        raise ConflictError(
            f"profile {name!r} was deleted by Hermes (tombstone profiles/{TOMBSTONE_DIR}/{name})",
            hint="recreate it with `hermes profile create` so Hermes clears its own tombstone",
        )


def _clone_source(root: Path, clone_from: str) -> Path:
    if clone_from != DEFAULT_PROFILE:
        validate_profile_name(clone_from)
        _named_dir(root, clone_from)  # symlink safety
    source = profile_dir(root, clone_from)
    if not source.is_dir() or (clone_from != DEFAULT_PROFILE and is_tombstoned(root, clone_from)):
        raise HermesStateError(f"cannot clone from profile {clone_from!r}: it does not exist", path=str(source))
    return source


def _remove_staging(staging: Path) -> None:
    # Only ever our own dot-prefixed staging dir, which Hermes never lists.
    with fsio.mapped("remove the staging folder", staging):
        if staging.is_symlink():
            staging.unlink()
        elif staging.exists():
            shutil.rmtree(staging)


def sweep_staging(root: Path) -> list[Path]:
    """Remove `profiles/.<bot>.staging-<pid>` folders a dead hermes-fleet run left behind (SIGKILL
    while building a new profile). Called under the apply lock, the only place staging folders are
    made, so one whose process is gone (fsio.dead_pid) cannot be anyone's work in progress."""
    base = Path(root) / PROFILES_DIR
    removed: list[Path] = []
    if os.path.islink(base) or not base.is_dir():
        return removed
    for entry in os.scandir(base):
        match = _STAGING_RE.match(entry.name)
        if match is None or not entry.is_dir(follow_symlinks=False) or not fsio.dead_pid(int(match.group(1))):
            continue
        _remove_staging(Path(entry.path))
        removed.append(Path(entry.path))
    return removed


def _build_profile(staging: Path, *, source: Path | None, create_empty: bool) -> None:
    staging.mkdir()
    for sub in PROFILE_DIRS:
        (staging / sub).mkdir()
    if source is not None:
        _copy_clone_files(source, staging)
    if create_empty:
        fsio.atomic_write_text(staging / NO_BUNDLED_SKILLS_MARKER, _NO_SKILLS_TEXT)


# --- clone ---------------------------------------------------------------------------------


def _copy_clone_files(source: Path, dest: Path) -> None:
    src_files, dest_files = ProfileLayout(source), ProfileLayout(dest)
    config_text = _read_text(src_files.config)
    config = _load_yaml(src_files.config, config_text) if config_text is not None else None
    if config_text is not None:
        fsio.atomic_write_text(dest_files.config, _strip_channel_config(config_text, config), mode=_mode_of(src_files.config))
    env_text = _read_text(src_files.env)
    if env_text is not None:
        # Hermes tightens a cloned .env to 0600 whatever the source mode was.
        fsio.atomic_write_text(dest_files.env, strip_channel_env(env_text, _configured_platforms(config)), mode=0o600)
    for rel in (ProfileLayout.SOUL, *CLONE_SUBDIR_FILES):
        src = source / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            fsio.atomic_write_bytes(dest / rel, fsio.read_bounded(src) or b"", mode=_mode_of(src))
    for tree in CLONE_TREES:
        if (source / tree).is_dir():
            _copy_tree(source / tree, dest / tree)


def _read_text(path: Path) -> str | None:
    if not path.is_file():
        return None
    data = fsio.read_bounded(path, homebounds.CONFIG_BYTES)  # config.yaml or .env of a profile
    try:
        return data.decode("utf-8") if data is not None else None
    except UnicodeDecodeError as exc:
        raise HermesStateError(f"cannot read {path}: {exc}", path=str(path)) from exc


def _mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _yaml() -> YAML:
    yaml = YAML()  # round-trip: the clone keeps the source's comments and key order
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _load_yaml(path: Path, text: str) -> Any:
    homebounds.check_yaml(text, str(path))  # an alias bomb, deep nesting, a huge number
    try:
        return _yaml().load(text)
    except YAMLError as exc:
        # Without parsing it we cannot strip the source's bot tokens; refuse rather than leak them.
        raise HermesStateError(f"cannot clone: {path} is not valid YAML ({exc})", path=str(path)) from exc


def _configured_platforms(config: Any) -> set[str]:
    if not isinstance(config, dict):
        return set()
    platforms = config.get("platforms")
    found = set(platforms) if isinstance(platforms, dict) else set()
    return found | {key for key in _SHARED_ENV_PREFIXES if key in config}


def _strip_channel_config(text: str, config: Any) -> str:
    if not isinstance(config, dict):
        return text
    changed = False
    for key in _CHANNEL_CONFIG_SECTIONS:
        if key in config:
            del config[key]
            changed = True
    gateway = config.get("gateway")
    if isinstance(gateway, dict):
        for key in _CHANNEL_GATEWAY_KEYS:
            if key in gateway:
                del gateway[key]
                changed = True
    if not changed:
        return text  # byte-identical copy, as Hermes makes
    out = StringIO()
    _yaml().dump(config, out)
    return out.getvalue()


def strip_channel_env(text: str, configured_platforms: Collection[str] = ()) -> str:
    """Drop messaging-channel keys from .env text; comments, blanks and other keys stay verbatim."""
    prefixes = list(_CHANNEL_ENV_PREFIXES)
    for platform, shared in _SHARED_ENV_PREFIXES.items():
        if platform in configured_platforms:
            prefixes.extend(shared)
    kept = []
    for line in text.splitlines(keepends=True):
        match = _ENV_KEY_RE.match(line)
        if match and match.group(1).upper().startswith(tuple(prefixes)):
            continue
        kept.append(line)
    return "".join(kept)


def _copy_tree(src: Path, dest: Path) -> None:
    """Copy a directory tree through fsio, keeping symlinks as symlinks (as Hermes' copytree does)."""
    dest.mkdir(exist_ok=True)
    for entry in sorted(src.iterdir()):
        target = dest / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            _copy_tree(entry, target)
        elif entry.is_file():
            fsio.atomic_write_bytes(target, fsio.read_bounded(entry) or b"", mode=_mode_of(entry))


# --- backup / restore ----------------------------------------------------------------------


def backups_dir(root: Path) -> Path:
    return HomeLayout(Path(root)).state.backups


def backup_profile(root: Path, name: str, *, fleet: str, records: dict[str, Any] | None = None) -> Path:
    """Move `profiles/<name>` into `.hermes-fleet/backups/<UTC stamp>-<name>/profile` (one rename).

    `records`: the fleet's inventory entries of the bot and its routines, kept in BACKUP.json so a
    restore gives the fleet its ownership back. Returns the backup directory. Nothing is deleted:
    restore_profile() moves the tree back.
    """
    root = Path(root)
    validate_profile_name(name)
    source = _named_dir(root, name)
    if not source.is_dir():
        raise HermesStateError(f"profile {name!r} does not exist at {source}", path=str(source))
    _discard_interrupted_backups(root, name)
    now = datetime.now(UTC)
    backup = _new_backup_dir(root, f"{now:%Y%m%dT%H%M%SZ}-{name}")
    meta = {
        "format": 1,
        "name": name,
        "fleet": fleet,
        "created_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "original_path": str(source),
        "inventory": records or {},
    }
    # Metadata first: a crash before the rename leaves a tree-less backup that list_backups skips,
    # never a moved tree without its record.
    fsio.atomic_write_text(backup / BACKUP_META, json.dumps(meta, indent=2, sort_keys=True) + "\n", mode=0o600)
    try:
        fsio.publish_dir(source, backup / BACKUP_TREE)
    except BaseException:
        with contextlib.suppress(Exception):
            _discard_record(backup)
        raise
    fsio.fsync_dir(source.parent)
    return backup


def _discard_interrupted_backups(root: Path, name: str) -> None:
    """A crash between writing BACKUP.json and moving the tree leaves a record with no tree; the
    profile is still in place, so that record is stale: drop it before backing up again."""
    base = backups_dir(root)
    if os.path.islink(base) or not base.is_dir():
        return
    own_name = re.compile(rf"^\d{{8}}T\d{{6}}Z-{re.escape(name)}(\.\d+)?$")
    for folder in base.iterdir():
        if folder.is_symlink() or not folder.is_dir() or os.path.lexists(folder / BACKUP_TREE):
            continue
        meta = _read_meta(folder)  # None: killed while writing the record, only its temp file is there
        if (meta.get("name") == name) if isinstance(meta, dict) else bool(own_name.match(folder.name)):
            for leftover in folder.glob(f".{BACKUP_META}.*.tmp"):
                fsio.remove(leftover)
            _discard_record(folder)


def _discard_record(folder: Path) -> None:
    """Remove a backup folder that holds only its BACKUP.json (never a tree)."""
    fsio.remove(folder / BACKUP_META)
    with contextlib.suppress(OSError):
        folder.rmdir()  # fails, and keeps everything, if anything else is inside


def _new_backup_dir(root: Path, stem: str) -> Path:
    base = backups_dir(root)
    for folder in (base.parent, base):
        check_state_path(root, folder)
        if not folder.exists():
            with fsio.mapped("create the folder", folder):
                folder.mkdir(mode=0o700)
                os.chmod(folder, 0o700)  # mkdir's mode is filtered by the umask
    for attempt in range(1, 100):
        candidate = base / (stem if attempt == 1 else f"{stem}.{attempt}")
        try:
            candidate.mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as exc:
            raise fsio.state_error(exc, "create the folder", candidate) from exc
        with fsio.mapped("set the mode of", candidate):
            os.chmod(candidate, 0o700)
        return candidate
    raise HermesStateError(f"too many backups named {stem} in {base}", path=str(base))


def list_backups(root: Path) -> list[BackupInfo]:
    """Complete backups (metadata and tree both present, no symlinks), oldest first."""
    base = backups_dir(Path(root))
    check_state_path(Path(root), base)
    if not base.is_dir():
        return []
    found = []
    with fsio.mapped("list", base):
        entries = sorted(base.iterdir())
    for entry in entries:
        info = _read_backup(entry)
        if info is not None and _real_dir(info.tree):
            found.append(info)
    return sorted(found, key=lambda b: (b.created_at, b.path.name))


def _real_dir(path: Path) -> bool:
    return not os.path.islink(path) and path.is_dir()


def _read_meta(folder: Path) -> dict[str, Any] | None:
    if os.path.islink(folder) or os.path.islink(folder / BACKUP_META):
        return None
    try:
        text = bounded.read_bytes(folder / BACKUP_META, fsio.MAX_STATE_BYTES).decode("utf-8")
        meta = homebounds.parse_json(text, str(folder / BACKUP_META), "backup record", "")
    except (OSError, ValueError, HermesStateError):
        return None
    return meta if isinstance(meta, dict) else None


def _read_backup(folder: Path) -> BackupInfo | None:
    meta = _read_meta(folder)
    if meta is None or not isinstance(meta.get("name"), str):
        return None
    records = meta.get("inventory")
    return BackupInfo(
        path=folder,
        name=meta["name"],
        fleet=str(meta.get("fleet", "")),
        created_at=str(meta.get("created_at", "")),
        original_path=str(meta.get("original_path", "")),
        records=records if isinstance(records, dict) else {},
    )


def restore_profile(root: Path, backup: str | Path, check: Callable[[BackupInfo], None] | None = None) -> BackupInfo:
    """Move a backed-up tree back to `profiles/<name>`; `backup` is its directory or directory name.

    The backup's record stays until `discard_backup` (the caller first gives the inventory its
    entries back). Run again after an interruption, it finds the tree already back in place (its
    owner marker naming the backup's fleet) and returns the record, so the restore can finish.
    """
    root = Path(root)
    folder = _resolve_backup(root, backup)
    info = _read_backup(folder)
    if info is None:
        raise HermesStateError(f"{folder} is not a complete hermes-fleet backup", path=str(folder))
    validate_profile_name(info.name)
    target = _named_dir(root, info.name)
    if not os.path.lexists(info.tree) and _restored_already(target, info):
        return info
    if not _real_dir(info.tree):
        raise HermesStateError(f"{folder} is not a complete hermes-fleet backup", path=str(folder))
    _refuse_existing(root, info.name, target)
    if check is not None:
        check(info)  # raises to refuse (engine.restoring: no other fleet may own the name)
    fsio.make_dirs(target.parent)
    try:
        fsio.publish_dir(info.tree, target)
    except ConflictError as exc:
        raise ConflictError(f"cannot restore {info.name!r} to {target}: {exc.message}") from exc
    fsio.fsync_dir(folder)
    return info


def _restored_already(target: Path, info: BackupInfo) -> bool:
    try:
        text = bounded.read_bytes(target / OWNER_MARKER, 64 * 1024).decode("utf-8")
        marker = homebounds.parse_json(text, str(target / OWNER_MARKER), "marker", "")
    except (OSError, ValueError, HermesStateError):
        return False
    return isinstance(marker, dict) and marker.get("fleet") == info.fleet and marker.get("profile") == info.name


def discard_backup(info: BackupInfo) -> None:
    """Drop a restored backup's record (the folder then holds nothing and goes too)."""
    _discard_record(info.path)


def _resolve_backup(root: Path, backup: str | Path) -> Path:
    base = backups_dir(root)
    candidate = Path(backup)
    folder = candidate if candidate.is_absolute() or len(candidate.parts) > 1 else base / candidate
    check_state_path(root, base)
    if os.path.islink(folder) or Path(os.path.realpath(folder)).parent != Path(os.path.realpath(base)):
        raise HermesStateError(f"{backup} is not a backup under {base}", path=str(folder))
    if not os.path.lexists(folder):
        raise UsageError(f"no such backup: {backup} (not under {base})", hint="`hermes-fleet restore` lists the backups")
    return folder
