"""The Hermes versions hermes-fleet writes for, and what differs between them (docs/hermes/versions.md).

A version string is compared by its numeric release parts. 0.19.0 is the released version the
compatibility and effect suites run against; "main" means a newer Hermes built from the main
branch (Bot Mode, rooms, peers), whose keys are written from the contract in docs/hermes/.
"""

from __future__ import annotations

import re

TESTED = "0.19.0"  # the suites in tests/compat and tests/effect run against this release
NEWEST_KNOWN = (0, 19, 0)


def parse(version: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of `0.19.0`, `v0.19.0`, `0.19.0.dev3`; None when it is not a version."""
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", version.strip())
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def has_bot_mode(version: str | None) -> bool:
    """Whether that Hermes reads Bot Mode state (ui_meta, loop guard, bot-mode protocol, peers).

    0.19.0 and older do not; a newer or unknown-but-newer version is assumed to (main has it).
    """
    parsed = parse(version) if version else None
    return parsed is None or parsed > NEWEST_KNOWN


def unknown_newer(version: str | None) -> bool:
    parsed = parse(version) if version else None
    return parsed is not None and parsed > NEWEST_KNOWN


def multiplexer_ticks_served_stores(version: str | None) -> bool:
    """Whether a multiplexing gateway ticks the cron store of every profile it serves.

    0.19.0 does not: its ticker serves only the gateway's own HERMES_HOME (docs/hermes/cron.md#scheduler);
    main does. An unknown version is taken as main, as everywhere else here.
    """
    return has_bot_mode(version)
