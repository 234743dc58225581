"""The inventory file and the owner marker (the value type is `controller.core.inventory.Inventory`).

One JSON file per fleet under `<root>/.hermes-fleet/inventory/<fleet>.json` (atomic, 0600), plus a
marker file in every owned profile (`.hermes-fleet-owner.json`) so a crash between publishing a
profile and saving the inventory still leaves the profile recognisably ours.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import fsio, homebounds
from controller.adapters.home import OWNER_MARKER, HomeLayout, check_state_path
from controller.adapters.sharing import Sharer
from controller.errors import HermesStateError
from controller.hermes import DEFAULT_PROFILE
from controller.hermes.naming import profile_name_problem

MARKER = OWNER_MARKER
MAX_MARKER_BYTES = 64 * 1024
# About 4 KB per bot with three routines (41 MB at 10,000 bots): far above fsio's 64 MiB default.
MAX_INVENTORY_BYTES = 512 * 1024 * 1024


def inventory_dir(root: Path) -> Path:
    return HomeLayout(root).state.inventory


def inventory_path(root: Path, fleet: str) -> Path:
    return inventory_dir(root) / f"{fleet}.json"


def read(root: Path, fleet: str) -> dict[str, Any] | None:
    """The inventory document of `fleet` (None when there is none yet)."""
    path = inventory_path(root, fleet)
    check_state_path(root, path)
    # unreadable, a FIFO, too large, not JSON: a HermesStateError
    data = fsio.read_json(
        path, "the inventory", "restore it from a backup or move it away to start over (then apply --adopt)", MAX_INVENTORY_BYTES
    )
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("fleet") != fleet or not isinstance(data.get("objects"), dict):
        raise HermesStateError(
            f"{path} is not an inventory of fleet {fleet!r}",
            path=str(path),
            hint="move it away and apply with --adopt to rebuild it",
        )
    problem = shape_problem(data)
    if problem:
        raise HermesStateError(
            f"{path}: {problem}",
            path=str(path),
            hint="restore it from a backup, or move it away and apply with --adopt to rebuild it",
        )
    _check_keys(path, data)
    _share_applied(data["objects"])
    return data


_TEXT_FIELDS = ("job_id", "updated_at", "renamed_from")  # of an object's record, read as text


def shape_problem(data: dict[str, Any]) -> str:
    """What in an inventory document has a type hermes-fleet never writes there ("" when nothing):
    a record that is not a map, an `applied` that is not a map with text keys, and so on."""
    if not isinstance(data.get("history", []), list) or not all(isinstance(h, dict) for h in data.get("history") or []):
        return "`history` is not a list of maps"
    if not isinstance(data.get("last_apply") or {}, dict):
        return "`last_apply` is not a map"
    if not isinstance(data.get("salt") or "", str):
        return "`salt` is not text"
    for key, entry in data["objects"].items():
        if not isinstance(entry, dict):
            return f"the record of {key!r} is not a map"
        applied = entry.get("applied", {})
        if not isinstance(applied, dict) or not all(isinstance(k, str) for k in applied):
            return f"`applied` of {key!r} is not a map of fields"
        for name in _TEXT_FIELDS:
            if not isinstance(entry.get(name) or "", str):
                return f"`{name}` of {key!r} is not text"
    return ""


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    """Every key names an object this tool makes: a bot's name becomes a path, and `bot/../x` would
    have a release remove a marker outside the home (HermesStateError naming the key)."""
    restored = data.get("restored")
    restored_keys = [f"bot/{bot}" for bot in restored] if isinstance(restored, dict) else []
    for bot, entries in restored.items() if isinstance(restored, dict) else ():
        restored_keys.extend(entries if isinstance(entries, dict) else [f"bot/{bot}/"])
    for key in [*data["objects"], *restored_keys]:
        problem = key_problem(key)
        if problem is not None:
            raise HermesStateError(
                f"{path}: the key {key!r} names no object hermes-fleet makes ({problem})",
                path=str(path),
                hint="remove that entry from the inventory (or move the file away and apply with --adopt to rebuild it)",
            )


def key_problem(key: object) -> str | None:
    """Why `key` is not an inventory key this tool makes (core.inventory: `install/root`,
    `bot/<name>`, `routine/<bot>/<title>`, `room/<name>`), or None. A bot's name becomes a path
    (`profiles/<name>`): only a Hermes profile name (or `default`) is one, never `..` or a `/`."""
    if not isinstance(key, str):
        return "a key is not a string"
    kind, _, name = key.partition("/")
    if key == "install/root" or (kind == "room" and name and name.isprintable()):
        return None
    if kind == "routine":
        name, _, title = name.partition("/")
        if not title:
            return "a routine key is routine/<bot>/<title>"
    elif kind != "bot":
        return "a key is install/root, bot/<name>, routine/<bot>/<title> or room/<name>"
    if name == DEFAULT_PROFILE:
        return None
    problem = profile_name_problem(name)
    return f"the bot name is no Hermes profile name: {problem}" if problem else None


def _share_applied(objects: dict[str, Any]) -> None:
    """Hold equal lists of scalars and short strings of the `applied` records once (memory: each
    bot's record repeats its toolsets for every platform, 22 lists). The records are values that
    are replaced, never changed in place, so sharing them is safe."""
    pool = Sharer()
    for entry in objects.values():
        if isinstance(entry, dict) and isinstance(entry.get("applied"), dict):
            entry["applied"] = pool.share(entry["applied"])


def write(root: Path, fleet: str, data: dict[str, Any]) -> None:
    """Replace the inventory document of `fleet` atomically (0600)."""
    folder = inventory_dir(root)
    # A full disk, a read-only home: fsio's clear HermesStateError; the old inventory stays.
    check_state_path(root, folder)
    fsio.make_dirs(folder, mode=0o700)
    fsio.atomic_write_bytes(inventory_path(root, fleet), render_chunks(data), mode=0o600)


def render(data: dict[str, Any]) -> str:
    """The document as JSON with one object per line (`objects` last, keys sorted)."""
    return render_bytes(data).decode("ascii")


def render_bytes(data: dict[str, Any]) -> bytes:
    return b"".join(render_chunks(data))


def render_chunks(data: dict[str, Any]) -> Iterator[bytes]:
    """`render`, encoded, object by object: `write` puts each piece into the file as it is made,
    so the 40 MB of 10,000 bots x 3 routines never exist whole in memory.

    Compact JSON goes through the C encoder; `indent=` would take the pure-Python one, 4-6x slower
    (7.5 s instead of 1.3 s for the 40,000 objects of 10,000 bots x 3 routines). `ensure_ascii`
    (json's default) makes every piece ASCII.
    """

    def compact(value: Any) -> bytes:
        return json.dumps(value, sort_keys=True, default=str, separators=(",", ":")).encode("ascii")

    yield b"{\n"
    for key in sorted(k for k in data if k != "objects"):
        yield compact(key) + b":" + compact(data[key]) + b",\n"
    objects = data.get("objects", {})
    if not objects:
        yield b'"objects":{}\n}\n'
        return
    yield b'"objects":{\n'
    for n, key in enumerate(sorted(objects)):
        yield (b",\n" if n else b"") + compact(key) + b":" + compact(objects[key])
    yield b"\n}\n}\n"


def all_fleets(root: Path) -> list[str]:
    folder = inventory_dir(root)
    if not folder.is_dir():
        return []
    with fsio.mapped("list", folder):
        names = os.listdir(folder)
    return sorted(n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith("."))


# --- the marker inside each owned profile ------------------------------------------------------


def read_marker(root: Path, name: str) -> dict[str, Any] | None:
    """The owner marker of profile `name`, if it is valid *for that profile* (a clone's copy is not)."""
    data = read_marker_any(root, name)
    return data if data is not None and data["profile"] == name else None


def read_marker_any(root: Path, name: str) -> dict[str, Any] | None:
    """The owner marker inside profile `name`'s folder whatever profile it names (after a rename cut
    short, the moved folder still holds the old name's marker)."""
    return read_marker_checked(root, name)[0]


def read_marker_checked(root: Path, name: str) -> tuple[dict[str, Any] | None, str]:
    """(the marker or None, why a marker file that is there cannot be read: "" when it is absent or
    readable). A bot can write its own folder: a marker it spoiled puts that bot in error rather
    than reading as "no marker", which would make its profile look hand-made (a conflict that
    refuses the whole apply)."""
    path = HomeLayout(root).profile(name).owner_marker
    try:
        data = homebounds.parse_json(bounded.read_bytes(path, MAX_MARKER_BYTES).decode("utf-8"), str(path), "marker", "")
    except FileNotFoundError:
        return None, ""
    except HermesStateError as exc:
        return None, exc.message
    except (OSError, ValueError) as exc:  # unreadable, not a file, not UTF-8 or not JSON
        return None, f"{path}: the owner marker cannot be read ({type(exc).__name__})"
    if not isinstance(data, dict) or not isinstance(data.get("profile"), str) or not isinstance(data.get("fleet"), str):
        return None, f"{path}: the owner marker is not one hermes-fleet writes"
    return data, ""


def marker_text(fleet: str, name: str) -> str:
    return (
        json.dumps(
            {
                "fleet": fleet,
                "profile": name,
                "managed_by": "hermes-fleet",
                "note": "This profile is managed by hermes-fleet; see docs/cli.md",
            },
            indent=1,
        )
        + "\n"
    )


def write_marker(directory: Path, fleet: str, name: str) -> None:
    fsio.atomic_write_text(directory / MARKER, marker_text(fleet, name), mode=0o644)


def remove_marker(directory: Path) -> None:
    fsio.remove(directory / MARKER)  # through its checked folder (fsio.pinned): never out of the home


def now_iso() -> str:
    # Interned: the records of one run share their few distinct time stamps (memory).
    return sys.intern(datetime.now(UTC).isoformat(timespec="seconds"))
