"""The apply history: what each apply converged to, and replaying an entry for `rollback`.

An entry keeps the manifest documents as they were read (secret *references* only: a value is
never in a manifest, so never in the history), the files they name by path (`soul_file`, an
avatar `image`, a room `picture`) inlined, the folder each came from, and where the run came from
(git revision, digest, who, when), its counts and its exit status. `replay` turns an entry back
into validated manifests: the documents are parsed again, the files they name are written to a
scratch folder, and secret references resolve from the original folder, now (a rotated key is
the current one; a reference that no longer resolves stops the rollback before any write).

An entry also keeps the selection its run applied (`--bot`, `-l`: `desired.selection`, null for
the whole fleet; an entry written before it was recorded has none and was a whole-fleet run): the
documents are always the whole fleet's, but only the selected bots were converged to them, so a
rollback to the entry applies the same selection (docs/cli.md#rollback).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import history as store
from controller.core.selection import EVERY_BOT, Selection
from controller.core.types import Action
from controller.errors import ExitCode, HermesStateError, UsageError
from controller.manifests import loading, validating
from controller.manifests.validating import MAX_IMAGE_BYTES, MAX_SOUL_BYTES

SCHEMA_VERSION = 1
# Keys whose value names a file relative to the manifest (docs/manifest.md): kept with the entry.
FILE_KEYS = {"soul_file": MAX_SOUL_BYTES, "image": MAX_IMAGE_BYTES, "picture": MAX_IMAGE_BYTES}


@dataclass(kw_only=True)
class Snapshot:
    """The manifests of one run, as the history keeps them."""

    documents: list[dict[str, Any]]
    fleet_arg: str | None = None  # --fleet, for documents that name no fleet
    host: str | None = None  # the host slice applied (None: the whole fleet)
    command: str = "apply"  # apply | watch | rollback
    revision: str | None = None  # the git commit the manifests came from
    dirty: bool = False  # a manifest file differed from that commit
    rollback_of: int | None = None
    selection: Selection = EVERY_BOT  # a replayed entry's selection (recorded from the run's ApplyRequest)
    fingerprint: str = field(default="")
    packed: str | None = field(default=None, repr=False)  # `documents` as the entry's JSON, once `pack`ed

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.documents)

    def pack(self) -> None:
        """Hold the documents as the JSON text their entry stores, instead of as trees, until the
        entry is written: a tenth of the memory while the apply runs (10,000 bots: about 70 MB of
        dicts and lists). `documents` is empty afterwards; the entry is the same."""
        if self.packed is None:
            self.packed = store.documents_json(self.documents)
            self.documents = []


def fingerprint(documents: list[dict[str, Any]]) -> str:
    """What the documents say, wherever they were read from: the same for an entry and its rollback."""
    payload = [{"data": d["data"], "files": {k: _sha(v) for k, v in sorted(d.get("files", {}).items())}} for d in documents]
    return "sha256:" + hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(
    result: validating.ValidationResult,
    *,
    fleet_arg: str | None,
    host: str | None,
    command: str = "apply",
    revision: str | None = None,
) -> Snapshot:
    """The snapshot of validated manifests; from a git work tree, its commit (unless `revision` says)."""
    documents = [_document(doc) for doc in result.loaded]
    dirty = False
    if revision is None:
        found = store.git_revision(result.files)
        if found is not None:
            revision, dirty = found
    snap = Snapshot(documents=documents, fleet_arg=fleet_arg, host=host, command=command, revision=revision, dirty=dirty)
    snap.pack()
    return snap


def _document(doc: loading.Kept) -> dict[str, Any]:
    files: dict[str, str] = {}
    _collect_files(doc.data, doc.base_dir, files)
    return {
        "source": doc.source,
        "folder": str(Path(doc.secret_dir or doc.base_dir).resolve()),
        "data": doc.data,
        "files": files,
    }


def _collect_files(value: Any, base: Path, out: dict[str, str]) -> None:
    if isinstance(value, list):
        for item in value:
            _collect_files(item, base, out)
        return
    if not isinstance(value, dict):
        return
    for key, child in value.items():
        if key in FILE_KEYS and isinstance(child, str) and child not in out:
            with contextlib.suppress(OSError, ValueError):  # validation checked it; a vanished file is left out
                path = (base / child).resolve()
                if path.is_relative_to(base.resolve()):
                    out[child] = base64.b64encode(bounded.read_bytes(path, FILE_KEYS[key])).decode("ascii")
        else:
            _collect_files(child, base, out)


# --- the selection ----------------------------------------------------------------------------


def selection_record(selection: Selection) -> dict[str, Any] | None:
    """The selection as an entry keeps it: None for the whole fleet, else the bots named, the
    labels as `key=value` (as given to -l) and the whole as command-line arguments."""
    if not selection:
        return None
    return {
        "bots": sorted(selection.bots),
        "labels": [f"{key}={value}" for key, value in selection.labels],
        "args": selection.describe(),
    }


def selection_of(entry: dict[str, Any]) -> Selection:
    """The selection an entry's run applied; an entry without one (null, or written before it was
    recorded) was a whole-fleet run. A record of another shape is refused: replaying the whole
    fleet in its place would converge bots the run never touched."""
    found = (entry.get("desired") or {}).get("selection")
    if found is None:
        return EVERY_BOT
    bots, labels = (found.get("bots"), found.get("labels")) if isinstance(found, dict) else (None, None)
    if (
        isinstance(bots, list)
        and isinstance(labels, list)
        and all(isinstance(b, str) and b for b in bots)
        and all(isinstance(x, str) and "=" in x for x in labels)
        and (bots or labels)
    ):
        pairs = tuple(tuple(x.split("=", 1)) for x in labels)
        return Selection(frozenset(bots), tuple((k, v) for k, v in pairs))
    raise HermesStateError(
        f"history entry {entry.get('seq')}: its selection record is not {{bots, labels}}",
        hint="the entry was edited by hand; pick another entry with --to N",
    )


def selection_text(entry: dict[str, Any]) -> str:
    """The entry's selection as command-line arguments; "" for a whole-fleet run (or one unreadable)."""
    try:
        return selection_of(entry).describe()
    except HermesStateError:
        return "(unreadable)"


