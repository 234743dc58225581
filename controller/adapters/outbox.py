"""The webhooks' outbox: every event queued for a webhook is a file until it is delivered.

`<home>/.hermes-fleet/outbox/<webhook>/<event id>.json`, written (atomically, 0600) when the event
is queued and removed when the receiver took it or refused it for good. What is left at exit (a
receiver down, the `--notify-timeout` spent, a SIGKILL) is sent again by the next `watch` or
`apply --notify` on the home: delivery is at least once, and each event carries its `id` so a
receiver can drop a repeat. The file names the webhook, never its URL. At most `LIMIT` events wait
per webhook (the oldest goes), and an event older than `MAX_AGE` is dropped rather than sent late.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.adapters import fsio
from controller.adapters.home import HomeLayout, check_state_path
from controller.adapters.webhooks import Event
from controller.errors import ControllerError

LIMIT = 100  # events waiting per webhook (as many as its queue holds)
MAX_AGE = 7 * 24 * 3600.0  # seconds; an alert a week old is news to no one
MAX_FILE = 256 * 1024  # one event's file (a summary and a few hundred object names)
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # a webhook name (manifests.models.fleet.Webhook)
ID_RE = re.compile(r"^[0-9a-f]{32}$")
FIELDS = ("kind", "severity", "fleet", "summary", "at", "home", "host", "id")

Log = Callable[..., None]


class Outbox:
    def __init__(self, root: Path, log: Log) -> None:
        self.root = root
        self.folder = HomeLayout(root).state.outbox
        self.log = log

    def _path(self, webhook: str, event_id: str) -> Path:
        return self.folder / webhook / f"{event_id}.json"

    def add(self, webhook: str, event: Event) -> None:
        """Keep `event` for `webhook` until `done`; a failure to write is logged (delivery goes on)."""
        if not (NAME_RE.match(webhook) and ID_RE.match(event.id)):
            return
        path = self._path(webhook, event.id)
        fields: dict[str, Any] = {name: getattr(event, name) for name in FIELDS}
        record = {"queued": time.time(), "event": {**fields, "details": dict(event.details)}}
        try:
            check_state_path(self.root, path)
            fsio.make_dirs(path.parent, mode=0o700)
            fsio.atomic_write_text(path, json.dumps(record, default=str) + "\n", mode=0o600)
            self._trim(path.parent)
        except ControllerError as exc:
            self.log("notify_outbox_error", webhook=webhook, kind=event.kind, error=str(exc))

    def done(self, webhook: str, event_id: str) -> None:
        if NAME_RE.match(webhook) and ID_RE.match(event_id):
            try:
                check_state_path(self.root, self._path(webhook, event_id))
                fsio.remove(self._path(webhook, event_id))
            except ControllerError as exc:
                self.log("notify_outbox_error", webhook=webhook, error=str(exc))

    def pending(self) -> dict[str, list[Event]]:
        """The events still waiting, per webhook, oldest first (unreadable or expired ones removed)."""
        out: dict[str, list[Event]] = {}
        try:
            check_state_path(self.root, self.folder)
            names = sorted(os.listdir(self.folder))
        except (OSError, ControllerError):
            return out
        for webhook in names:
            if NAME_RE.match(webhook) and not os.path.islink(self.folder / webhook):
                events = [e for _, e in sorted(self._read_all(webhook), key=lambda q: q[0])]
                if events:
                    out[webhook] = events
        return out

    def _entries(self, folder: Path) -> list[str]:
        try:
            return [n for n in os.listdir(folder) if n.endswith(".json") and ID_RE.match(n[:-5])]
        except OSError:
            return []

    def _read_all(self, webhook: str) -> list[tuple[float, Event]]:
        found = []
        for name in self._entries(self.folder / webhook)[: LIMIT * 2]:
            path = self.folder / webhook / name
            queued, event = self._read(path)
            if event is None or event.id != name[:-5] or time.time() - queued > MAX_AGE:
                self.log("notify_dropped", webhook=webhook, kind=event.kind if event else "", reason="unreadable or expired")
                fsio.remove(path)
                continue
            found.append((queued, event))
        return found

    def _read(self, path: Path) -> tuple[float, Event | None]:
        try:
            raw = fsio.read_bounded(path, MAX_FILE)
            return parse(json.loads(raw or b"null"))
        except (ControllerError, ValueError, RecursionError):
            return 0.0, None

    def _trim(self, folder: Path) -> None:
        names = self._entries(folder)
        if len(names) <= LIMIT:
            return
        dated = sorted((self._read(folder / n)[0], n) for n in names)
        for _, name in dated[: len(names) - LIMIT]:
            self.log("notify_dropped", webhook=folder.name, kind="", reason="outbox full")
            fsio.remove(folder / name)


def parse(data: Any) -> tuple[float, Event | None]:
    """(queued time, event) from an outbox file's JSON; (0, None) when it is not one of ours."""
    if not isinstance(data, dict) or not isinstance(data.get("event"), dict):
        return 0.0, None
    queued, raw = data.get("queued"), data["event"]
    if not isinstance(queued, (int, float)) or isinstance(queued, bool):
        return 0.0, None
    if not all(isinstance(raw.get(name), str) for name in FIELDS) or not isinstance(raw.get("details"), dict):
        return 0.0, None
    return float(queued), Event(**{name: raw[name] for name in FIELDS}, details=raw["details"])
