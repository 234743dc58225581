"""A peer's request is answered by the bot it names, through the accepting machine's real gateway.

`apply --host beta` writes the accepting side of a peer (`accept:`): the API server's key and
`gateway.multiplex_profiles`. The real `hermes gateway run` (0.19.0) then serves
`/p/<bot>/v1/chat/completions` (gateway/platforms/api_server.py); a chat request with the peer key
runs a full agent turn as that bot, whose model is the recording loopback endpoint; without the
key it is refused before any agent runs. (docs/hermes/peers.md, docs/hermes/runtime.md#peers-run)
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply
from tests.runtime.model_server import ModelServer
from tests.runtime.outside_guard import OutsideGuard
from tests.runtime.runner import BotRunner

pytestmark = pytest.mark.hermes

KEY = "peer-runtime-" + "k" * 28
OR_KEY = "sk-or-RUNTIME-PEER-12"
SOULS = {"b1": "You are B1. Marker: SOUL-B1-81a.", "b2": "You are B2. Marker: SOUL-B2-6e0."}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fleet(model_url: str, port: int) -> dict[str, Any]:
    env = {"OPENROUTER_API_KEY": {"from_env": "RUNTIME_OR_KEY"}, "OPENROUTER_BASE_URL": model_url}
    bots = [
        {
            "name": name,
            "host": "beta",
            "model": {"provider": "openrouter", "default": f"vendor/{name}-model"},
            "soul": soul + "\n",
            "env": env,
        }
        for name, soul in SOULS.items()
    ]
    peer = {
        "name": "betabox",
        "url": f"http://127.0.0.1:{port}",
        "key": {"from_env": "BETA_PEER_KEY"},
        "accept": {"host": "beta", "bind": "127.0.0.1"},
    }
    return {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": "duo"},
        "spec": {"bots": [{"name": "a1", "host": "alpha"}, *bots], "peers": [peer]},
    }


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, hermes_binary: Path, model: ModelServer, guard: OutsideGuard
) -> Iterator[tuple[BotRunner, int]]:
    base = tmp_path_factory.mktemp("runtime-peer")
    port = _free_port()
    (base / "fleet.yaml").write_text(json.dumps(fleet(model.url, port)))
    home = base / "beta"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BETA_PEER_KEY", KEY)
        mp.setenv("RUNTIME_OR_KEY", OR_KEY)
        done = apply(base / "fleet.yaml", home, "--host", "beta")
    assert done.code == 0, done.text
    runner = BotRunner(HermesCLI(hermes_binary, home, base / "scratch"), model, guard)
    for bot in ("default", *SOULS):
        runner.seed_caches(bot)
    log_path = base / "gateway.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [str(hermes_binary), "gateway", "run"],
            env=runner.env(),
            cwd=runner.cli.userhome,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_healthy(port, server, log_path)
            yield runner, port
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    assert KEY not in log_path.read_text()


def chat(port: int, bot: str, token: str | None, text: str) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/p/{bot}/v1/chat/completions", body, headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=240) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}


@pytest.mark.parametrize("bot", sorted(SOULS))
def test_a_request_with_the_peer_key_is_answered_by_the_bot_it_names(
    gateway: tuple[BotRunner, int], model: ModelServer, bot: str
) -> None:
    _, port = gateway
    model.drain()
    status, answer = chat(port, bot, KEY, f"Hello {bot}, from a peer.")
    assert status == 200
    assert answer["choices"][0]["message"]["content"] == model.reply
    (request, *_) = model.drain()
    assert request.model == f"vendor/{bot}-model"
    assert request.system_prompt.startswith(SOULS[bot])
    assert f"Hello {bot}, from a peer." in request.user_text


@pytest.mark.parametrize("token", [None, KEY[::-1]], ids=["no-key", "wrong-key"])
def test_a_request_without_the_peer_key_is_refused_before_any_agent_runs(
    gateway: tuple[BotRunner, int], model: ModelServer, token: str | None
) -> None:
    _, port = gateway
    model.drain()
    status, _ = chat(port, "b1", token, "Let me in.")
    assert status == 401
    assert model.drain() == []


def test_the_gateway_made_no_outside_call(gateway: tuple[BotRunner, int], guard: OutsideGuard) -> None:
    _, port = gateway
    chat(port, "b2", KEY, "One more.")
    assert guard.drain() == []


def _wait_healthy(port: int, server: subprocess.Popen[bytes], log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"hermes gateway run exited {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with opener.open(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"the API server never answered on port {port}:\n{log.read_text()[-3000:]}")