# --- recording --------------------------------------------------------------------------------


def counts(outcomes: list[Any], errors: int) -> dict[str, int]:
    done = [o.change.action for o in outcomes if o.ok]
    return {
        "created": sum(1 for a in done if a is Action.CREATE),
        "changed": sum(1 for a in done if a in (Action.UPDATE, Action.ADOPT, Action.RELEASE)),
        "deleted": sum(1 for a in done if a is Action.DELETE),
        "failed": sum(1 for o in outcomes if not o.ok) + errors,
    }


def exit_status(outcomes: list[Any], errors: int) -> int:
    """The exit code the apply ends with (docs/cli.md#exit-codes)."""
    failed = [o for o in outcomes if not o.ok]
    if any(o.conflict for o in failed):
        return int(ExitCode.CONFLICT)
    return int(ExitCode.FAILED) if failed or errors else int(ExitCode.OK)


def record(
    root: Path,
    fleet: str,
    snap: Snapshot,
    *,
    at: str,
    digest: str,
    files: list[str],
    outcomes: list[Any],
    errors: int,
    options: dict[str, bool],
    replaced: str | None,
    selection: Selection = EVERY_BOT,
) -> int:
    """Append one entry; returns its number. A run that changed nothing, for the manifests the newest
    entry already converged to cleanly, confirms that entry instead (`confirm`): no-op applies (a
    cron'd apply) never push the rollback point out of the kept entries."""
    keep = store.keep_limit(store.HISTORY_KEEP_ENV, store.HISTORY_KEEP)  # a bad value is refused on every run
    if not outcomes and not errors and (confirmed := confirm(root, fleet, snap, at=at, selection=selection)) is not None:
        return confirmed
    entry: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "fleet": fleet,
        "at": at,
        "who": store.who(),
        "command": snap.command,
        "source": {
            "revision": snap.revision,
            "dirty": snap.dirty,
            "digest": digest,
            "files": files,
            **({"rollback_of": snap.rollback_of} if snap.rollback_of is not None else {}),
        },
        "counts": counts(outcomes, errors),
        "exit": exit_status(outcomes, errors),
        "options": options,
        "desired": {
            "fingerprint": snap.fingerprint,
            "fleet_arg": snap.fleet_arg,
            "host": snap.host,
            "selection": selection_record(selection),
            "documents": snap.documents if snap.packed is None else store.PACKED,
        },
    }
    if replaced:
        entry["replaced"] = replaced
    return store.append(root, fleet, entry, keep=keep, documents=snap.packed)


