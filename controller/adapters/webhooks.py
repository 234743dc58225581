"""Webhook notifications over httpx: queued, retried with backoff, never in the caller's way.

`Notifier.post(event)` only enqueues: each webhook has its own queue and worker thread, so a
receiver that fails or hangs delays nothing but its own later events, and never a reconcile.
A delivery is retried on a transport error (refused, reset, timed out), a 5xx or a 429, with
backoff (1 s, 2 s, 4 s, ... capped), up to `retries` more attempts; any other 4xx is final. Every
attempt is bounded by the webhook's `timeout` as a whole: each phase (connect, send, wait) has it,
and a watchdog shuts the socket once the attempt as a whole has taken it (a receiver trickling
bytes holds nothing). Only the status line and headers are read; the body never is.
A full queue drops its oldest event (logged). `close(timeout)` lets the queues drain until the
deadline, then gives up on what is left.

With an outbox (adapters.outbox), every queued event is kept on disk until the receiver took it or
refused it for good; what is left at exit is sent again by the next notifier on the home (at least
once; each event carries an `id`). An event whose retries ran out is tried again before the next
event of its webhook.

Webhook URLs usually embed a token: they are secrets. They never appear in a log line, an error
message or the status file: webhooks are named by their `name`, and any text that comes back
from httpx is scrubbed of the URL and its parts first (`redact.without`).
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from controller import __version__
from controller.redact import without

if TYPE_CHECKING:  # httpx is imported on the first delivery: `plan` never pays for it
    import httpx

    from controller.adapters.outbox import Outbox

SEVERITY_MARK = {"error": ":red_circle:", "warning": ":warning:", "info": ":large_green_circle:"}


@dataclass(frozen=True)
class Event:
    kind: str  # a NOTIFICATION_EVENTS name: drift, apply-failed, suspended, <health finding code>, ...
    severity: str  # error | warning | info
    fleet: str
    summary: str
    details: Mapping[str, Any] = field(default_factory=dict)
    at: str = ""
    home: str = ""
    host: str = ""
    id: str = ""  # unique per event: a receiver drops a repeat (delivery is at least once)

    def as_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": 1,
            "source": "hermes-fleet",
            "id": self.id,
            "event": self.kind,
            "severity": self.severity,
            "fleet": self.fleet,
            "host": self.host,
            "home": self.home,
            "at": self.at,
            "summary": self.summary,
            "details": dict(self.details),
        }

    def as_slack(self) -> dict[str, Any]:
        mark = SEVERITY_MARK.get(self.severity, "")
        where = f" on {self.host}" if self.host else ""
        return {"text": f"{mark} *hermes-fleet* `{self.fleet}`{where} — *{self.kind}*: {self.summary}".strip()}


@dataclass(frozen=True)
class Target:
    name: str
    url: str = field(repr=False)  # a secret
    format: str = "json"
    events: frozenset[str] | None = None
    timeout: float = 5.0

    def wants(self, kind: str) -> bool:
        return self.events is None or kind in self.events

    def secrets(self) -> tuple[str, ...]:
        parts = urlsplit(self.url)
        tail = parts.path + (f"?{parts.query}" if parts.query else "")
        pieces = [self.url, tail if len(tail) > 1 else "", parts.query, parts.password or ""]
        return tuple(sorted({p for p in pieces if p}, key=len, reverse=True))


Log = Callable[..., None]  # log(event_name, **fields)


Attempt = Literal["ok", "retry", "final"]  # one POST: delivered, try again, refused for good
Delivery = Literal["sent", "final", "kept"]  # one event after its retries (`Notifier.deliver`)


class Notifier:
    def __init__(
        self,
        log: Log,
        *,
        retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        queue_size: int = 100,
        transport: httpx.BaseTransport | None = None,
        outbox: Outbox | None = None,
    ) -> None:
        self.log = log
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.queue_size = queue_size
        self.transport = transport
        self.outbox = outbox
        self._pending = outbox.pending() if outbox is not None else {}  # left by an earlier run, per webhook
        self.abort = threading.Event()
        self._workers: dict[Target, _Worker] = {}
        self._lock = threading.Lock()

    @property
    def targets(self) -> list[Target]:
        return list(self._workers)

    def configure(self, targets: list[Target]) -> None:
        """Use these webhooks from now on (workers of removed ones finish what they hold)."""
        with self._lock:
            wanted = set(targets)
            for target in [t for t in self._workers if t not in wanted]:
                self._workers.pop(target).finish()
            for target in targets:
                if target not in self._workers:
                    worker = self._workers[target] = _Worker(self, target)
                    for earlier in self._pending.pop(target.name, []):
                        self.log("notify_resend", webhook=target.name, kind=earlier.kind, at=earlier.at)
                        worker.put(earlier)

    def post(self, event: Event) -> None:
        """Queue `event` for every webhook that wants it; returns at once."""
        with self._lock:
            workers = [w for t, w in self._workers.items() if t.wants(event.kind)]
        for worker in workers:
            if self.outbox is not None:
                self.outbox.add(worker.target.name, event)
            worker.put(event)

    def settled(self, target: Target, event: Event) -> None:
        """`event` needs no more delivery to `target` (taken, refused for good, or dropped)."""
        if self.outbox is not None:
            self.outbox.done(target.name, event.id)

    def close(self, timeout: float = 10.0) -> bool:
        """Deliver what is queued until `timeout`, then give up; True when everything was handled."""
        deadline = time.monotonic() + timeout
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.finish()
        for worker in workers:
            worker.thread.join(max(0.0, deadline - time.monotonic()))
        self.abort.set()
        return all(not w.thread.is_alive() for w in workers)

    # --- one delivery ---------------------------------------------------------------------------

    def deliver(self, target: Target, event: Event) -> Delivery:
        """One event to one webhook, with retries: `sent`, `final` (refused for good) or `kept`
        (retries used up, or shutdown: it stays in the outbox)."""
        body = event.as_slack() if target.format == "slack" else event.as_json()
        data = json.dumps(body, default=str).encode()
        headers = {"Content-Type": "application/json", "User-Agent": f"hermes-fleet/{__version__}"}
        if event.id:
            headers["Idempotency-Key"] = event.id
        secrets = target.secrets()
        attempt = 0
        while True:
            attempt += 1
            outcome, detail = self._attempt(target, data, headers, secrets)
            if outcome == "ok":
                self.log("notify_sent", webhook=target.name, kind=event.kind, status=detail, attempts=attempt)
                return "sent"
            if outcome == "final":
                self.log("notify_failed", webhook=target.name, kind=event.kind, error=detail, attempts=attempt)
                return "final"
            if attempt > self.retries or self.abort.is_set():
                return self.kept(target, event, detail, attempt)
            delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
            self.log("notify_retry", webhook=target.name, kind=event.kind, error=detail, attempt=attempt, retry_in=delay)
            if self.abort.wait(delay):
                return self.kept(target, event, "given up at shutdown", attempt)

    def kept(self, target: Target, event: Event, error: str, attempts: int) -> Delivery:
        kept = "outbox" if self.outbox is not None else None
        self.log("notify_failed", webhook=target.name, kind=event.kind, error=error, attempts=attempts, kept=kept)
        return "kept"

    def _attempt(self, target: Target, data: bytes, headers: dict[str, str], secrets: tuple[str, ...]) -> tuple[Attempt, str]:
        import httpx

        watchdog = Deadline(target.timeout)
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(target.timeout), transport=self.transport, follow_redirects=False) as client,
                client.stream(
                    "POST", target.url, content=data, headers=headers, extensions={"trace": watchdog.trace}
                ) as response,
            ):
                status = response.status_code  # the body is never read: a huge one costs nothing
        except httpx.TimeoutException:
            return "retry", f"no answer within {target.timeout:g}s"
        except httpx.TransportError as exc:
            if watchdog.fired:
                return "retry", f"no answer within {target.timeout:g}s"
            return "retry", without(f"{type(exc).__name__}: {exc}", secrets)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol, ValueError) as exc:
            return "final", without(f"invalid webhook URL ({type(exc).__name__})", secrets)
        finally:
            watchdog.cancel()
        if 200 <= status < 300:
            return "ok", str(status)
        if status >= 500 or status == 429:
            return "retry", f"HTTP {status}"
        return "final", f"HTTP {status}"


class Deadline:
    """An attempt's overall deadline, as an httpcore trace hook: once the connection is made, a timer
    shuts its socket down when `seconds` since the start have passed, which ends any read or write
    blocked on it (the per-phase timeouts restart with every byte a receiver trickles)."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        self.fired = False
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if name != "connection.connect_tcp.complete":
            return
        raw = info.get("return_value")
        sock = raw.get_extra_info("socket") if raw is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sock = sock.dup()  # the same connection; still valid once TLS has wrapped the original
            self._timer = threading.Timer(max(0.0, self.ends - time.monotonic()), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._sock is not None:
                self.fired = True
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class _Worker:
    def __init__(self, notifier: Notifier, target: Target) -> None:
        self.notifier = notifier
        self.target = target
        self.queue: queue.Queue[Event | None] = queue.Queue(maxsize=notifier.queue_size)
        self.waiting: set[str] = set()  # ids queued or in delivery: an event is never queued twice
        self.parked: list[Event] = []  # retries used up: tried again before the next event
        self.lock = threading.Lock()  # `waiting` and `parked` are shared with the poster's thread
        self.thread = threading.Thread(target=self.run, name=f"hermes-fleet-notify-{target.name}", daemon=True)
        self.thread.start()

    def put(self, event: Event) -> None:
        with self.lock:
            parked, self.parked = self.parked, []
            fresh = [e for e in [*parked, event] if not (e.id and e.id in self.waiting)]
            self.waiting.update(e.id for e in fresh)
        for earlier in fresh:
            self._enqueue(earlier)

    def _enqueue(self, event: Event) -> None:
        while True:
            try:
                self.queue.put_nowait(event)
                return
            except queue.Full:
                try:
                    dropped = self.queue.get_nowait()
                except queue.Empty:
                    continue
                if dropped is not None:
                    with self.lock:
                        self.waiting.discard(dropped.id)
                    self.notifier.settled(self.target, dropped)
                    self.notifier.log("notify_dropped", webhook=self.target.name, kind=dropped.kind, reason="queue full")

    def finish(self) -> None:
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            self.notifier.abort.set()

    def run(self) -> None:
        while True:
            event = self.queue.get()
            if event is None:
                return
            if self.notifier.abort.is_set():
                self.notifier.kept(self.target, event, "given up at shutdown", 0)
                continue
            try:
                outcome = self.notifier.deliver(self.target, event)
            except Exception as exc:  # a bug here must not kill the worker (and silence every later alert)
                outcome = self.notifier.kept(self.target, event, type(exc).__name__, 0)
            with self.lock:
                self.waiting.discard(event.id)
                if outcome == "kept":
                    self.parked.append(event)
            if outcome != "kept":
                self.notifier.settled(self.target, event)
