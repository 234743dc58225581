"""/healthz and /metrics over HTTP: the standard library's WSGI server, one thread per connection,
bounded (docs/watch.md#health-and-metrics).

A connection that sends nothing for HEALTH_READ_TIMEOUT seconds is closed; at most HEALTH_CONNECTIONS
are served at once and one past the cap is closed at once (369 idle connections held 373 threads
before); the listen backlog is HEALTH_BACKLOG. With a token, both paths need
`Authorization: Bearer <token>`; the token is never logged.
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from controller.engine.watchlog import Log
from controller.errors import UsageError

HEALTH_READ_TIMEOUT = 10.0  # seconds a health connection may sit without sending its request line or headers
HEALTH_CONNECTIONS = 32  # connections served at once; one past it is closed at once (docs/watch.md)
HEALTH_BACKLOG = 64  # the listen backlog: a burst past the cap is accepted and closed, not left in SYN retries

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


class Observed(Protocol):
    """What the server reads of the reconciler."""

    def healthz(self) -> tuple[bool, dict[str, object]]: ...

    def render_metrics(self, accept: str) -> tuple[bytes, str]: ...


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; any other address (or name) is reachable from elsewhere."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def health_app(observed: Observed, token: str | None) -> Callable[[dict[str, Any], StartResponse], Iterable[bytes]]:
    expected = f"Bearer {token}".encode() if token else None

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        def send(status: str, data: bytes, kind: str, *extra: tuple[str, str]) -> list[bytes]:
            start_response(status, [("Content-Type", kind), ("Content-Length", str(len(data))), *extra])
            return [data]

        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if expected is not None and not hmac.compare_digest(given, expected):
            return send("401 Unauthorized", b"unauthorized\n", "text/plain", ("WWW-Authenticate", 'Bearer realm="hermes-fleet"'))
        path = environ.get("PATH_INFO", "")
        if environ.get("REQUEST_METHOD") != "GET":
            return send("405 Method Not Allowed", b"method not allowed\n", "text/plain", ("Allow", "GET"))
        if path not in ("/metrics", "/healthz"):
            return send("404 Not Found", b"not found\n", "text/plain")
        if path == "/metrics":
            data, kind = observed.render_metrics(str(environ.get("HTTP_ACCEPT", "")))
            return send("200 OK", data, kind)
        healthy, body = observed.healthz()
        return send("200 OK" if healthy else "503 Service Unavailable", (json.dumps(body) + "\n").encode(), "application/json")

    return app


class _Handler(WSGIRequestHandler):
    timeout = HEALTH_READ_TIMEOUT  # the socket's timeout: an idle or trickling client is dropped

    def log_message(self, *args: Any) -> None:
        return  # our own log has one line per reconcile; no per-request noise

    def get_stderr(self) -> Any:
        return io.StringIO()  # a client that hung up mid-response is not worth a traceback


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    request_queue_size = HEALTH_BACKLOG
    slots: threading.BoundedSemaphore

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):  # full: close it rather than start one more thread
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a read timeout or a reset: the connection is closed, nothing to report


def start_health(port: int, observed: Observed, log: Log, *, bind: str = "127.0.0.1", token: str | None = None) -> Any:
    """Serve /healthz and /metrics on `bind` (loopback by default) in a daemon thread; the server
    (`shutdown()` stops it)."""
    handler = type("Handler", (_Handler,), {"timeout": HEALTH_READ_TIMEOUT})
    server_class = type(
        "Server",
        (_Server,),
        {
            "address_family": socket.AF_INET6 if ":" in bind else socket.AF_INET,
            "slots": threading.BoundedSemaphore(HEALTH_CONNECTIONS),
        },
    )
    try:
        server = server_class((bind, port), handler)
    except OSError as exc:
        raise UsageError(f"cannot serve /healthz and /metrics on {bind}:{port}: {exc.strerror or exc}") from None
    server.set_app(health_app(observed, token))
    threading.Thread(target=server.serve_forever, name="hermes-fleet-health", daemon=True).start()
    host = f"[{bind}]" if ":" in bind else bind
    log.event("health_listening", address=f"http://{host}:{server.server_address[1]}", auth="bearer" if token else "none")
    return server
