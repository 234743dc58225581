"""A recording OpenAI-compatible model endpoint on loopback, standing in for the bots' model.

A real HTTP server (stdlib `ThreadingHTTPServer`, 127.0.0.1, a free port) that the real Hermes
calls as it would call OpenRouter. It logs every request body, so a test asserts on what a
running Hermes actually sent: the model name, the system prompt, the tools offered.

What Hermes 0.19.0 needs from it (docs/hermes/runtime.md#model-calls):
- `POST /v1/chat/completions`, streamed (`"stream": true`: Server-Sent Events of
  `chat.completion.chunk` objects, then `data: [DONE]`; a usage chunk when
  `stream_options.include_usage`) and not (one `chat.completion` object). Hermes talks to it
  through the `openai` SDK (`agent/chat_completion_helpers.py`), which parses both.
- `POST /v1/messages`, the Anthropic Messages API, for a bot on `provider: anthropic` pointed here
  by `ANTHROPIC_BASE_URL`: Hermes strips a trailing `/v1` from that URL and the `anthropic` SDK
  appends `/v1/messages` (`agent/anthropic_adapter.py:build_anthropic_client`); the agent loop
  streams it (`messages.stream()` in `agent/chat_completion_helpers.py`: Server-Sent Events
  `message_start`, `content_block_start`, `content_block_delta`, `content_block_stop`,
  `message_delta`, `message_stop`), a summary call does not (`run_agent.py:
  AIAgent._anthropic_messages_create`: one `message` object).
- `GET /v1/models`, answered with the one model last asked for (Hermes may list models to learn
  a context length; nothing depends on it).

Rules it enforces, as the real APIs do: a chat body without `model` or a non-empty `messages`
list is a 400; a Messages body without `model`, a non-empty `messages` list or an integer
`max_tokens`, or a request without the `anthropic-version` header the SDK always sends, is a 400
`invalid_request_error`; a tool call is only ever made to a tool the request offered (a model
cannot call a tool it was not given), with arguments as a JSON string (OpenAI) or an `input`
object (Anthropic); a turn that already carries the tool's result is answered with text, so the
agent loop ends.
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
    def anthropic(self) -> bool:
        """An Anthropic Messages request (`/v1/messages`), not a chat completion."""
        return _is_messages(self.path)

    @property
    def model(self) -> str:
        return str(self.body.get("model"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system_prompt(self) -> str:
        """The instructions: `system`, or `developer` (what Hermes sends to OpenAI's newer models);
        for Anthropic the top-level `system`, a string or a list of text blocks."""
        if self.anthropic:
            return _text(self.body.get("system"))
        return "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer"))

    @property
    def user_text(self) -> str:
        """What the user said; Anthropic tool results (user-role `tool_result` blocks) are not."""
        return "\n".join(_text(m.get("content")) for m in self.messages if m.get("role") == "user")

    @property
    def tool_names(self) -> set[str]:
        return _offered(self.body)

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
        """The model calls recorded so far: chat completions and Anthropic messages."""
        with self._lock:
            return [r for r in self.requests if _is_model_call(r.path)]

    def drain(self) -> list[Recorded]:
        """The model calls recorded so far, forgetting them (one test's traffic at a time)."""
        with self._lock:
            taken = [r for r in self.requests if _is_model_call(r.path)]
            self.requests.clear()
            return taken

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for this request (OpenAI's shape): a tool call when a rule asks, else text."""
        rule = self._rule_for(body)
        if rule is None:
            return {"role": "assistant", "content": self.reply}
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": rule.tool, "arguments": json.dumps(rule.arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def answer_blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The same answer as Anthropic content blocks: one `tool_use`, or one `text`."""
        rule = self._rule_for(body)
        if rule is None:
            return [{"type": "text", "text": self.reply}]
        return [{"type": "tool_use", "id": f"toolu_{len(self.requests)}", "name": rule.tool, "input": rule.arguments}]

    def _rule_for(self, body: dict[str, Any]) -> ToolCallRule | None:
        """The rule whose marker is in the newest user text, unless a tool result has come since."""
        messages = body["messages"]
        said = [i for i, m in enumerate(messages) if m.get("role") == "user" and _text(m.get("content"))]
        last_user = said[-1] if said else -1
        tool_result_since = any(_is_tool_result(m) for m in messages[last_user + 1 :])
        user_text = _text(messages[last_user].get("content")) if last_user >= 0 else ""
        offered = _offered(body)
        for rule in self.rules:
            if rule.marker in user_text and not tool_result_since and rule.tool in offered:
                return rule
        return None


def _is_messages(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/v1/messages")


def _is_chat(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/chat/completions")


def _is_model_call(path: str) -> bool:
    return _is_chat(path) or _is_messages(path)


def _is_tool_result(message: dict[str, Any]) -> bool:
    """A tool's result: an OpenAI `tool` message, or an Anthropic user message of `tool_result` blocks."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return message.get("role") == "tool" or any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)


def _offered(body: dict[str, Any]) -> set[str]:
    """Tool names: OpenAI `{"function": {"name"}}`, Anthropic `{"name", "input_schema"}`."""
    return {str(t.get("function", {}).get("name") or t.get("name")) for t in body.get("tools") or []}


def _text(content: Any) -> str:
    """The text of a message or system prompt: a string, or OpenAI/Anthropic `text` parts
    (Anthropic `tool_result` and `tool_use` blocks carry no user text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            server.record(Recorded(self.path, {}, _auth_digest(self._key())))
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
            server.record(Recorded(self.path, body, _auth_digest(self._key())))
            if _is_messages(self.path):
                self._messages(body)
                return
            if not _is_chat(self.path):
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

        def _key(self) -> str | None:
            """The credential: OpenAI's bearer, or Anthropic's `x-api-key` (a third-party
            Anthropic endpoint gets the key that way: anthropic_adapter.build_anthropic_client)."""
            return self.headers.get("Authorization") or self.headers.get("x-api-key")

        def _messages(self, body: dict[str, Any]) -> None:
            problem = _messages_problem(body, self.headers.get("anthropic-version"))
            if problem:
                self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": problem}})
                return
            blocks = server.answer_blocks(body)
            if not body.get("stream"):
                self._json(200, _message(body, blocks))
                return
            self._open_stream()
            for name, event in _message_events(body, blocks):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

        def _open_stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, body: dict[str, Any], message: dict[str, Any]) -> None:
            self._open_stream()
            for chunk in _chunks(body, message):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def _auth_digest(header: str | None) -> str | None:
    """The key (bearer token or `x-api-key`) as `sha256:<12 hex>`: tests compare keys without logging them."""
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


def _messages_problem(body: dict[str, Any], version: str | None) -> str | None:
    """Why the Messages API would refuse this request (400 invalid_request_error), or None."""
    if not version:
        return "anthropic-version: header is required"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages: Field required (at least one message)"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required (a positive integer)"
    return None


_ANTHROPIC_USAGE = {"input_tokens": 10, "output_tokens": 2}


def _message(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A complete Messages API response."""
    return {
        "id": "msg_loopback",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": blocks,
        "stop_reason": _stop_reason(blocks),
        "stop_sequence": None,
        "usage": _ANTHROPIC_USAGE,
    }


def _stop_reason(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def _message_events(body: dict[str, Any], blocks: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Messages API stream: the message opens empty, each block opens, fills by deltas, closes."""
    opening = {**_message(body, []), "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": opening}
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    ending = {"stop_reason": _stop_reason(blocks), "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": ending, "usage": {"output_tokens": 2}}
    yield "message_stop", {"type": "message_stop"}
