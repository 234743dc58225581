"""The apply history and the kept copies of replaced files, on disk (docs/cli.md#history).

`<root>/.hermes-fleet/history/<fleet>/<seq>.json` (mode 0600, folder 0700): one entry per apply,
each written whole with one atomic rename, so a kill mid-write leaves every earlier entry as it
was (the write in progress is only a temp file the next apply sweeps). The newest `keep` entries
stay (`HERMES_FLEET_HISTORY_KEEP`, default 50); older ones are removed after a new one lands. An
apply that changes nothing rewrites the newest entry (its `confirmed` record: `rewrite`) instead.

`<root>/.hermes-fleet/replaced/<seq>-<stamp>/<path in the home>` (files 0600, folders 0700): what a
managed file held before an apply overwrote a hand edit in it; the newest
`HERMES_FLEET_REPLACED_KEEP` runs' folders stay (default 20), newest by sequence number, not by
clock (a clock set back would otherwise make a run delete the copy it had just made).

This module decides nothing: what an entry says is `controller.engine.history`'s.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from controller.adapters import fsio
from controller.adapters.home import HomeLayout, check_state_path
from controller.errors import HermesStateError, UsageError

HISTORY_KEEP_ENV = "HERMES_FLEET_HISTORY_KEEP"
REPLACED_KEEP_ENV = "HERMES_FLEET_REPLACED_KEEP"
HISTORY_KEEP = 50
REPLACED_KEEP = 20
ENTRY = re.compile(r"^(\d{6,})\.json$")
STAMP = re.compile(r"^\d{8}T\d{6}\d{6}Z$")  # a run's folder before it had a sequence number
RUN = re.compile(r"^(\d{6,})-(\d{8}T\d{6}\d{6}Z)$")  # <seq>-<stamp>: ordered by seq, whatever the clock
GIT_TIMEOUT = 5.0


def keep_limit(variable: str, default: int) -> int:
    """A retention bound from the environment: a whole number from 1 to 100,000."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise UsageError(f"{variable}={raw!r} is not a whole number from 1 to 100000", hint=f"unset it to keep {default}")
    return int(raw)


def history_dir(root: Path, fleet: str) -> Path:
    return HomeLayout(root).state.history / fleet


def replaced_dir(root: Path) -> Path:
    return HomeLayout(root).state.replaced


def entry_path(root: Path, fleet: str, seq: int) -> Path:
    return history_dir(root, fleet) / f"{seq:06d}.json"


def sequence_numbers(root: Path, fleet: str) -> list[int]:
    folder = history_dir(root, fleet)
    check_state_path(root, folder)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise fsio.state_error(exc, "list", folder) from exc
    return sorted(int(m.group(1)) for n in names if (m := ENTRY.match(n)))


def fleets(root: Path) -> list[str]:
    folder = HomeLayout(root).state.history
    if not folder.is_dir():
        return []
    with fsio.mapped("list", folder):
        return sorted(n for n in os.listdir(folder) if not n.startswith(".") and (folder / n).is_dir())


# Stands for `desired.documents` in an entry whose documents were rendered beforehand (`append`).
PACKED = "\x00documents rendered apart\x00"


def documents_json(documents: list[dict[str, Any]]) -> str:
    """The documents exactly as `append` writes them inside an entry."""
    return _dumps(documents)


def _dumps(value: Any) -> str:
    # Compact: json's C encoder (indent= takes the pure-Python one, several seconds and hundreds of
    # MB for the manifests of 10,000 bots); `jq . <entry>` shows it indented.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def append(root: Path, fleet: str, entry: dict[str, Any], *, keep: int, documents: str | None = None) -> int:
    """Write `entry` as the next one (its `seq` is set here); drop the oldest beyond `keep`.

    `documents`: the text of `entry["desired"]["documents"]` (`documents_json`), which then holds
    `PACKED`; the file is byte for byte the one the documents themselves give.
    """
    folder = history_dir(root, fleet)
    check_state_path(root, folder)
    fsio.make_dirs(folder, mode=0o700)
    existing = sequence_numbers(root, fleet)
    seq = (existing[-1] if existing else 0) + 1
    entry["seq"] = seq
    text = _dumps(entry) + "\n"
    if documents is not None:
        # Keys are sorted: `desired` comes after `at`, `command` and `counts`, and `documents` first in it.
        marker = '"desired":{"documents":' + _dumps(PACKED)
        head, found, tail = text.partition(marker)
        if not found:
            raise ValueError("history entry without its documents marker")
        text = "".join((head, '"desired":{"documents":', documents, tail))
    fsio.atomic_write_text(entry_path(root, fleet, seq), text, mode=0o600)
    for old in [*existing, seq][:-keep]:
        fsio.remove(entry_path(root, fleet, old))
    return seq


def rewrite(root: Path, fleet: str, entry: dict[str, Any]) -> None:
    """Replace kept entry `entry["seq"]` whole (one atomic rename, as `append` writes it)."""
    seq = int(entry["seq"])
    check_state_path(root, history_dir(root, fleet))
    fsio.atomic_write_text(entry_path(root, fleet, seq), _dumps(entry) + "\n", mode=0o600)


