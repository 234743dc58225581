"""Peers between machines of one fleet, configured on both sides from one declaration.

`peers: [{name: betabox, url: ..., key: ..., accept: {host: beta}}]`: every other machine
registers the peer (`bot_peers.betabox` and `HERMES_PEER_BETABOX_KEY`, root and every bot), and
beta gets the accepting side in its root profile only: Hermes' API server on the URL's port with
the same key, and one gateway serving every bot. One key reference, used on both sides.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.integration.helpers import apply, hermes_fleet, plan_json

KEY = "accept-" + "k" * 33

FLEET = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: duo}
spec:
  bots:
    - {name: a1, host: alpha}
    - {name: b1, host: beta}
    - {name: g1, host: gamma}
  peers:
    - name: betabox
      url: "http://beta.lan:8642"
      key: {from_env: BETA_PEER_KEY}
      accept: {host: beta}
"""


def _env(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip().strip('"') for k, v in pairs}


def _write(tmp_path: Path, text: str = FLEET) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BETA_PEER_KEY", KEY)
    return KEY


def test_one_declaration_configures_the_sending_and_the_accepting_side(tmp_path: Path, key: str) -> None:
    fleet = _write(tmp_path)
    homes = {h: tmp_path / h for h in ("alpha", "beta", "gamma")}
    for host, home in homes.items():
        run = apply(fleet, home, "--host", host)
        assert run.code == 0, run.text
        assert key not in run.text
    for sender, bot in (("alpha", "a1"), ("gamma", "g1")):
        home = homes[sender]
        for profile in (home, home / "profiles" / bot):
            assert _env(profile / ".env").get("HERMES_PEER_BETABOX_KEY") == key, profile
            assert "http://beta.lan:8642" in (profile / "config.yaml").read_text()
            assert "API_SERVER_KEY" not in _env(profile / ".env")
    beta = homes["beta"]
    root_env = _env(beta / ".env")
    assert {k: root_env.get(k) for k in ("API_SERVER_ENABLED", "API_SERVER_KEY", "API_SERVER_HOST", "API_SERVER_PORT")} == {
        "API_SERVER_ENABLED": "true",
        "API_SERVER_KEY": key,
        "API_SERVER_HOST": "0.0.0.0",
        "API_SERVER_PORT": "8642",
    }
    assert "multiplex_profiles: true" in (beta / "config.yaml").read_text()
    # The accepting side is the root's only: a bot's own gateway must not open a second API server.
    bot_env = _env(beta / "profiles" / "b1" / ".env")
    assert not [k for k in bot_env if k.startswith("API_SERVER_")] and "HERMES_PEER_BETABOX_KEY" not in bot_env
    b1_config = beta / "profiles" / "b1" / "config.yaml"
    assert not b1_config.exists() or "multiplex_profiles" not in b1_config.read_text()
    assert "bot_peers" not in (beta / "config.yaml").read_text(), "a machine is not its own peer"
    for host, home in homes.items():
        again = hermes_fleet("plan", "-f", fleet, "--home", home, "--host", host, "--detailed-exitcode")
        assert again.code == 0, again.text


def test_the_plan_masks_the_key_and_says_to_restart_the_gateway(tmp_path: Path, key: str) -> None:
    data = plan_json(_write(tmp_path), tmp_path / "beta", "--host", "beta")
    install = next(o for o in data["objects"] if o["kind"] == "install")
    shown = {f["field"]: f["new"] for f in install["fields"]}
    assert shown["env:API_SERVER_KEY"] == "(secret)" and shown["env:API_SERVER_PORT"] == "8642"
    assert any("restart the gateway" in note for note in data["notes"])
    assert key not in str(data)


def test_a_rotated_key_reaches_both_sides_and_nothing_else(tmp_path: Path, key: str, monkeypatch) -> None:
    fleet = _write(tmp_path)
    for host in ("alpha", "beta"):
        assert apply(fleet, tmp_path / host, "--host", host).code == 0
    rotated = "rotated-" + "r" * 32
    monkeypatch.setenv("BETA_PEER_KEY", rotated)
    for host in ("alpha", "beta"):
        data = plan_json(fleet, tmp_path / host, "--host", host)
        changed = {f["field"] for o in data["objects"] if o["action"] != "no-op" for f in o["fields"]}
        expected = {"env:API_SERVER_KEY"} if host == "beta" else {"env:HERMES_PEER_BETABOX_KEY"}
        assert changed == expected, (host, changed)
        assert apply(fleet, tmp_path / host, "--host", host).code == 0
    assert _env(tmp_path / "alpha" / "profiles" / "a1" / ".env")["HERMES_PEER_BETABOX_KEY"] == rotated
    assert _env(tmp_path / "beta" / ".env")["API_SERVER_KEY"] == rotated


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("      key: {from_env: BETA_PEER_KEY}\n", ""), "accepted by 'beta' but has no key"),
        (("      accept: {host: beta}", "      host: beta\n      accept: {host: beta}"), "a machine is not its own peer"),
        (('url: "http://beta.lan:8642"', 'url: "https://beta.example.com"'), "names no port"),
        (
            ("  peers:\n", "  peers:\n    - {name: other, url: 'http://b:1', key: {from_env: X}, accept: {host: beta}}\n"),
            "are both accepted by 'beta'",
        ),
    ],
)
def test_validation_of_the_accepting_side(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in FLEET
    run = hermes_fleet("validate", "-f", _write(tmp_path, FLEET.replace(*change)), "-o", "json")
    assert run.code == 2, run.out
    found = [d for d in run.json()["diagnostics"] if message in d["message"]]
    assert found and found[0]["code"] == "peer_accept", run.out


def test_behind_a_proxy_the_port_is_given_and_the_bind_stays_local(tmp_path: Path, key: str) -> None:
    text = FLEET.replace('url: "http://beta.lan:8642"', 'url: "https://beta.example.com"').replace(
        "accept: {host: beta}", "accept: {host: beta, port: 9100, bind: 127.0.0.1, profiles: false}"
    )
    home = tmp_path / "beta"
    assert apply(_write(tmp_path, text), home, "--host", "beta").code == 0
    env = _env(home / ".env")
    assert env["API_SERVER_PORT"] == "9100" and env["API_SERVER_HOST"] == "127.0.0.1"
    assert not (home / "config.yaml").exists() or "multiplex_profiles" not in (home / "config.yaml").read_text()
