"""Hermes' wrapper aliases: `~/.local/bin/<profile>`, a shell script running `hermes -p <profile>`,
outside the Hermes home (docs/hermes/rename.md#what-hermes-fleet-leaves-to-the-user). Read only:
hermes-fleet never writes there; a rename's plan notes an alias left to update.
"""

from __future__ import annotations

from pathlib import Path

from controller import bounded

READ_LIMIT = 8192  # Hermes reads at most this much of a wrapper (profiles.py _WRAPPER_READ_LIMIT)


def wrapper_dir() -> Path:
    return Path.home() / ".local" / "bin"


def has_wrapper(profile: str) -> bool:
    """`~/.local/bin/<profile>` is a wrapper Hermes would remove: a regular file whose text holds
    `hermes -p` (0.19.0 `hermes_cli/profiles.py:remove_wrapper_script`)."""
    try:
        head = bounded.read_bytes(wrapper_dir() / profile, 1 << 20)[:READ_LIMIT]
    except OSError:  # missing, not a regular file, unreadable or over a megabyte: not a wrapper
        return False
    return b"hermes -p" in head