def confirm(root: Path, fleet: str, snap: Snapshot, *, at: str, selection: Selection = EVERY_BOT) -> int | None:
    """Mark the newest entry as confirmed at `at` when it applied these manifests (same fingerprint,
    host and selection) cleanly; returns its number, or None when a new entry is needed."""
    kept = store.sequence_numbers(root, fleet)
    if not kept:
        return None
    try:
        last = store.read(root, fleet, kept[-1])
    except HermesStateError:
        return None  # unreadable: a new entry, the others stay usable
    desired = (last or {}).get("desired")
    if last is None or last.get("exit") != 0 or not isinstance(desired, dict):
        return None
    if desired.get("fingerprint") != snap.fingerprint or desired.get("host") != snap.host:
        return None
    if desired.get("selection") != selection_record(selection):
        return None  # a no-op of other bots (or of all) says nothing of what this entry applied
    before = last.get("confirmed")
    times = before.get("times") if isinstance(before, dict) else None
    last["confirmed"] = {
        "at": at,
        "who": store.who(),
        "command": snap.command,
        "revision": snap.revision,
        "times": (times if isinstance(times, int) and times > 0 else 0) + 1,
    }
    store.rewrite(root, fleet, last)
    return int(kept[-1])


# --- reading ----------------------------------------------------------------------------------


def pick_fleet(root: Path, fleet: str | None) -> str:
    """--fleet, or the one fleet with a history in this home."""
    if fleet is not None:
        return fleet
    found = store.fleets(root)
    if len(found) == 1:
        return found[0]
    if not found:
        raise UsageError(f"no apply history in {root}", hint="apply records one entry per run; check --home")
    raise UsageError(f"several fleets have a history in {root}: {', '.join(found)}", hint="pick one with --fleet NAME")