def read(root: Path, fleet: str, seq: int) -> dict[str, Any] | None:
    """Entry `seq` of `fleet` (None when there is none); HermesStateError when it does not parse."""
    path = entry_path(root, fleet, seq)
    check_state_path(root, path)
    data = fsio.read_json(path, "history entry", "move the file away; the other entries stay usable")
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("seq") != seq:
        raise HermesStateError(f"{path} is not a history entry", path=str(path), hint="move the file away")
    problem = _shape_problem(data)
    if problem:
        raise HermesStateError(f"{path}: {problem}", path=str(path), hint="move the file away; the other entries stay usable")
    return data


def _shape_problem(entry: dict[str, Any]) -> str:
    """What in an entry has a type hermes-fleet never writes there ("" when nothing)."""
    for name in ("desired", "source", "counts"):
        if not isinstance(entry.get(name) or {}, dict):
            return f"`{name}` is not a map"
    documents = (entry.get("desired") or {}).get("documents") or []
    if not isinstance(documents, list) or not all(
        isinstance(d, dict) and isinstance(d.get("files") or {}, dict) for d in documents
    ):
        return "`desired.documents` is not a list of documents"
    counts = entry.get("counts") or {}
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values()):
        return "`counts` holds a value that is not a whole number"
    return ""


# --- where an apply came from ------------------------------------------------------------------


def who() -> str:
    """user@host of the run (the user id when the system has no name for it)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def git_revision(paths: list[str]) -> tuple[str, bool] | None:
    """(commit, dirty) when every manifest file lies in one git work tree, else None.

    `dirty`: a file in the manifests' folders (a manifest, a soul_file, an image) differs from that
    commit: edited, or not committed yet. Only reads.
    """
    real = [Path(p).resolve() for p in paths if p != "-"]
    if not real or len(real) != len(paths):
        return None
    folders = {p if p.is_dir() else p.parent for p in real}
    if not all(_may_be_in_git(folder) for folder in folders):
        return None  # no `git` process for manifests outside any work tree (each apply's start-up)
    tops = {_git(folder, "rev-parse", "--show-toplevel") for folder in folders}
    if len(tops) != 1 or None in tops:
        return None
    top = next(iter(tops))
    assert top is not None
    commit = _git(Path(top), "rev-parse", "--verify", "-q", "HEAD")
    if not commit:
        return None
    status = _git(Path(top), "status", "--porcelain", "--", *sorted(map(str, folders)))
    return commit, bool(status)


def _may_be_in_git(folder: Path) -> bool:
    """False only when git could not find a repository for `folder`: no `.git` (folder or file)
    in it or any parent, and none named by the environment (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR;
    the other variables of git's discovery only make it find less)."""
    if any(os.environ.get(key) for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")):
        return True
    return any(os.path.lexists(os.path.join(parent, ".git")) for parent in (folder, *folder.parents))


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


# --- replaced content ---------------------------------------------------------------------------


def keep_replaced(root: Path, stamp: str, path: Path) -> Path | None:
    """Copy what `path` (a file of the home) holds now into replaced/<stamp>/, before it is overwritten.

    The copy is 0600 in 0700 folders whatever the file's mode (it may be a `.env`). Returns the
    copy's path, or None when there is no file to keep. A new run's folder drops the oldest beyond
    the retention bound.
    """
    data = fsio.read_bounded(path)
    if data is None:
        return None
    check_state_path(root, replaced_dir(root))
    run_dir, fresh = _run_dir(root, stamp)
    target = run_dir / Path(path).relative_to(root)
    folder = replaced_dir(root)
    for part in target.parent.relative_to(folder).parts:  # each level 0700 (mkdir -p gives parents 0777)
        folder = folder / part
        fsio.make_dirs(folder, mode=0o700)
    fsio.atomic_write_bytes(target, data, mode=0o600)
    if fresh:
        trim_replaced(root, keep_limit(REPLACED_KEEP_ENV, REPLACED_KEEP))
    return target


def _runs(root: Path) -> list[str]:
    """The runs' folders, oldest first: by sequence number (a clock set back never reorders them),
    after the folders named by their time alone (made before the sequence numbers)."""
    try:
        names = os.listdir(replaced_dir(root))
    except OSError:
        return []
    legacy = sorted(n for n in names if STAMP.match(n))
    return legacy + sorted((n for n in names if RUN.match(n)), key=lambda n: int(n.partition("-")[0]))


def _run_dir(root: Path, stamp: str) -> tuple[Path, bool]:
    """This run's folder (`<seq>-<stamp>`) and whether it is new: the next sequence number."""
    runs = _runs(root)
    for name in runs:
        if (m := RUN.match(name)) and m.group(2) == stamp:
            return replaced_dir(root) / name, False
    seqs = [int(m.group(1)) for n in runs if (m := RUN.match(n))]
    return replaced_dir(root) / f"{max(seqs, default=0) + 1:06d}-{stamp}", True


def trim_replaced(root: Path, keep: int) -> None:
    folder = replaced_dir(root)
    for name in _runs(root)[:-keep]:
        old = folder / name
        if old.is_dir() and not old.is_symlink():
            with contextlib.suppress(FileNotFoundError), fsio.mapped("remove", old):
                shutil.rmtree(old)
