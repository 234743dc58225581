"""The reconciler's log: one line per event, text or JSON (docs/watch.md#log)."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from controller.engine import loglevels


class Log:
    """One line per event, with its level (engine.loglevels): `<time> <event> key=value ... level=L`,
    one JSON object with --log-format json, or `<N><event> key=value ...` for journald (which adds
    the time and reads the priority `<N>`). Text and JSON lines carry the `<N>` prefix too when
    journald is reading the stream."""

    def __init__(self, fmt: str = "text", stream: Any = None) -> None:
        self.fmt = fmt
        self.stream = stream or sys.stdout
        self.priority_prefix = fmt == "journal" or loglevels.journald_reads(self.stream)
        # Re-entrant: the SIGTERM handler logs from the main thread, possibly while it is inside event().
        self.lock = threading.RLock()

    def event(self, name: str, **fields: Any) -> None:
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        level = loglevels.level_of(name, fields)
        parts = [f"{k}={_text(v)}" for k, v in fields.items() if v not in (None, "", [])]
        if self.fmt == "json":
            line = json.dumps({"time": now, "event": name, "level": level.label, **fields}, default=str, sort_keys=False)
        elif self.fmt == "journal":
            line = " ".join([name, *parts])
        else:
            line = " ".join([now, name, *parts, f"level={level.label}"])
        if self.priority_prefix:
            line = f"<{level.value}>{line}"
        with self.lock:
            self.stream.write(line.rstrip() + "\n")
            self.stream.flush()


def _text(value: Any) -> str:
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    return json.dumps(text) if (not text or "=" in text or any(c.isspace() for c in text)) else text


class ProgressLog:
    """An apply's progress as `apply_progress` events (done, total, object): the first once the
    apply has run `every` seconds, then one per `every` seconds; a short apply logs none."""

    def __init__(self, log: Log, every: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.every = every
        self.clock = clock
        self.last = clock()

    def __call__(self, done: int, total: int, current: str) -> None:
        now = self.clock()
        if now - self.last < self.every or not current:
            return
        self.last = now
        self.log.event("apply_progress", done=done, total=total, object=current)
