"""Every routine of `examples/team` runs on the real hermes-agent 0.19.0, as its bot, with its model.

The example is applied unedited (`apply -f examples/team --host office --no-rooms --hermes-version
0.19.0`, its `from_env` secrets set to dummy values), then each routine is fired the way a bot's
scheduler fires it: `hermes -p <bot> cron run <id>` (tools/cronjob_tools.py:_execute_job_now ->
cron/scheduler.py:run_one_job) and, for the paused one, `hermes -p <bot> cron tick`
(cron/scheduler.py:tick). The model is the recording loopback endpoint (tests/runtime/model_server.py):
OpenAI-style for the openrouter bots, the Anthropic Messages API for `researcher`
(`provider: anthropic`).

The manifests must not name the test endpoint, so after apply the test appends
`OPENROUTER_BASE_URL=<endpoint>` and `ANTHROPIC_BASE_URL=<endpoint>` to each bot's `.env`: lines the
fleet does not manage (a cron run reads provider variables from the profile's `.env` only;
docs/hermes/runtime.md#model-calls). Nothing else apply wrote is touched.

The `anthropic` SDK is not a dependency of hermes-agent 0.19.0: Hermes installs it on first use
(tools/lazy_deps.py, feature `provider.anthropic`). The suite disables lazy installs, so the SDK
comes from Hermes' durable lazy-install target (`HERMES_LAZY_INSTALL_TARGET`), which
`.ci/install-hermes` fills with the pinned `anthropic==0.87.0`.

`reviewer`, the only bot `--host spark` applies, declares no routine (asserted below), so no
second apply is needed for routines; the spark plan's notes are pinned all the same.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hermes_support import HermesCLI, hermes_bin
from tests.integration.helpers import apply, plan_json
from tests.runtime.model_server import ModelServer
from tests.runtime.outside_guard import OutsideGuard
from tests.runtime.runner import BotRunner, Run

pytestmark = pytest.mark.hermes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "team"
SECRETS = ("OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "CRM_API_TOKEN", "GITHUB_MCP_AUTHORIZATION", "SPARK_PEER_KEY")
FLAGS = ("--no-rooms", "--hermes-version", "0.19.0")
DELEGATION_MARKS = ("hermes -p", "run this in the terminal", "[bot-mode:routine:v2]", "Routine: ")
REPLY = "Team routine output TEAM-OUT-58."
LAZY_TARGET_ENV = "HERMES_LAZY_INSTALL_TARGET"  # tools/lazy_deps.py:_LAZY_TARGET_ENV


@dataclass(frozen=True)
class Declared:
    """One routine as examples/team declares it, with what its bot makes of it."""

    bot: str
    title: str
    prompt: str
    deliver: str
    paused: bool
    provider: str
    model: str
    soul: str

    @property
    def label(self) -> str:
        return f"{self.bot}/{self.title}"


def documents() -> list[dict[str, Any]]:
    found = []
    for path in sorted(EXAMPLE.glob("*.yaml")) + sorted((EXAMPLE / "bots").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                found.append({**doc, "_dir": path.parent})
    return found


def declared_routines() -> list[Declared]:
    """Every routine of the example: `kind: Routine` documents and each bot's `spec.routines`."""
    docs = documents()
    bots = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Bot"}
    (policy,) = [d["spec"] for d in docs if d["kind"] == "Policy"]
    entries = [(d["spec"]["bot"], {"name": d["metadata"]["name"], **d["spec"]}) for d in docs if d["kind"] == "Routine"]
    entries += [(name, r) for name, bot in bots.items() for r in bot["spec"].get("routines") or []]
    routines = []
    for bot_name, routine in entries:
        bot = bots[bot_name]
        model = bot["spec"].get("model") or policy["defaults"]["model"]
        soul = (bot["_dir"] / bot["spec"]["soul_file"]).read_text()
        routines.append(
            Declared(
                bot=bot_name,
                title=routine["name"],
                prompt=routine["prompt"],
                deliver=routine.get("deliver", "local"),
                paused=bool(routine.get("paused")),
                provider=routine.get("provider") or model["provider"],
                model=routine.get("model") or model["default"],
                soul=soul.strip(),
            )
        )
    return routines


