"""Where the Hermes root and each profile live, by Hermes' own rules.

Mirrors `get_default_hermes_root()` of hermes-agent (docs/hermes/home.md#root): `--home`, else
HERMES_HOME (a path under `<root>/profiles/<name>` maps back to the root), else `~/.hermes`.
"""

from __future__ import annotations

import os
from pathlib import Path

from controller.hermes import DEFAULT_PROFILE

STATE_DIR = ".hermes-fleet"  # our own state under the root: inventory, lock, backups


def resolve_root(explicit: str | os.PathLike[str] | None = None) -> Path:
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
