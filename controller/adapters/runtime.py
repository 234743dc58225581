"""What a running Hermes leaves behind about its health, read-only (docs/hermes/runtime.md).

- the cron ticker's heartbeat and last clean tick: `<profile>/cron/ticker_heartbeat` and
  `ticker_last_success`, each one epoch float (#ticker-heartbeat);
- the gateway process of a profile: `gateway.pid` (else `gateway_state.json`), checked against
  the live process table by pid and start time, the way Hermes checks it (#gateway-process);
- the credential stores in `auth.json` (#credentials).

Nothing here creates, locks or rewrites a file: a probe must never disturb the Hermes it looks at
(taking `gateway.lock` even briefly could make a starting gateway believe another one runs). A file
that cannot be read reads as "unknown", never as an error: health is best effort.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import bounded
from controller.adapters import homebounds
from controller.adapters.home import ProfileLayout
from controller.errors import HermesStateError

MAX_STATE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class GatewayProcess:
    running: bool
    pid: int | None = None
    state: str | None = None  # gateway_state.json `gateway_state` (running, draining, stopped, ...)
    source: str = ""  # the file the pid came from
    served_profiles: tuple[str, ...] = ()


def read_epoch(path: Path) -> float | None:
    """An epoch-seconds file as Hermes writes it (`str(time.time())`); None when absent or unreadable."""
    try:
        value = float(bounded.read_bytes(path, 64).decode("ascii").strip())  # a FIFO is refused, never waited on
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if math.isfinite(value) else None


def ticker(profile_dir: Path) -> tuple[float | None, float | None]:
    """(last heartbeat, last successful tick) of the cron ticker serving this profile, as epochs."""
    layout = ProfileLayout(profile_dir)
    return read_epoch(layout / layout.TICKER_HEARTBEAT), read_epoch(layout / layout.TICKER_LAST_SUCCESS)


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = homebounds.parse_json(bounded.read_bytes(path, MAX_STATE_BYTES).decode("utf-8"), str(path), "", "")
    except (OSError, UnicodeDecodeError, HermesStateError):  # a FIFO, too large, not JSON, too deep
        return None
    return data if isinstance(data, dict) else None


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat: what Hermes records as `start_time` (a pid-reuse guard)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        # The command name (field 2) may hold spaces and parentheses; count from the last ')'.
        return int(text[text.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    try:  # a zombie is not a gateway
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        return state[state.rindex(")") + 2 : state.rindex(")") + 3] != "Z"
    except (OSError, ValueError):
        return True


def _live(record: dict[str, Any] | None) -> int | None:
    if record is None:
        return None
    pid = record.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not _alive(pid):
        return None
    recorded, current = record.get("start_time"), _start_time(pid)
    if isinstance(recorded, int) and current is not None and recorded != current:
        return None  # the pid was reused by another process
    return pid


def gateway(profile_dir: Path) -> GatewayProcess:
    """Whether a gateway runs for this profile (Hermes 0.19.0: one gateway per HERMES_HOME)."""
    state = _json(profile_dir / ProfileLayout.GATEWAY_STATE)
    state_name = state.get("gateway_state") if state else None
    listed = (state or {}).get("served_profiles")
    served = tuple(p for p in listed if isinstance(p, str)) if isinstance(listed, list) else ()
    pid = _live(_json(profile_dir / ProfileLayout.GATEWAY_PID))
    if pid is not None:
        return GatewayProcess(True, pid, state_name if isinstance(state_name, str) else None, ProfileLayout.GATEWAY_PID, served)
    if state is not None and state_name not in (None, "stopped", "startup_failed"):
        pid = _live(state)
        if pid is not None:
            return GatewayProcess(True, pid, str(state_name), ProfileLayout.GATEWAY_STATE, served)
    return GatewayProcess(False, None, state_name if isinstance(state_name, str) else None, "")


def credential_stores(profile_dir: Path) -> frozenset[str]:
    """Providers with a credential in this profile's `auth.json`: a pool entry or an OAuth state."""
    data = _json(profile_dir / ProfileLayout.AUTH) or {}
    found: set[str] = set()
    pool = data.get("credential_pool")
    if isinstance(pool, dict):
        # Hermes seeds the pool from the environment (`source: env:KEY`): such an entry holds no
        # credential of its own, only a pointer back to the key (docs/hermes/runtime.md#credentials).
        found |= {
            str(k)
            for k, entries in pool.items()
            if isinstance(entries, list)
            and any(isinstance(e, dict) and not str(e.get("source") or "").startswith("env:") for e in entries)
        }
    providers = data.get("providers")
    if isinstance(providers, dict):
        found |= {str(k) for k, v in providers.items() if isinstance(v, dict) and v}
    return frozenset(found)
