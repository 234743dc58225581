"""A peer between two machines of one fleet works in the real Hermes 0.19.0, from one declaration.

`apply --host beta` writes the accepting side; `hermes gateway run` on beta's home then serves
its API server with that key, and with `gateway.multiplex_profiles` a `/p/<bot>/` route reaches
each bot. On alpha, a bot's process reads the sending side with Hermes' own loaders
(`hermes_cli/config.py:load_config` for `bot_peers`, `hermes_cli/env_loader.py:load_hermes_dotenv`
for `HERMES_PEER_<NAME>_KEY`) and calls beta the way main's `hermes peer` client does (bearer key,
`<url>/p/<profile>/...`): accepted; a wrong key or an unknown bot is refused.
(docs/hermes/peers.md)
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.hermes_support import INSTALL_HINT, HermesCLI, require_hermes
from tests.integration.helpers import apply

pytestmark = pytest.mark.hermes

KEY = "peer-effect-" + "q" * 28

# Runs inside Hermes' venv under a bot's HERMES_HOME: what a sending bot's process holds, used as
# main's `hermes peer` client uses it (hermes_cli/subcommands/peer.py: _request, _base_url).
SENDER = """
import json, os, sys, urllib.error, urllib.request
from hermes_cli.env_loader import load_hermes_dotenv
from hermes_cli.config import load_config
load_hermes_dotenv()
peer = load_config()["bot_peers"]["betabox"]
key = os.environ["HERMES_PEER_BETABOX_KEY"]
out = {}
for label, profile, token in (("b1", "b1", key), ("wrong-key", "b1", key[::-1]), ("ghost", "ghost", key)):
    request = urllib.request.Request(peer["url"].rstrip("/") + f"/p/{profile}/v1/models",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as reply:
            out[label] = reply.status
    except urllib.error.HTTPError as exc:
        out[label] = exc.code
print(json.dumps(out))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fleet(folder: Path, port: int) -> Path:
    doc = {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": "duo"},
        "spec": {
            "bots": [{"name": "a1", "host": "alpha", "title": "A"}, {"name": "b1", "host": "beta", "title": "B"}],
            "peers": [
                {
                    "name": "betabox",
                    "url": f"http://127.0.0.1:{port}",
                    "key": {"from_env": "BETA_PEER_KEY"},
                    "accept": {"host": "beta", "bind": "127.0.0.1"},
                }
            ],
        },
    }
    path = folder / "fleet.yaml"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_the_accepting_gateway_serves_the_peer_key_and_each_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = require_hermes()
    monkeypatch.setenv("BETA_PEER_KEY", KEY)
    port = _free_port()
    fleet = _fleet(tmp_path, port)
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for host, home in (("alpha", alpha), ("beta", beta)):
        run = apply(fleet, home, "--host", host)
        assert run.code == 0, run.text

    gateway = HermesCLI(binary, beta, tmp_path / "beta-user")
    has_aiohttp = gateway.python("import aiohttp", check=False)
    assert has_aiohttp.returncode == 0, f"Hermes' API server needs aiohttp in Hermes' venv: {INSTALL_HINT}"
    log = (tmp_path / "gateway.log").open("w")
    server = subprocess.Popen(
        [str(binary), "gateway", "run"], env=gateway.env(), cwd=gateway.userhome, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        _wait_healthy(port, server, tmp_path / "gateway.log")
        sender = HermesCLI(binary, alpha, tmp_path / "alpha-user")
        result = json.loads(sender.python(SENDER, profile="a1").stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    assert result == {"b1": 200, "wrong-key": 401, "ghost": 404}, result
    assert KEY not in (tmp_path / "gateway.log").read_text()


def _wait_healthy(port: int, server: subprocess.Popen[bytes], log: Path, timeout: float = 60.0) -> None:
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
