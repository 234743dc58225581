"""A recording OpenAI-compatible model endpoint on loopback, standing in for the bots' model.

A real HTTP server (stdlib `ThreadingHTTPServer`, 127.0.0.1, a free port) that the real Hermes
calls as it would call OpenRouter. It logs every request body, so a test asserts on what a
running Hermes actually sent: the model name, the system prompt, the tools offered.

What Hermes 0.19.0 needs from it (docs/hermes/runtime.md#model-calls):
- `POST /v1/chat/completions`, streamed (`"stream": true`: Server-Sent Events of
  `chat.completion.chunk` objects, then `data: [DONE]`; a usage chunk when
  `stream_options.include_usage`) and not (one `chat.completion` object). Hermes talks to it
  through the `openai` SDK (`agent/chat_completion_helpers.py`), which parses both.
- `GET /v1/models`, answered with the one model last asked for (Hermes may list models to learn
  a context length; nothing depends on it).

Rules it enforces, as the real API does: a chat body without `model` or a non-empty `messages`
list is a 400; a tool call is only ever made to a tool the request offered (a model cannot call
a tool it was not given), with arguments as a JSON string; a turn that already carries the tool's
result is answered with text, so the agent loop ends.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_REPLY = "Recorded."


@dataclass(frozen=True)
class ToolCallRule:
    """When the newest user message contains `marker`, call `tool` once with `arguments`."""

    marker: str
    tool: str
    arguments: dict[str, Any]


@dataclass
class Recorded:
    """One request as it reached the endpoint."""

    path: str
    body: dict[str, Any]
    authorization_sha256: str | None

    @property
    def model(self) -> str:
        return str(self.body.get("model"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system_prompt(self) -> str:
        """The instructions: `system`, or `developer` (what Hermes sends to OpenAI's newer models)."""
        return "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer"))

    @property
    def user_text(self) -> str:
        return "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") == "user")

    @property
    def tool_names(self) -> set[str]:
        return {str(t.get("function", {}).get("name")) for t in self.body.get("tools") or []}

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))


@dataclass
class ModelServer:
    """The endpoint; `url` is the OpenAI base URL (`http://127.0.0.1:<port>/v1`)."""

    reply: str = DEFAULT_REPLY
    rules: list[ToolCallRule] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the model server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ModelServer:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def chats(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def drain(self) -> list[Recorded]:
        """The chat requests recorded so far, forgetting them (one test's traffic at a time)."""
        with self._lock:
            taken = [r for r in self.requests if r.path.endswith("/chat/completions")]
            self.requests.clear()
            return taken

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for this request: a tool call when a rule asks, else text."""
        messages = body["messages"]
        last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), -1)
        tool_result_since = any(m.get("role") == "tool" for m in messages[last_user + 1 :])
        offered = {str(t.get("function", {}).get("name")) for t in body.get("tools") or []}
        user_text = _text(messages[last_user].get("content")) if last_user >= 0 else ""
        for rule in self.rules:
            if rule.marker in user_text and not tool_result_since and rule.tool in offered:
                call = {
                    "id": f"call_{len(self.requests)}",
                    "type": "function",
                    "function": {"name": rule.tool, "arguments": json.dumps(rule.arguments)},
                }
                return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": self.reply}


def _text(content: Any) -> str:
    """A message's text, whether a string or OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            server.record(Recorded(self.path, {}, _auth_digest(self.headers.get("Authorization"))))
            if self.path.rstrip("/").endswith("/models"):
                last = next((r.model for r in reversed(server.chats())), "model")
                self._json(200, {"object": "list", "data": [{"id": last, "object": "model", "owned_by": "loopback"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "body is not JSON"}})
                return
            server.record(Recorded(self.path, body, _auth_digest(self.headers.get("Authorization"))))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            if not body.get("model") or not isinstance(body.get("messages"), list) or not body["messages"]:
                self._json(400, {"error": {"message": "model and messages are required"}})
                return
            message = server.answer(body)
            if body.get("stream"):
                self._stream(body, message)
            else:
                self._json(200, _completion(body, message))

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, body: dict[str, Any], message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _chunks(body, message):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def _auth_digest(header: str | None) -> str | None:
    """The bearer token as `sha256:<12 hex>`: tests compare keys without logging them."""
    if not header:
        return None
    token = header.split(" ", 1)[-1]
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12]


_USAGE = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


def _completion(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _USAGE,
    }


def _chunks(body: dict[str, Any], message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""}, None)
    calls = message.get("tool_calls") or []
    for index, call in enumerate(calls):
        yield chunk({"tool_calls": [{"index": index, **call}]}, None)
    if message.get("content"):
        yield chunk({"content": message["content"]}, None)
    yield chunk({}, "tool_calls" if calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [],
            "usage": _USAGE,
        }
