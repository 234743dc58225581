"""Honcho config files a profile rename touches: `<profile>/honcho.json`, `<root>/honcho.json`, and
(read only, to say so in the plan) `~/.honcho/config.json` (docs/hermes/rename.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.adapters import fsio
from controller.adapters.home import HomeLayout
from controller.errors import ControllerError
from controller.hermes import DEFAULT_PROFILE
from controller.hermes.renaming import has_honcho_host


def files(root: Path, profile: str) -> list[Path]:
    """The Honcho config files inside the Hermes home that name profiles: the profile's, then the root's."""
    layout = HomeLayout(Path(root))
    return [layout.profile(profile).honcho, layout.profile(DEFAULT_PROFILE).honcho]


def user_file() -> Path:
    return Path.home() / ".honcho" / "config.json"


def read(path: Path) -> Any:
    """The parsed file, or None when it is missing or not JSON (Hermes skips such a file too)."""
    try:
        return fsio.read_json(path, "Honcho config", "")
    except ControllerError:  # unreadable or not JSON: Hermes' own migration skips it as well
        return None


def has_host(root: Path, old: str, profile: str) -> bool:
    """The old profile has a Honcho host block in a file of the home or in ~/.honcho."""
    return any(has_honcho_host(read(path), old) for path in [*files(root, profile), user_file()])


def rewrite(path: Path, change: Callable[[Any], dict[str, Any] | None]) -> bool:
    """Replace the file with `change(its data)` when that is not None, as Hermes writes it."""
    before = fsio.read_or_none(path) if path.is_file() else None
    if before is None:
        return False
    try:
        data = json.loads(before.decode("utf-8"))
    except ValueError:
        return False
    after = change(data)
    if after is None:
        return False
    text = json.dumps(after, indent=2, ensure_ascii=False) + "\n"
    fsio.atomic_write_text(path, text, mode=0o600, expect=before)
    return True
