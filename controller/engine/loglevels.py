"""The level of each reconciler log event, and whether journald is reading the log.

Levels are syslog priorities, so a line written to journald can carry its own as a `<N>` prefix
(systemd's `SyslogLevelPrefix=`, on by default): `journalctl -p warning` then shows what went wrong
(docs/watch.md#logs).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import IntEnum
from typing import Any, TextIO


class Level(IntEnum):
    """Syslog priorities (RFC 5424), the numbers journald reads from a `<N>` prefix."""

    ERROR = 3
    WARNING = 4
    INFO = 6

    @property
    def label(self) -> str:
        return self.name.lower()


# A pass that did not converge the home; drift, a busy lock or a stop are worth a look, not an alarm.
_FAILED_RESULTS = frozenset({"partial", "stalled", "conflict", "source-error"})
_DEGRADED_RESULTS = frozenset({"drift", "busy", "interrupted"})
_ERRORS = frozenset(
    {"internal_error", "health_error", "status_not_written", "notify_config_error", "notify_failed", "notify_outbox_error"}
)
_WARNINGS = frozenset({"drift_detected", "replaced_kept", "notify_retry", "notify_dropped", "git_locks_removed"})


def level_of(event: str, fields: Mapping[str, Any]) -> Level:
    """Error for a failed pass or a failure of the reconciler's own work, warning for drift and
    degraded service, info for the rest."""
    if event == "reconciled":
        result = fields.get("result")
        if result in _FAILED_RESULTS:
            return Level.ERROR
        return Level.WARNING if result in _DEGRADED_RESULTS else Level.INFO
    if event in _ERRORS:
        return Level.ERROR
    return Level.WARNING if event in _WARNINGS else Level.INFO


def journald_reads(stream: TextIO) -> bool:
    """True when `stream` is the journald stream systemd connected (`JOURNAL_STREAM` names its
    device and inode; systemd.exec(5)), so a `<N>` prefix is read as the line's priority."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):  # a StringIO, a closed or detached stream
        return False
    return expected == f"{info.st_dev}:{info.st_ino}"
