"""The recording endpoint refuses what the real APIs refuse, and records Anthropic requests like chat ones.

Plain HTTP against the server (no Hermes): the rules of tests/runtime/model_server.py, each as the
real API applies it (the Messages API: 400 `invalid_request_error` without `anthropic-version`,
`model`, `messages` or `max_tokens`).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.runtime.model_server import ModelServer, ToolCallRule

HEADERS = {"Content-Type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "k-test"}
GOOD = {
    "model": "claude-opus-4",
    "max_tokens": 64,
    "system": [{"type": "text", "text": "SOUL-A"}, {"type": "text", "text": "more"}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hello CALL"}]}],
    "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    running = ModelServer(rules=[ToolCallRule("CALL", "read_file", {"path": "a"})]).start()
    yield running
    running.stop()


def post(server: ModelServer, body: dict[str, Any], headers: dict[str, str] = HEADERS) -> tuple[int, str]:
    url = server.url.removesuffix("/v1") + "/v1/messages"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy
    try:
        with direct.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize("missing", ["model", "messages", "max_tokens"])
def test_a_messages_request_without_a_required_field_is_a_400(server: ModelServer, missing: str) -> None:
    status, text = post(server, {k: v for k, v in GOOD.items() if k != missing})
    assert status == 400
    assert json.loads(text)["error"]["type"] == "invalid_request_error"
    assert missing in json.loads(text)["error"]["message"]


def test_a_messages_request_without_the_version_header_is_a_400(server: ModelServer) -> None:
    status, _ = post(server, GOOD, {k: v for k, v in HEADERS.items() if k != "anthropic-version"})
    assert status == 400


def test_an_anthropic_request_is_recorded_like_a_chat(server: ModelServer) -> None:
    status, text = post(server, GOOD)
    assert status == 200
    (recorded,) = server.chats()
    assert recorded.anthropic and recorded.model == "claude-opus-4"
    assert recorded.system_prompt == "SOUL-A\nmore"
    assert recorded.user_text == "hello CALL"
    assert recorded.tool_names == {"read_file"}
    assert recorded.authorization_sha256 is not None
    (block,) = json.loads(text)["content"]
    assert block["type"] == "tool_use" and block["input"] == {"path": "a"}


def test_a_tool_result_ends_the_turn_with_text(server: ModelServer) -> None:
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "x"}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0", "name": "read_file", "input": {}}]}
    status, text = post(server, {**GOOD, "messages": [*GOOD["messages"], call, result]})
    assert status == 200
    assert json.loads(text)["content"] == [{"type": "text", "text": server.reply}]
    assert json.loads(text)["stop_reason"] == "end_turn"


def test_a_streamed_answer_is_the_messages_event_sequence(server: ModelServer) -> None:
    status, text = post(server, {**GOOD, "stream": True, "tools": []})
    assert status == 200
    events = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
    assert events == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert server.reply in text
