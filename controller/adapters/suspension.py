"""A suspended home: `hermes-fleet suspend` writes `.hermes-fleet/suspended.json` (who, when, why),
`resume` removes it (docs/cli.md#suspend-and-resume). While it is there `watch` changes nothing and
`apply` refuses without `--force`.

A file that is there but cannot be read counts as a suspension (fail closed): an operator who
suspended a home must not find it changed because the record was damaged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from controller.adapters import fsio
from controller.adapters.home import StateLayout, check_state_path, state_dir
from controller.errors import ContainmentError, HermesStateError

FILE = StateLayout.SUSPENDED
MAX_BYTES = 16 * 1024  # the record is a few hundred bytes
MAX_REASON = 500  # characters of --reason


@dataclass(frozen=True, kw_only=True)
class Suspension:
    by: str  # user@host that suspended the home
    at: str  # ISO 8601, UTC
    reason: str = ""

    def describe(self) -> str:
        return f"suspended by {self.by} at {self.at}" + (f": {self.reason}" if self.reason else "")

    def to_json(self) -> dict[str, str]:
        return {"by": self.by, "at": self.at, "reason": self.reason}


def path_of(root: Path) -> Path:
    return state_dir(root) / FILE


def read(root: Path) -> Suspension | None:
    """The home's suspension; None when it is not suspended."""
    path = path_of(root)
    try:
        check_state_path(root, path)
        data = fsio.read_json(path, "the suspension record", "run `hermes-fleet resume` to remove it", MAX_BYTES)
    except (HermesStateError, ContainmentError) as exc:
        return Suspension(by="unknown", at="unknown", reason=f"the suspension record cannot be read ({exc})")
    if data is None:
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k, ""), str) for k in ("by", "at", "reason")):
        return Suspension(by="unknown", at="unknown", reason=f"{path} is not a suspension record")
    by, at, reason = (_one_line(data.get(k) or "", 500) for k in ("by", "at", "reason"))
    return Suspension(by=by or "unknown", at=at or "unknown", reason=reason)


def _one_line(text: str, limit: int) -> str:
    """A hand-edited record's field as one printable line: control characters (a newline would
    forge a line of `status`) written as escapes, cut at `limit` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return out + ("..." if len(text) > limit else "")


def write(root: Path, suspension: Suspension) -> None:
    path = path_of(root)
    check_state_path(root, path)
    fsio.make_dirs(path.parent, mode=0o700)
    fsio.atomic_write_text(path, json.dumps(suspension.to_json(), indent=1) + "\n", mode=0o600)


def clear(root: Path) -> bool:
    """Remove the record; True when there was one."""
    path = path_of(root)
    check_state_path(root, path)
    return fsio.remove(path)
