"""Drive the real reconciler: `python -m controller watch ...` as a subprocess, its log read line by line.

`Watch` starts the process with a scratch HOME, keeps every stdout line (parsed when it is JSON),
and `wait_for` blocks until a matching event arrives or a bounded timeout fails the test. `stop`
sends SIGTERM and always reaps the process and closes its pipes (pytest turns leaked resources
into errors). Nothing in controller/ is mocked.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
Event = dict[str, Any]


def environ(user: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_HOME", "GIT_DIR", "GIT_WORK_TREE")}
    env.update({"HOME": str(user), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", "GIT_CONFIG_NOSYSTEM": "1", "PYTHONPATH": str(REPO)})
    env.update(extra)
    return env


def parse_text(line: str) -> Event:
    """`<time> <event> key=value ...` (values may be JSON-quoted) -> a dict like the JSON format."""
    time_part, _, rest = line.partition(" ")
    name, _, rest = rest.partition(" ")
    event: Event = {"time": time_part, "event": name}
    for match in re.finditer(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', rest):
        value = match.group(2)
        event[match.group(1)] = json.loads(value) if value.startswith('"') else value
    return event


def cli(user: Path, *args: str | Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """`hermes-fleet <args>` as a separate process (what cron or a second terminal would run)."""
    return subprocess.run(
        [sys.executable, "-m", "controller", *map(str, args)],
        cwd=REPO,
        env=environ(user, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Watch:
    def __init__(self, user: Path, *args: str | Path, log_format: str = "json", **env: str) -> None:
        self.log_format = log_format
        self.lines: list[str] = []
        self.events: list[Event] = []
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self._seen = 0
        argv = [sys.executable, "-m", "controller", "watch", *map(str, args), "--log-format", log_format]
        self.proc = subprocess.Popen(
            argv, cwd=REPO, env=environ(user, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
        )
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._reader.start()
        self._err_reader.start()

    # --- reading ---------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(ValueError, OSError):
            for line in self.proc.stdout:
                line = line.rstrip("\n")
                self.lines.append(line)
                event = json.loads(line) if self.log_format == "json" else parse_text(line)
                event["_at"] = time.monotonic()
                self.events.append(event)
                self._queue.put(event)
        self._queue.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        with contextlib.suppress(ValueError, OSError):
            for line in self.proc.stderr:
                self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def wait_for(self, event: str, timeout: float = 10.0, **match: Any) -> Event:
        """The next (not yet consumed) event named `event` whose fields equal `match`."""
        return self.wait_until(
            lambda e: e["event"] == event and all(e.get(k) == v for k, v in match.items()), timeout, f"{event} {match}"
        )

    def wait_until(self, predicate: Callable[[Event], bool], timeout: float = 10.0, what: str = "event") -> Event:
        deadline = time.monotonic() + timeout
        while True:
            while self._seen < len(self.events):
                event = self.events[self._seen]
                self._seen += 1
                if predicate(event):
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {what} within {timeout}s; log so far:\n{self.transcript()}")
            try:
                item = self._queue.get(timeout=min(left, 0.2))
            except queue.Empty:
                continue
            if item is None and self._seen >= len(self.events):
                raise AssertionError(f"watch exited ({self.proc.poll()}) before {what}:\n{self.transcript()}")

    def runs(self, **match: Any) -> list[Event]:
        return [e for e in self.events if e["event"] == "reconciled" and all(e.get(k) == v for k, v in match.items())]

    def quiet_for(self, seconds: float) -> list[Event]:
        """Consume everything logged during `seconds`; returns those events (callers assert on them)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)
        new = self.events[self._seen :]
        self._seen = len(self.events)
        return new

    def transcript(self) -> str:
        return "\n".join(self.lines[-60:]) + ("\n--- stderr ---\n" + self.stderr if self.stderr else "")

    # --- ending ----------------------------------------------------------------------------------

    def signal(self, signum: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then wait; a watcher that ignores it is killed and the test fails."""
        self.signal()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"watch did not stop within {timeout}s of SIGTERM:\n{self.transcript()}") from None
        finally:
            self.close()
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        self._err_reader.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def http_get(port: int, path: str, headers: dict[str, str] | None = None, host: str = "127.0.0.1") -> tuple[int, str, str]:
    """GET (http.client: no proxy settings apply); status, content type, body."""
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def samples(body: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A /metrics body parsed by the Prometheus client library's own parser: (name, labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(body) for s in family.samples
    }


def sample(body: str, name: str, **labels: str) -> float | None:
    """The value of the one sample `name` whose labels include `labels` (None when there is none)."""
    found = [v for (n, have), v in samples(body).items() if n == name and set(labels.items()) <= have]
    assert len(found) <= 1, f"{name} {labels}: {len(found)} samples"
    return found[0] if found else None


def fleet_doc(bots: list[dict[str, Any]], *, fleet: str = "acme") -> str:
    return (
        json.dumps(
            {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": fleet}, "spec": {"bots": bots}}, indent=2
        )
        + "\n"
    )


def write_fleet(path: Path, bots: list[dict[str, Any]], *, fleet: str = "acme") -> Path:
    """Write the manifest in place (open + truncate + write: what most editors' plain save does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(fleet_doc(bots, fleet=fleet), encoding="utf-8")
    return path


def title(home: Path, name: str) -> str | None:
    """The Bot Mode title hermes-fleet wrote for a bot (profile.yaml ui_meta), None if absent."""
    from ruamel.yaml import YAML

    path = home / "profiles" / name / "profile.yaml"
    if not path.exists():
        return None
    meta = YAML(typ="safe", pure=True).load(path.read_text()) or {}
    return meta.get("ui_meta", {}).get("hermes-bots", {}).get("title")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_DATE": "", "GIT_COMMITTER_DATE": ""}
    env = {k: v for k, v in env.items() if v != ""}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


def read_status(home: Path, until: Callable[[dict[str, Any]], bool] = lambda _s: True, timeout: float = 10.0) -> dict[str, Any]:
    """The reconciler's status file, once `until` holds (it is rewritten just after each run's log line)."""
    path = home / ".hermes-fleet" / "watch-status.json"
    deadline = time.monotonic() + timeout
    last: dict[str, Any] = {}
    while True:
        with contextlib.suppress(OSError, ValueError):
            last = json.loads(path.read_text())
            if until(last):
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"status file never matched within {timeout}s: {json.dumps(last)[:2000]}")
        time.sleep(0.02)
