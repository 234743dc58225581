"""Observed state: what a Hermes home holds right now, for the objects a plan cares about.

Reads each bot's profile folder (config.yaml, .env, profile.yaml, SOUL.md, assets/avatar.*,
state.db) and the root profile, read-only: no file is created or written here (`plan` and
`--dry-run` must leave the tree byte-identical). A file that cannot be read becomes an error
on that one bot; other bots are observed as usual.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import inventory as inv
from controller.adapters import configfile, envfile, profilemeta, profiles, sessions
from controller.adapters.hermes_defaults import effective_value
from controller.adapters.home import profile_dir
from controller.errors import ControllerError
from controller.naming import DEFAULT_PROFILE

AVATAR_EXTENSIONS = ("png", "jpg", "webp")


@dataclass
class LiveProfile:
    """One profile folder as found on disk (the root profile for `default` and install-wide keys)."""

    name: str
    path: Path
    exists: bool
    tombstoned: bool = False
    marker: dict[str, Any] | None = None
    config: configfile.ConfigDoc | None = None
    env: envfile.EnvFile | None = None
    meta: profilemeta.ProfileMeta | None = None
    soul: str | None = None
    avatar: tuple[str, str] | None = None  # (extension, sha256) of assets/avatar.<ext>
    avatar_files: list[str] = field(default_factory=list)
    bot_chat: bool = False
    errors: list[str] = field(default_factory=list)

    def config_value(self, dotted: str) -> tuple[bool, Any]:
        """The value Hermes would use: an absent key reads as Hermes' default (not drift)."""
        if self.config is None:
            return False, None
        return effective_value(self.config, dotted)

    def config_raw(self, dotted: str) -> bool:
        """Whether the key is literally in config.yaml (not just implied by a Hermes default)."""
        return self.config is not None and self.config.get(dotted)[0]

    def env_value(self, key: str) -> tuple[bool, Any]:
        if self.env is None:
            return False, None
        value = self.env.get(key)
        return value is not None, value

    def meta_value(self, key: str) -> tuple[bool, Any]:
        record = self.meta.bot_record() if self.meta is not None else None
        if record is None or key not in record:
            return False, None
        return True, record[key]

    def profile_value(self, key: str) -> tuple[bool, Any]:
        if self.meta is None:
            return False, None
        value = self.meta.description if key == "description" else self.meta.display_name
        return value is not None, value


def observe_profile(root: Path, name: str, *, with_bot_chat: bool = True) -> LiveProfile:
    path = profile_dir(root, name)
    if name != DEFAULT_PROFILE:
        _refuse_escape(root, path)
    exists = path.is_dir()
    live = LiveProfile(name=name, path=path, exists=exists)
    if name != DEFAULT_PROFILE:
        live.tombstoned = profiles.is_tombstoned(root, name)
    if not exists:
        return live
    live.marker = inv.read_marker(root, name) if name != DEFAULT_PROFILE else None
    live.config = _read(live, lambda: configfile.ConfigDoc.load(path / "config.yaml"))
    live.env = _read(live, lambda: envfile.read_env(path / ".env"))
    live.meta = _read(live, lambda: profilemeta.ProfileMeta.load(path / "profile.yaml"))
    live.soul = _read_soul(live)
    _read_avatar(live)
    if with_bot_chat:
        found = _read(live, lambda: sessions.find_bot_chat(path))
        live.bot_chat = found is not None
    return live


def _refuse_escape(root: Path, path: Path) -> None:
    """A profile folder (or profiles/) that is a symlink out of the home is never followed."""
    try:
        resolved = path.resolve()
        home = root.resolve()
    except OSError:
        return
    if (path.is_symlink() or path.parent.is_symlink()) and not resolved.is_relative_to(home):
        raise ControllerError(
            f"{path} is a symlink to {resolved}, outside the Hermes home {home}",
            hint="hermes-fleet only touches files inside the home; replace the link with a real folder",
        )


def _read(live: LiveProfile, reader: Any) -> Any:
    try:
        return reader()
    except ControllerError as exc:
        live.errors.append(str(exc))
    except OSError as exc:
        live.errors.append(f"{exc.filename or live.path}: {exc.strerror}")
    return None


def _read_soul(live: LiveProfile) -> str | None:
    try:
        return (live.path / "SOUL.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        live.errors.append(f"{live.path / 'SOUL.md'}: {exc}")
        return None


def _read_avatar(live: LiveProfile) -> None:
    assets = live.path / "assets"
    for ext in AVATAR_EXTENSIONS:
        candidate = assets / f"avatar.{ext}"
        if candidate.is_file():
            live.avatar_files.append(ext)
            if live.avatar is None:
                live.avatar = (ext, hashlib.sha256(candidate.read_bytes()).hexdigest())
