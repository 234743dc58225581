"""Runtime health against the real hermes-agent 0.19.0: a routine Hermes ran and failed, its real
gateway and cron ticker (started, stalled, stopped), and provider credentials as Hermes resolves them.

Every state here is written by Hermes itself (`hermes cron run`, `hermes gateway run`); hermes-fleet
only reads it, through `hermes-fleet status`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from controller.hermes import providers
from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply, hermes_fleet, profile, write_fleet

pytestmark = pytest.mark.hermes

OR_KEY = "sk-or-HEALTHKEY-0b9c"


def status(root: Path) -> dict[str, Any]:
    run = hermes_fleet("status", "--home", root, "-o", "json")
    assert run.code == 0, run.text
    (fleet,) = run.json()["fleets"]
    return fleet["health"]


def codes(health: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["code"], f["object"]) for f in health["findings"]}


def bot(health: dict[str, Any], name: str) -> dict[str, Any]:
    return next(b for b in health["bots"] if b["bot"] == name)


def job_id(root: Path, name: str, title: str) -> str:
    jobs = json.loads((profile(root, name) / "cron" / "jobs.json").read_text())["jobs"]
    return next(j["id"] for j in jobs if j["name"] == f"[bot:{name}] {title}")


@pytest.fixture
def fleet(hermes: HermesCLI, hermes_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("OR_KEY", OR_KEY)
    manifest = write_fleet(
        tmp_path / "m",
        [
            {
                "name": "alpha",
                "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"},
                "env": {"OPENROUTER_API_KEY": {"from_env": "OR_KEY"}},
                "routines": [
                    {"name": "watchdog", "schedule": "every 1h", "script": "fail.sh", "no_agent": True},
                    {"name": "heartbeat", "schedule": "every 1h", "script": "ok.sh", "no_agent": True},
                ],
            },
            {"name": "beta", "model": {"provider": "claude", "default": "claude-sonnet-4"}},
        ],
    )
    assert apply(manifest, hermes_root).code == 0
    scripts = profile(hermes_root, "alpha") / "scripts"
    scripts.mkdir()
    (scripts / "fail.sh").write_text("#!/bin/bash\necho 'disk check: /data is 97% full' >&2\nexit 3\n")
    (scripts / "ok.sh").write_text("#!/bin/bash\necho fine\n")
    return hermes_root


def test_a_routine_hermes_ran_and_failed_is_visible_in_one_command(hermes: HermesCLI, fleet: Path) -> None:
    before = status(fleet)
    assert {r["last_status"] for r in bot(before, "alpha")["routines"]} == {None}  # never ran
    for title in ("watchdog", "heartbeat"):
        out = hermes.run("cron", "run", job_id(fleet, "alpha", title), profile="alpha")
        assert "Ran now" in out.stdout, out.stdout + out.stderr  # 0.19 runs it at once (docs/hermes/runtime.md)

    health = status(fleet)
    assert ("routine-failed", "routine/alpha/watchdog") in codes(health)
    assert ("routine-failed", "routine/alpha/heartbeat") not in codes(health)
    failed = next(f for f in health["findings"] if f["object"] == "routine/alpha/watchdog")
    assert "Script exited with code 3" in failed["message"]
    routines = {r["routine"]: r for r in bot(health, "alpha")["routines"]}
    assert routines["alpha/watchdog"]["last_status"] == "error"
    assert "97% full" in routines["alpha/watchdog"]["last_error"]
    assert routines["alpha/heartbeat"]["last_status"] == "ok"
    assert not health["healthy"]

    text = hermes_fleet("status", "--home", fleet)
    assert "! routine/alpha/watchdog: routine-failed: last run failed at" in text.out
    assert "! bot/alpha: gateway-down" in text.out  # routines, and no gateway to fire them


def start_gateway(hermes: HermesCLI, name: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [str(hermes.binary), "-p", name, "gateway", "run"], env=hermes.env(), stdout=handle, stderr=subprocess.STDOUT
        )
    beat = profile(hermes.root, name) / "cron" / "ticker_heartbeat"
    deadline = time.monotonic() + 90
    while not beat.exists():
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, "the gateway never wrote a ticker heartbeat: " + log.read_text(errors="replace")
        time.sleep(0.5)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def test_the_real_gateway_and_its_ticker(hermes: HermesCLI, fleet: Path, tmp_path: Path) -> None:
    assert ("gateway-down", "bot/alpha") in codes(status(fleet))
    proc = start_gateway(hermes, "alpha", tmp_path / "gateway.log")
    try:
        health = status(fleet)
        alpha = bot(health, "alpha")
        assert alpha["gateway"] == {
            "running": True,
            "ticks_store": True,
            "pid": proc.pid,
            "state": alpha["gateway"]["state"],
            "source": "gateway.pid",
        }
        assert alpha["ticker"]["heartbeat_age_seconds"] < 60
        assert not {c for c in codes(health) if c[1] == "bot/alpha" and c[0].startswith(("gateway", "ticker"))}

        # A wedged ticker: its heartbeat stops while the gateway lives on (Hermes writes it every 60 s).
        beat = profile(fleet, "alpha") / "cron" / "ticker_heartbeat"
        beat.write_text(str(time.time() - 600))
        assert ("ticker-stalled", "bot/alpha") in codes(status(fleet))
    finally:
        stop(proc)
    # Hermes leaves gateway_state.json saying "running" after a clean stop; the pid check is what counts.
    state = json.loads((profile(fleet, "alpha") / "gateway_state.json").read_text())
    health = status(fleet)
    assert bot(health, "alpha")["gateway"]["running"] is False
    assert ("gateway-down", "bot/alpha") in codes(health)
    assert isinstance(state, dict)


def hermes_finds_key(hermes: HermesCLI, name: str) -> bool:
    code = (
        "import json\n"
        "from hermes_cli.runtime_provider import resolve_runtime_provider\n"
        "try:\n"
        "    r = resolve_runtime_provider()\n"
        "    print(json.dumps(bool(r.get('api_key'))))\n"
        "except Exception as e:\n"
        "    print(json.dumps(False))\n"
    )
    return json.loads(hermes.python(code, profile=name).stdout.strip().splitlines()[-1])


def test_missing_credentials_agree_with_hermes(hermes: HermesCLI, fleet: Path) -> None:
    health = status(fleet)
    assert bot(health, "alpha")["credentials"] == "env:OPENROUTER_API_KEY"
    assert bot(health, "beta")["credentials"] is None
    assert ("credentials-missing", "bot/beta") in codes(health)
    assert hermes_finds_key(hermes, "alpha") is True
    assert hermes_finds_key(hermes, "beta") is False
    assert OR_KEY not in json.dumps(health)

    # A key put in beta's .env by hand (the alias `claude` is Anthropic): both now find it.
    env = profile(fleet, "beta") / ".env"
    env.write_text(env.read_text() + "ANTHROPIC_API_KEY=sk-ant-HANDMADE-1\n")
    assert hermes_finds_key(hermes, "beta") is True
    health = status(fleet)
    assert bot(health, "beta")["credentials"] == "env:ANTHROPIC_API_KEY"
    assert ("credentials-missing", "bot/beta") not in codes(health)

    # Resolving copied the key's *source* into beta's auth.json pool (`source: env:ANTHROPIC_API_KEY`,
    # no value): with the key gone from .env, neither Hermes nor the check finds a credential.
    pool = json.loads((profile(fleet, "beta") / "auth.json").read_text())["credential_pool"]["anthropic"]
    assert [e["source"] for e in pool] == ["env:ANTHROPIC_API_KEY"]
    env.write_text(env.read_text().replace("ANTHROPIC_API_KEY=sk-ant-HANDMADE-1\n", ""))
    assert hermes_finds_key(hermes, "beta") is False
    assert ("credentials-missing", "bot/beta") in codes(status(fleet))


def test_the_provider_table_is_hermes_own(hermes: HermesCLI) -> None:
    code = (
        "import json\n"
        "from hermes_cli.auth import PROVIDER_REGISTRY, resolve_provider\n"
        "reg = {k: [v.auth_type, list(v.api_key_env_vars)] for k, v in PROVIDER_REGISTRY.items() if k == v.id}\n"
        f"aliases = {{}}\n"
        f"for a in {sorted(providers.ALIASES)!r}:\n"
        "    try:\n"
        "        aliases[a] = resolve_provider(a)\n"
        "    except Exception as e:\n"
        "        aliases[a] = 'error'\n"
        "print(json.dumps({'reg': reg, 'aliases': aliases}))\n"
    )
    data = json.loads(hermes.python(code).stdout.strip().splitlines()[-1])
    api_key = {k: tuple(v[1]) for k, v in data["reg"].items() if v[0] == "api_key"}
    assert api_key == {k: v for k, v in providers.API_KEY_PROVIDERS.items() if k != "openrouter"}
    oauth = {k for k, v in data["reg"].items() if v[0].startswith("oauth")}
    assert oauth == providers.OAUTH_PROVIDERS
    assert data["aliases"] == providers.ALIASES


def test_watch_alerts_once_when_a_routine_starts_failing(
    hermes: HermesCLI, fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.watch.test_notifications import TOKEN, Receiver

    receiver = Receiver()
    try:
        folder = tmp_path / "m"
        doc = json.loads((folder / "fleet.yaml").read_text())
        doc["spec"]["notifications"] = [
            {"name": "ops", "url": {"from_env": "OPS_HOOK"}, "events": ["routine-failed", "health-recovered"]}
        ]
        (folder / "fleet.yaml").write_text(json.dumps(doc))
        monkeypatch.setenv("OPS_HOOK", receiver.url)

        def once() -> None:
            run = hermes_fleet("watch", "--once", "-f", folder, "--home", fleet, "--log-format", "json")
            assert run.code == 0, run.text
            assert TOKEN not in run.text

        once()
        assert receiver.bodies == []  # nothing has failed yet
        hermes.run("cron", "run", job_id(fleet, "alpha", "watchdog"), profile="alpha")
        once()
        (alert,) = receiver.wait(1)
        assert (alert["event"], alert["details"]["object"]) == ("routine-failed", "routine/alpha/watchdog")
        assert "Script exited with code 3" in alert["summary"]
        once()  # still failing: already told (the status file remembers across --once runs)
        assert len(receiver.bodies) == 1
        (profile(fleet, "alpha") / "scripts" / "fail.sh").write_text("#!/bin/bash\necho fixed\n")
        hermes.run("cron", "run", job_id(fleet, "alpha", "watchdog"), profile="alpha")
        once()
        assert [b["event"] for b in receiver.wait(2)] == ["routine-failed", "health-recovered"]
    finally:
        receiver.close()
