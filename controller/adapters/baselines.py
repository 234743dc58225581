"""The hand-edit baseline file: `<root>/.hermes-fleet/baseline/<fleet>.json` (atomic, 0600).

What each managed profile's unmanaged keys were after the apply that last wrote it, as keyed
digests (core/handedits.py); never a value. Layout:

    {"schemaVersion": 1, "fleet": "acme",
     "maps": {"<id>": {"approvals.mode": "<digest>", ...}},
     "profiles": {"alpha": {"at": "<time>", "files": {"config.yaml": "<id>", ".env": "<id>", "profile.yaml": "<id>"},
                            "since": {"profile.yaml": "<time>"}}}}

`since` (optional) names a file recorded later than the others (a baseline written before that
file was recorded gets it at the next apply, without recording the others afresh).

Equal maps are stored once (bots alike in their unmanaged keys share one). The file lives in the
home, which a bot can write: it is read within a bound and checked for its shape, and one that is
not this shape is no baseline (the next apply writes it afresh).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.adapters import fsio
from controller.adapters.home import HomeLayout, ProfileLayout, check_state_path
from controller.errors import ControllerError

VERSION = 1
# The files recorded (core/handedits.py FILES; adapters do not import core).
FILES = (ProfileLayout.CONFIG, ProfileLayout.ENV, ProfileLayout.META)
MAX_BYTES = 64 * 1024 * 1024


def baseline_path(root: Path, fleet: str) -> Path:
    return HomeLayout(root).state.baseline / f"{fleet}.json"


def read(root: Path, fleet: str) -> tuple[dict[str, Any] | None, str]:
    """(the baseline document, "") or (None, why there is none usable: "" when there is no file)."""
    path = baseline_path(root, fleet)
    try:
        check_state_path(root, path)
        data = fsio.read_json(path, "the hand-edit baseline", "", MAX_BYTES)
    except ControllerError as exc:
        return None, exc.message
    if data is None:
        return None, ""
    problem = shape_problem(data, fleet)
    return (None, f"{path}: {problem}") if problem else (data, "")


def shape_problem(data: Any, fleet: str) -> str:
    if not isinstance(data, dict) or data.get("schemaVersion") != VERSION or data.get("fleet") != fleet:
        return f"not a hand-edit baseline of fleet {fleet!r}"
    maps, profiles = data.get("maps"), data.get("profiles")
    if not isinstance(maps, dict) or not isinstance(profiles, dict):
        return "`maps` and `profiles` are not maps"
    for digests in maps.values():
        if not isinstance(digests, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
            return "a map of digests holds something else than text"
    for entry in profiles.values():
        if not isinstance(entry, dict) or not isinstance(entry.get("at"), str) or not isinstance(entry.get("files"), dict):
            return "a profile's record is not {at, files}"
        if any(file not in FILES or ref not in maps for file, ref in entry["files"].items()):
            return "a profile's record names an unknown file or map"
        since = entry.get("since", {})
        if not isinstance(since, dict) or any(f not in entry["files"] or not isinstance(t, str) for f, t in since.items()):
            return "a profile's `since` is not a map of its files to times"
    return ""


def write(root: Path, fleet: str, data: dict[str, Any]) -> None:
    path = baseline_path(root, fleet)
    check_state_path(root, path.parent)
    fsio.make_dirs(path.parent, mode=0o700)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"
    fsio.atomic_write_bytes(path, text.encode("ascii"), mode=0o600)