ROUTINES = declared_routines()
RUNNING = [r for r in ROUTINES if not r.paused]
PAUSED = [r for r in ROUTINES if r.paused]


def bots_on(host: str) -> set[str]:
    return {d["metadata"]["name"] for d in documents() if d["kind"] == "Bot" and d["spec"].get("host") == host}


@pytest.fixture(scope="module")
def lazy_target(hermes_binary: Path) -> Path:
    target = hermes_binary.parent.parent.with_name(hermes_binary.parent.parent.name + "-lazy")
    if not (target / "anthropic").is_dir():
        pytest.fail(f"the anthropic SDK is not in {target}: run .ci/install-hermes")
    return target


@pytest.fixture(scope="module")
def runner(
    tmp_path_factory: pytest.TempPathFactory,
    hermes_binary: Path,
    model: ModelServer,
    guard: OutsideGuard,
    lazy_target: Path,
) -> Iterator[BotRunner]:
    base = tmp_path_factory.mktemp("runtime-team")
    home = base / "hermes"
    home.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        for name in SECRETS:
            mp.setenv(name, f"dummy-{name.lower()}")
        done = apply(EXAMPLE, home, "--host", "office", *FLAGS)
    assert done.code == 0, done.text
    cli = HermesCLI(hermes_binary, home, base / "scratch")
    endpoint = f"OPENROUTER_BASE_URL={model.url}\nANTHROPIC_BASE_URL={model.url}\n"
    for bot in bots_on("office"):
        with (home / "profiles" / bot / ".env").open("a") as env:
            env.write(endpoint)
    model.reply = REPLY
    yield TeamRunner(cli, model, guard, lazy_target)


class TeamRunner(BotRunner):
    """A BotRunner whose Hermes finds the `anthropic` SDK in its durable lazy-install target."""

    def __init__(self, cli: HermesCLI, model: ModelServer, guard: OutsideGuard, lazy_target: Path) -> None:
        super().__init__(cli, model, guard)
        self.lazy_target = lazy_target

    def env(self) -> dict[str, str]:
        return {**super().env(), LAZY_TARGET_ENV: str(self.lazy_target)}


def store(runner: BotRunner, bot: str) -> Path:
    return runner.profile(bot) / "cron" / "jobs.json"


def job(runner: BotRunner, routine: Declared) -> dict[str, Any]:
    jobs = json.loads(store(runner, routine.bot).read_text())["jobs"]
    (found,) = [j for j in jobs if j["name"] == f"[bot:{routine.bot}] {routine.title}"]
    return found


def outputs(runner: BotRunner, routine: Declared) -> list[Path]:
    """What Hermes saved of the job's runs: cron/jobs.py:save_job_output, one file per run."""
    folder = runner.profile(routine.bot) / "cron" / "output" / job(runner, routine)["id"]
    return sorted(folder.glob("*.md")) if folder.is_dir() else []


def cron_run(runner: BotRunner, routine: Declared) -> Run:
    run = runner.hermes(routine.bot, "cron", "run", job(runner, routine)["id"])
    assert run.proc.returncode == 0, run.output[-3000:]
    return run


@pytest.fixture(scope="module", params=RUNNING, ids=[r.label for r in RUNNING])
def fired(request: pytest.FixtureRequest, runner: BotRunner) -> tuple[Declared, Run]:
    """Each running routine fired once by `cron run` (shared by the tests of that routine)."""
    routine: Declared = request.param
    return routine, cron_run(runner, routine)


def test_the_example_has_routines_of_each_kind() -> None:
    assert RUNNING and PAUSED
    assert {r.provider for r in RUNNING} == {"openrouter", "anthropic"}


