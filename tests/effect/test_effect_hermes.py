"""Every declared setting takes effect: Hermes' own resolvers, run under each bot's HERMES_HOME.

The compat suite proves Hermes *accepts* what apply writes; this suite proves Hermes *does* what
the manifest says. After `apply`, `hermes_probe.py` runs inside the real hermes-agent 0.19.0 venv
with `HERMES_HOME=<root>/profiles/<bot>` (what `hermes -p <bot>` sets) and reports what Hermes'
own code resolves: tools per platform (`hermes_cli/tools_config.py:_get_platform_tools`), the
model (`hermes_cli/runtime_provider.py`), the timezone and each job's next run
(`hermes_time`, `cron/jobs.py:compute_next_run`), checkpoints, disabled skills, MCP servers with
their resolved headers, TTS, approvals, memory, `.env` as loaded, SOUL as the prompt builder reads
it, and the session `chat -c "Bot Chat"` resumes. Secrets are compared as sha256 prefixes. The
table in docs/manifest.md ("Effect") names the test that proves each field.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply, plan_json, profile, read_yaml

pytestmark = pytest.mark.hermes

PROBE = Path(__file__).with_name("hermes_probe.py")
NOW = "2026-12-01T05:00:00+00:00"  # 06:00 in Berlin: the 08:00 routine is two hours away
SECRET_OR = "sk-or-EFFECT-4242"
SECRET_GH = "Bearer ghp_EFFECT_77"
SECRET_PEER = "peer-EFFECT-key-99"
ALL_PLATFORMS_SAMPLE = ("cli", "cron", "telegram", "discord", "api_server")

FLEET = {
    "apiVersion": "hermes-fleet/v1",
    "kind": "Fleet",
    "metadata": {"name": "effect"},
    "spec": {
        "checkpoints": {"enabled": True, "max_snapshots": 9},
        "config": {"timezone": "Europe/Berlin"},
        "peers": [{"name": "spark", "url": "http://spark.lan:8642", "key": {"from_env": "EFFECT_PEER_KEY"}}],
        "bots": [
            {
                "name": "alpha",
                "title": "Alpha",
                "description": "Looks things up.",
                "display_name": "Alpha Bot",
                "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"},
                "toolsets": ["web", "file"],
                "soul": "You are Alpha, the effect bot.\n",
                "skills": {"disabled": ["notes"]},
                "tts": {"provider": "openai", "openai": {"voice": "onyx"}},
                "env": {"OPENROUTER_API_KEY": {"from_env": "EFFECT_OR_KEY"}, "PLAIN_SETTING": "on"},
                "mcp_servers": {
                    "gh": {"url": "https://mcp.example/gh", "headers": {"Authorization": {"from_env": "EFFECT_GH"}}},
                    "off": {"command": "true", "disabled": True},
                },
                "config": {"approvals": {"mode": "manual"}, "memory": {"memory_char_limit": 3000}},
                "routines": [{"name": "Morning", "schedule": "0 8 * * *", "prompt": "Say good morning"}],
            },
            {"name": "beta", "model": {"default": "openai/gpt-5"}},
            {"name": "gamma", "model": {"default": "openai/gpt-5"}, "config": {"timezone": "Asia/Tokyo"}},
        ],
    },
}


def sha12(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]


def probe(hermes: HermesCLI, bot: str, *platforms: str) -> dict[str, Any]:
    """What Hermes resolves for `bot`, by its own code (the probe never writes into the home)."""
    args = [str(hermes.python_bin), str(PROBE), "--now", NOW]
    for platform in platforms:
        args += ["--platform", platform]
    done = subprocess.run(args, env=hermes.env(bot), capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    errors = {k: v["error"] for k, v in report.items() if isinstance(v, dict) and "error" in v}
    assert errors == {}, errors
    return report


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("effect")
    manifests = base / "manifests"
    manifests.mkdir()
    (manifests / "fleet.yaml").write_text(yaml.safe_dump(FLEET, sort_keys=False))
    home = base / "hermes"
    home.mkdir()
    return manifests, home


@pytest.fixture(scope="module", autouse=True)
def secrets_on_this_machine() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {"EFFECT_OR_KEY": SECRET_OR, "EFFECT_GH": SECRET_GH, "EFFECT_PEER_KEY": SECRET_PEER}.items():
            mp.setenv(key, value)
        yield


@pytest.fixture(scope="module")
def fleet_home(applied: tuple[Path, Path]) -> Path:
    manifests, home = applied
    run = apply(manifests / "fleet.yaml", home, "--hermes-version", "0.19.0")
    assert run.code == 0, run.text
    return home


@pytest.fixture
def real(fleet_home: Path, hermes: HermesCLI) -> HermesCLI:
    """The real hermes CLI bound to the applied home (not the fixture's empty root)."""
    return HermesCLI(hermes.binary, fleet_home, hermes.userhome.parent)


def test_toolsets_are_exactly_the_declared_ones_on_every_platform(real: HermesCLI) -> None:
    report = probe(real, "alpha", *ALL_PLATFORMS_SAMPLE)
    for platform in ALL_PLATFORMS_SAMPLE:
        # Hermes adds every enabled MCP server (`gh`) and, where the platform's composite has it,
        # `kanban` (its tools stay hidden outside kanban workers): docs/hermes/files.md#toolsets.
        tools = set(report["tools"][platform])
        assert {"web", "file", "gh"} <= tools <= {"web", "file", "gh", "kanban"}, (platform, tools)
    assert "terminal" not in report["tools"]["cron"]  # routines run on the cron platform


def test_a_bot_without_toolsets_keeps_hermes_defaults(real: HermesCLI) -> None:
    assert "terminal" in probe(real, "beta")["tools"]["cli"]


def test_model_and_provider_resolve_as_declared(real: HermesCLI) -> None:
    model = probe(real, "alpha")["model"]
    assert model["default"] == "anthropic/claude-sonnet-4" and model["runtime"]["provider"] == "openrouter"
    assert model["runtime"]["api_key"] == sha12(SECRET_OR)  # found in the bot's own .env
    assert probe(real, "beta")["model"]["default"] == "openai/gpt-5"


@pytest.mark.parametrize("bot", ["alpha", "beta"])
def test_install_wide_timezone_and_checkpoints_reach_every_bot(real: HermesCLI, bot: str) -> None:
    report = probe(real, bot)
    assert report["timezone"]["effective"] == "Europe/Berlin"
    assert report["timezone"]["cli"] == "Europe/Berlin" and report["timezone"]["gateway"] == "Europe/Berlin"
    assert report["checkpoints"]["enabled"] is True and report["checkpoints"]["max_snapshots"] == 9


def test_a_bots_own_timezone_wins_over_the_install_wide_one(real: HermesCLI) -> None:
    assert probe(real, "gamma")["timezone"]["effective"] == "Asia/Tokyo"


def test_hermes_schedules_the_routine_at_eight_berlin_time(real: HermesCLI) -> None:
    (job,) = probe(real, "alpha")["timezone"]["jobs"]
    assert job["name"] == "[bot:alpha] Morning" and job["enabled"] is True
    assert job["next_run"] == "2026-12-01T08:00:00+01:00"  # cron.jobs.compute_next_run at NOW
    assert job["stored_next_run_at"].endswith("T08:00:00+01:00")  # what apply wrote agrees
    assert job["drift"] == []


def test_skills_tts_approvals_memory_take_effect(real: HermesCLI) -> None:
    report = probe(real, "alpha", "telegram")
    assert report["skills_disabled"]["cli"] == ["notes"] and report["skills_disabled"]["telegram"] == ["notes"]
    assert report["tts"]["provider"] == "openai" and report["tts"]["voice"] == "onyx"
    assert report["approvals"]["mode"] == "manual"
    assert report["memory"]["memory_char_limit"] == 3000 and report["memory"]["user_char_limit"] == 1375


def test_mcp_servers_start_with_secrets_resolved_and_disabled_ones_do_not(real: HermesCLI) -> None:
    mcp = probe(real, "alpha")["mcp"]
    assert mcp["would_start"] == ["gh"]  # `disabled: true` was written as `enabled: false`
    assert mcp["servers"]["gh"]["headers"]["Authorization"] == sha12(SECRET_GH)
    assert mcp["servers"]["gh"]["unresolved"] == []
    assert mcp["servers"]["off"]["enabled"] is False


def test_env_values_load_as_declared_and_install_wide_keys_reach_every_bot(real: HermesCLI) -> None:
    values = probe(real, "alpha")["env"]["values"]
    assert values["OPENROUTER_API_KEY"] == sha12(SECRET_OR)
    assert values["PLAIN_SETTING"] == sha12("on")
    assert values["HERMES_PEER_SPARK_KEY"] == sha12(SECRET_PEER)
    assert probe(real, "beta")["env"]["values"]["HERMES_PEER_SPARK_KEY"] == sha12(SECRET_PEER)


def test_soul_is_what_the_prompt_builder_reads(real: HermesCLI) -> None:
    soul = probe(real, "alpha")["soul"]
    assert soul["first_line"] == "You are Alpha, the effect bot." and soul["is_default"] is False
    assert soul["matches_file"] is True


@pytest.mark.parametrize("bot", ["alpha", "beta"])
def test_chat_dash_c_bot_chat_resumes_the_canonical_session(real: HermesCLI, fleet_home: Path, bot: str) -> None:
    import sqlite3

    resolved = probe(real, bot)["bot_chat"]["session_id"]
    with sqlite3.connect(profile(fleet_home, bot) / "state.db") as db:
        (expected,) = db.execute("SELECT id FROM sessions WHERE title = 'Bot Chat'").fetchone()
    assert resolved == expected


def test_every_managed_bot_carries_the_bot_mode_marker(fleet_home: Path) -> None:
    """Main's `tools/bot_mode_probe.py` treats an install as Bot Mode managed when a live profile's
    profile.yaml has ui_meta['hermes-bots'] as a mapping (docs/hermes/bot-mode.md#managed-marker);
    0.19.0 has no reader, so this checks the contract: beta declares only a model."""
    for bot in ("alpha", "beta", "gamma"):
        meta = read_yaml(profile(fleet_home, bot) / "profile.yaml")
        assert isinstance(meta["ui_meta"]["hermes-bots"], dict), bot


def test_the_plan_shows_what_each_bot_inherits(applied: tuple[Path, Path], fleet_home: Path) -> None:
    manifests, _ = applied
    report = plan_json(manifests / "fleet.yaml", fleet_home, "--hermes-version", "0.19.0")
    assert not report["summary"]["changes_pending"]
    assert any("install-wide settings are written into each of 3 bot(s)" in n for n in report["notes"])
    assert any(n.startswith("no effect on Hermes 0.19.0") and "bot_peers.spark.url" in n for n in report["notes"])


def test_hermes_managed_scope_wins_over_what_apply_wrote_as_plan_warns(real: HermesCLI, tmp_path: Path) -> None:
    """The plan's managed-scope warning is true: Hermes reads the managed value, not the bot's
    (hermes_cli/managed_scope.py, applied per leaf by hermes_time and load_config)."""
    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / "config.yaml").write_text("timezone: Asia/Tokyo\n")
    args = [str(real.python_bin), str(PROBE), "--now", NOW]
    env = {**real.env("alpha"), "HERMES_MANAGED_DIR": str(managed)}
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert json.loads(done.stdout)["timezone"]["effective"] == "Asia/Tokyo"


def test_description_and_display_name_as_hermes_reads_profile_yaml(real: HermesCLI, fleet_home: Path) -> None:
    """hermes_cli/profiles.py:read_profile_meta (0.19.0) is what `hermes profile` shows; it reads
    `description` only. `display_name` is read by main's profiles.list (docs/hermes/bot-mode.md#record):
    checked against that contract, as the file's top-level key."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from hermes_cli.profiles import read_profile_meta\n"
        "print(json.dumps(read_profile_meta(Path(sys.argv[1]))))\n"
    )
    args = [str(real.python_bin), "-c", code, str(profile(fleet_home, "alpha"))]
    done = subprocess.run(args, env=real.env("alpha"), capture_output=True, text=True, timeout=120, check=True)
    meta = json.loads(done.stdout)
    assert meta["description"] == "Looks things up."
    assert read_yaml(profile(fleet_home, "alpha") / "profile.yaml")["display_name"] == "Alpha Bot"