def entries(root: Path, fleet: str, shrink: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every kept entry, oldest first; one that cannot be read is `{seq, unreadable: why}` (the
    others stay usable; `rollback` never picks it).

    `shrink` turns each entry into what the caller keeps of it as soon as it is read: an entry
    holds the manifests it converged to (10,000 bots: 7.5 MB of JSON, about 15 MB once read), so
    fifty whole entries held at once cost about 0.8 GB.
    """
    out: list[dict[str, Any]] = []
    for seq in store.sequence_numbers(root, fleet):
        try:
            entry = store.read(root, fleet, seq)
        except HermesStateError as exc:
            out.append({"seq": seq, "unreadable": str(exc)})
            continue
        if entry is not None:
            out.append(shrink(entry) if shrink is not None else entry)
        entry = None  # with `shrink`, the whole entry is freed before the next one is read
    return out


def without_documents(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry less its manifests (`entries(shrink=...)` for callers that read only its record)."""
    desired = {k: v for k, v in (entry.get("desired") or {}).items() if k != "documents"}
    return {**entry, "desired": desired}


def entry(root: Path, fleet: str, seq: int) -> dict[str, Any]:
    found = store.read(root, fleet, seq) if seq > 0 else None
    if found is None:
        kept = store.sequence_numbers(root, fleet)
        span = f"entries {kept[0]} to {kept[-1]} are kept" if kept else "there are no entries"
        raise UsageError(f"fleet {fleet!r} has no history entry {seq}", hint=f"{span}: see `hermes-fleet history`")
    return found


def rollback_target(all_entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The state before the latest one: the newest earlier entry that applied cleanly (exit 0),
    converged to other manifests than the latest entry did, and covered every bot the latest run
    did (the whole fleet, or the latest's own selection): an entry of a narrower selection would
    leave some of the latest run's bots where it put them."""
    if not all_entries:
        raise UsageError("there is no apply history to roll back to", hint="apply records one entry per run")
    readable = [e for e in all_entries if "unreadable" not in e]
    if not readable:
        raise UsageError("no history entry can be read", hint="see `hermes-fleet history`")
    latest = readable[-1]
    want = latest.get("desired", {}).get("fingerprint")
    covering = (None, latest.get("desired", {}).get("selection"))
    for candidate in readable[:-1][::-1]:  # newest first (reversed() of a list of dicts of Any types as Any)
        desired = candidate.get("desired", {})
        if candidate.get("exit") == 0 and desired.get("fingerprint") != want and desired.get("selection") in covering:
            return candidate
    raise UsageError(
        f"no earlier entry than {latest['seq']} applied other manifests cleanly to (at least) the bots it applied",
        hint="pick one with --to N (see `hermes-fleet history`)",
    )


# --- replaying --------------------------------------------------------------------------------


# Characters a YAML file may not hold raw (YAML 1.2, 5.1) or reads as a line break (5.4: U+0085,
# U+2028, U+2029) that JSON leaves raw: escaped instead.
_NOT_YAML_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def as_yaml_text(data: Any) -> str:
    """`data` as text the manifest loader reads back as the same value: JSON (which is YAML), with
    the characters YAML refuses raw (a `\\x80` a manifest wrote as an escape) written as escapes."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return _NOT_YAML_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@contextlib.contextmanager
def replay(found: dict[str, Any]) -> Iterator[tuple[validating.ValidationResult, Snapshot]]:
    """The entry's manifests, validated again (ManifestError-free is up to the caller to check),
    with the files they name in a scratch folder that lives as long as the block."""
    desired = found.get("desired") or {}
    documents = desired.get("documents")
    if not isinstance(documents, list) or not documents:
        raise UsageError(f"history entry {found.get('seq')} holds no manifests", hint="pick another entry with --to N")
    label = f"history entry {found['seq']}"
    with tempfile.TemporaryDirectory(prefix="hermes-fleet-rollback-") as scratch:
        parsed: list[loading.Document] = []
        for i, doc in enumerate(documents):
            folder = Path(scratch) / str(i)
            folder.mkdir()
            for rel, encoded in (doc.get("files") or {}).items():
                target = (folder / rel).resolve()
                if not target.is_relative_to(folder.resolve()):
                    continue  # validation refuses such a path; never write outside the scratch folder
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(base64.b64decode(encoded))
            source = f"{label}: {doc.get('source', '?')}"
            text = as_yaml_text(doc.get("data"))
            for part in loading.parse_text(text, source=source, base_dir=folder):
                part.secret_dir = Path(str(doc.get("folder") or folder))
                parsed.append(part)
        result = validating.validate(parsed, fleet=desired.get("fleet_arg"), files=[str(d.get("source")) for d in documents])
        snap = Snapshot(
            documents=[dict(d) for d in documents],
            fleet_arg=desired.get("fleet_arg"),
            host=desired.get("host"),
            command="rollback",
            revision=(found.get("source") or {}).get("revision"),
            dirty=bool((found.get("source") or {}).get("dirty")),
            rollback_of=int(found["seq"]),
            selection=selection_of(found),
            fingerprint=str(desired.get("fingerprint") or ""),
        )
        yield result, snap
