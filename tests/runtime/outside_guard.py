"""A refusing HTTP(S) proxy on loopback that records every outside call Hermes tries.

The runtime suite points `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` at it (with `NO_PROXY` for
loopback), so any client that honours the proxy variables (httpx, which the `openai` SDK uses;
requests; urllib) reaches this guard instead of the internet. The guard answers every request,
`CONNECT` included, with 403 and logs its target, so a test can assert that a run made no
outside call at all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class OutsideGuard:
    attempts: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the guard is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self) -> dict[str, str]:
        """Proxy variables that send every non-loopback request here."""
        loopback = "127.0.0.1,localhost,::1"
        env = {}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env[name] = env[name.lower()] = self.url
        env["NO_PROXY"] = env["no_proxy"] = loopback
        return env

    def start(self) -> OutsideGuard:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def drain(self) -> list[str]:
        with self._lock:
            taken = list(self.attempts)
            self.attempts.clear()
            return taken

    def note(self, target: str) -> None:
        with self._lock:
            self.attempts.append(target)


def _handler_for(guard: OutsideGuard) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _refuse(self) -> None:
            guard.note(f"{self.command} {self.path}")
            self.send_response(403, "outside calls are refused in the runtime suite")
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        do_CONNECT = do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _refuse

    return Handler
