"""The reconciler's status file, `.hermes-fleet/watch-status.json` (docs/watch.md#status-file):
written after every pass, read by `status` and by the next reconciler (what the webhooks last heard,
the last good revision)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from controller import bounded
from controller.adapters import fsio, homebounds
from controller.adapters.home import StateLayout, check_state_path, state_dir
from controller.adapters.sources import GitSource, LocalSource
from controller.codes import FindingSeverity, HealthCode, WatchResult
from controller.core import health as health_core
from controller.core.watching import Run
from controller.errors import ContainmentError, ControllerError, HermesStateError
from controller.redact import redact_text, redact_url

if TYPE_CHECKING:
    from controller.engine.watching import Reconciler

STATUS_FILE = StateLayout.WATCH_STATUS


def read_status(root: Path) -> dict[str, Any] | None:
    """The reconciler's status file; None when there is none, or it is unreadable or not ours."""
    path = state_dir(root) / STATUS_FILE
    try:
        check_state_path(root, path)
        data = homebounds.parse_json(bounded.read_bytes(path, fsio.MAX_STATE_BYTES).decode("utf-8"), str(path), "", "")
    except (OSError, ValueError, ContainmentError, HermesStateError):
        return None
    if not _status_shaped(data):
        return None
    if isinstance(data.get("source"), str):  # a file an older version wrote may hold a credential
        data["source"] = redact_text(data["source"])
    return data


def _status_shaped(data: Any) -> TypeGuard[dict[str, Any]]:
    """The types `write_status` writes, where `status` and `resume` rely on them."""
    if not isinstance(data, dict):
        return False
    runs, notified = data.get("runs") or [], data.get("notified") or {}
    return (
        _strs(data.get("drift") or [])
        and isinstance(runs, list)
        and all(isinstance(r, dict) and isinstance(r.get("at"), str) and isinstance(r.get("result"), str) for r in runs)
        and isinstance(notified, dict)
        and _strs(notified.get("drift") or [])
        and isinstance(notified.get("findings") or [], list)
    )


def _strs(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def source_label(source: LocalSource | GitSource) -> str:
    """What logs and the status file call the source: paths, or the URL without credentials."""
    if isinstance(source, GitSource):
        return redact_url(source.url)
    return " ".join(source.paths)


def resume(reconciler: Reconciler, previous: dict[str, Any] | None) -> None:
    """Carry over a restart what the webhooks last heard (no repeated alert) and the last good
    revision (so a force-push made meanwhile is still caught)."""
    notified = (previous or {}).get("notified")
    if isinstance(notified, dict) and notified.get("result") in tuple(WatchResult):
        drift = [str(d) for d in notified.get("drift") or []]
        message = str(notified.get("message") or "")
        reconciler.seen_run = Run(at="", trigger="start", result=WatchResult(notified["result"]), message=message, drift=drift)
        reconciler.seen_findings = tuple(
            _finding(f) for f in notified.get("findings") or [] if isinstance(f, dict) and f.get("code") in tuple(HealthCode)
        )
    if not previous or previous.get("source") != source_label(reconciler.source):
        return
    good = previous.get("last_good_revision")
    if isinstance(good, str) and good and isinstance(reconciler.source, GitSource):
        reconciler.state = replace(reconciler.state, last_good_revision=good)
        reconciler.source.last_good = good


def payload(reconciler: Reconciler, updated_at: str) -> dict[str, Any]:
    last = reconciler.runs[-1] if reconciler.runs else None
    seen = reconciler.seen_run
    next_run = reconciler.next_run_at
    return {
        "schemaVersion": 1,
        "pid": os.getpid(),
        "source": source_label(reconciler.source),
        "fleet": reconciler.fleet,
        "host": reconciler.options.host,
        "mode": "self-heal" if reconciler.options.self_heal else "report",
        "selection": reconciler.options.selection.describe() or None,  # --bot/-l: the bots it converges
        "interval": reconciler.options.interval,
        "updated_at": updated_at,
        "last_result": last.result if last else None,
        "last_revision": last.revision if last else None,
        "last_good_revision": reconciler.state.last_good_revision,
        "message": last.message if last else "",
        "drift": last.drift if last else [],
        "next_run_at": datetime.fromtimestamp(next_run, UTC).isoformat(timespec="seconds") if next_run else None,
        "runs": [asdict(r) for r in reconciler.runs],
        "notified": {
            "result": seen.result if seen else None,
            "message": seen.message if seen else "",
            "drift": seen.drift if seen else [],
            "findings": [f.to_json() for f in reconciler.seen_findings],
        },
    }


def write_status(root: Path, data: dict[str, Any]) -> str | None:
    """Write the status file; why it could not be (a full disk must not end the reconciler)."""
    path = state_dir(root) / STATUS_FILE
    try:
        check_state_path(root, path)
        fsio.make_dirs(path.parent, mode=0o700)
        fsio.atomic_write_text(path, json.dumps(data, indent=1) + "\n", mode=0o600)
    except ControllerError as exc:
        return str(exc)
    return None


def _finding(f: dict[str, Any]) -> health_core.Finding:
    severity: FindingSeverity = "error" if f.get("severity") == "error" else "warning"
    return health_core.Finding(HealthCode(f["code"]), severity, str(f.get("object")), str(f.get("message")))