def test_the_spark_bots_declare_no_routine() -> None:
    assert bots_on("spark") == {"reviewer"}
    assert not [r for r in ROUTINES if r.bot in bots_on("spark")]


def test_every_routine_is_in_its_bots_store(runner: BotRunner) -> None:
    for routine in ROUTINES:
        assert job(runner, routine)["enabled"] is not routine.paused


def test_the_routine_runs_as_its_bot_with_its_model(fired: tuple[Declared, Run]) -> None:
    routine, run = fired
    (request,) = run.requests
    assert request.anthropic is (routine.provider == "anthropic")
    assert request.model == routine.model
    assert request.system_prompt.startswith(routine.soul)
    assert "Ran now: succeeded" in run.proc.stdout


def test_the_instruction_itself_reaches_the_model(fired: tuple[Declared, Run]) -> None:
    routine, run = fired
    (request,) = run.requests
    assert routine.prompt in request.user_text
    assert not [mark for mark in DELEGATION_MARKS if mark in request.user_text], request.user_text


def test_the_output_lands_where_0190_puts_it(runner: BotRunner, fired: tuple[Declared, Run]) -> None:
    """Every run's output is saved in cron/output/<id>/ (cron/jobs.py:save_job_output). `bot-chat`
    has no reader on 0.19.0: cron/scheduler.py:_deliver_result resolves no target for it, and
    run_one_job records that as the job's delivery error while the run itself is ok."""
    routine, _ = fired
    (saved,) = outputs(runner, routine)
    assert REPLY in saved.read_text()
    record = job(runner, routine)
    assert record["last_status"] == "ok"
    if routine.deliver == "bot-chat":
        assert record["last_delivery_error"] == "no delivery target resolved for deliver=bot-chat"
    else:
        assert record["last_delivery_error"] is None


@pytest.mark.parametrize("routine", PAUSED, ids=[r.label for r in PAUSED])
def test_a_paused_routine_is_refused_by_cron_run(runner: BotRunner, routine: Declared) -> None:
    run = cron_run(runner, routine)
    assert run.requests == []
    assert "Job is paused/disabled" in run.proc.stdout
    assert outputs(runner, routine) == []


@pytest.mark.parametrize("routine", PAUSED, ids=[r.label for r in PAUSED])
def test_the_tick_skips_a_paused_routine_even_when_due(runner: BotRunner, routine: Declared) -> None:
    """Its slot passed 30 s ago (inside cron/jobs.py:_compute_grace_seconds): get_due_jobs still
    leaves it out, because it is not enabled."""
    data = json.loads(store(runner, routine.bot).read_text())
    for entry in data["jobs"]:
        if entry["id"] == job(runner, routine)["id"]:
            entry["next_run_at"] = (datetime.now(UTC) - timedelta(seconds=30)).isoformat()
    store(runner, routine.bot).write_text(json.dumps(data, indent=2))
    tick = runner.hermes(routine.bot, "cron", "tick")
    assert tick.proc.returncode == 0, tick.output[-3000:]
    assert not [r for r in tick.requests if routine.prompt in r.user_text]
    assert outputs(runner, routine) == []
    assert job(runner, routine)["enabled"] is False


def test_nothing_left_the_machine(fired: tuple[Declared, Run]) -> None:
    _, run = fired
    assert run.outside == []


# The notes `plan` gives examples/team on 0.19.0, each deserved there (docs/hermes/no-effect.md):
# 0.19.0 reads no loop guard, bot-mode protocol, group router or bot_peers key, and only
# `description` of profile.yaml (hermes_cli/profiles.py:read_profile_meta); `bot-chat` has no
# delivery target (cron/scheduler.py:_deliver_result, proven above); its venv has no `mcp`
# (tools/mcp_tool.py:discover_mcp_tools starts nothing). A new note fails here until it is judged.
_NO_PEERS = (
    "no effect on Hermes 0.19.0, which has no loop guard, bot-mode protocol, group router or peers (Hermes main's "
    "gateway and agent read them): agent.bot_mode_protocol, auxiliary.group_router.model, "
    "auxiliary.group_router.provider, {peers}gateway.bot_loop_guard.cooldown_seconds, gateway.bot_loop_guard.enabled, "
    "gateway.bot_loop_guard.max_events, gateway.bot_loop_guard.window_seconds"
)
_NO_BOT_MODE = (
    "no effect on Hermes 0.19.0, which reads no Bot Mode record (the Desktop and the gateway of Hermes main read them "
    "from profile.yaml): {fields}"
)
_INSTALL_WIDE = (
    "install-wide settings are written into each of {count} bot(s) as well as the root (a bot reads only its own "
    "profile; its own value wins): agent.bot_mode_protocol, auxiliary.group_router.model, "
    "auxiliary.group_router.provider, {peers}checkpoints.enabled, checkpoints.max_total_size_mb, "
    "gateway.bot_loop_guard.cooldown_seconds, gateway.bot_loop_guard.enabled, gateway.bot_loop_guard.max_events, "
    "gateway.bot_loop_guard.window_seconds, timezone{peer_key}"
)
_PEERS = "bot_peers.spark.note, bot_peers.spark.url, "
_NO_MCP = (
    "warning: the Hermes environment that runs these bots ({python}) has no mcp library, so Hermes starts no MCP "
    "server: 2 bot(s) declare crm, github, and none of them will run; install hermes-agent[mcp] into that "
    "environment (the Ansible role does when a bot declares one)"
)
_BOT_CHAT = (
    "warning: deliver: bot-chat has no reader on Hermes 0.19.0 (its cron delivery knows no 'bot-chat' target): each "
    "run records 'no delivery target resolved for deliver=bot-chat' and the output is kept only in the bot's "
    "cron/output/<job id>/; use deliver: local, or a platform target: researcher/morning digest, triage/ticket sweep"
)
_AUTO_ROOM = (
    "room 'Client Desk': who_answers: auto is applied as the gateway's mentions_only policy (a message that names no "
    "bot is answered by none; @-mentioned bots answer): the gateway has no automatic pick"
)
_NO_ROOMS = "rooms were left out (--no-rooms): the gateway was not asked and no room is changed"


def expected_notes(host: str, python: str) -> list[str]:
    if host == "office":
        fields = "title (5 bot(s)), display_name (1 bot(s)), avatar (5 bot(s)), hidden (1 bot(s)), pinned (1 bot(s)), "
        return [
            _NO_PEERS.format(peers=_PEERS),
            _NO_BOT_MODE.format(fields=fields + "section (5 bot(s))"),
            _BOT_CHAT,
            _INSTALL_WIDE.format(count=5, peers=_PEERS, peer_key=", env:HERMES_PEER_SPARK_KEY"),
            _NO_MCP.format(python=python),
            _AUTO_ROOM,
            _NO_ROOMS,
        ]
    return [
        _NO_PEERS.format(peers=""),
        _NO_BOT_MODE.format(fields="title (1 bot(s)), section (1 bot(s))"),
        _INSTALL_WIDE.format(count=1, peers="", peer_key=""),
        _NO_ROOMS,
    ]


@pytest.mark.parametrize("host", ["office", "spark"])
def test_the_plan_gives_exactly_the_deserved_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_binary: Path, host: str
) -> None:
    """The Hermes that runs the bots is the one on PATH (controller/adapters/hermes_install.py:
    mcp_library), here the 0.19.0 under test, which has no `mcp` library."""
    for name in SECRETS:
        monkeypatch.setenv(name, f"dummy-{name.lower()}")
    monkeypatch.setenv("PATH", f"{hermes_binary.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    python = str(hermes_binary.parent / "python")
    assert hermes_bin() == hermes_binary
    notes = plan_json(EXAMPLE, tmp_path, "--host", host, *FLAGS)["notes"]
    assert notes == expected_notes(host, python)
