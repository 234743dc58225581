"""Routines fired by Hermes' own runner reach the model as their bot, and their output lands as declared.

After `apply`, the real hermes-agent 0.19.0 runs each routine the way a bot's scheduler does:
`hermes -p <bot> cron run <id>` (0.19.0 runs the job at once: tools/cronjob_tools.py:
_execute_job_now -> cron/scheduler.py:run_one_job) and `hermes -p <bot> cron tick` (runs every
due job: cron/scheduler.py:tick, cron/jobs.py:get_due_jobs). The model is the recording loopback
endpoint. (docs/hermes/runtime.md#routines-run)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.hermes_support import HermesCLI
from tests.integration.helpers import apply
from tests.runtime.model_server import ModelServer
from tests.runtime.outside_guard import OutsideGuard
from tests.runtime.runner import BotRunner, Run

pytestmark = pytest.mark.hermes

OR_KEY = "sk-or-RUNTIME-ROUTINES-77"
SOUL = "You are Writer, who drafts the newsletter. Marker: SOUL-WRITER-5d9."
MORNING = "Summarize the overnight news in three lines. RT-MORNING"
FOLLOW = "Continue the story from your previous notes. RT-FOLLOW"
HELD = "This must never run. RT-HELD"
REPLY = "Routine output RT-OUT-31."
ROUTINE_MODEL = "openai/gpt-5-mini"


def fleet(model_url: str) -> dict[str, Any]:
    """The manifest; each bot reaches OpenRouter through `model_url` (docs/hermes/runtime.md#model-calls)."""
    env = {"OPENROUTER_API_KEY": {"from_env": "RUNTIME_OR_KEY"}, "OPENROUTER_BASE_URL": model_url}
    return {
        "apiVersion": "hermes-fleet/v1",
        "kind": "Fleet",
        "metadata": {"name": "runtime-routines"},
        "spec": {
            "bots": [
                {
                    "name": "writer",
                    "model": {"provider": "openrouter", "default": "anthropic/claude-sonnet-4"},
                    "toolsets": ["web", "file"],
                    "soul": SOUL + "\n",
                    "env": env,
                    "routines": [
                        {
                            "name": "Morning",
                            "schedule": "0 8 * * *",
                            "prompt": MORNING,
                            "model": ROUTINE_MODEL,
                            "deliver": "local",
                        },
                        {"name": "Follow-up", "schedule": "0 9 * * *", "prompt": FOLLOW, "context_from": ["self"]},
                        {"name": "Held", "schedule": "0 10 * * *", "prompt": HELD, "paused": True},
                    ],
                }
            ]
        },
    }


DELEGATION_MARKS = ("hermes -p", "run this in the terminal", "[bot-mode:routine:v2]", "Routine: ")


@pytest.fixture(scope="module")
def runner(
    tmp_path_factory: pytest.TempPathFactory, hermes_binary: Path, model: ModelServer, guard: OutsideGuard
) -> Iterator[BotRunner]:
    base = tmp_path_factory.mktemp("runtime-routines")
    (base / "fleet.yaml").write_text(yaml.safe_dump(fleet(model.url), sort_keys=False))
    home = base / "hermes"
    home.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUNTIME_OR_KEY", OR_KEY)
        done = apply(base / "fleet.yaml", home, "--hermes-version", "0.19.0")
    assert done.code == 0, done.text
    model.reply = REPLY
    yield BotRunner(HermesCLI(hermes_binary, home, base / "scratch"), model, guard)


def store(runner: BotRunner) -> Path:
    return runner.profile("writer") / "cron" / "jobs.json"


def job(runner: BotRunner, title: str) -> dict[str, Any]:
    jobs = json.loads(store(runner).read_text())["jobs"]
    (found,) = [j for j in jobs if j["name"] == f"[bot:writer] {title}"]
    return found


def outputs(runner: BotRunner, title: str) -> list[Path]:
    """What Hermes saved of the job's runs: cron/jobs.py:save_job_output, one file per run."""
    folder = runner.profile("writer") / "cron" / "output" / job(runner, title)["id"]
    return sorted(folder.glob("*.md")) if folder.is_dir() else []


def cron_run(runner: BotRunner, title: str) -> Run:
    run = runner.hermes("writer", "cron", "run", job(runner, title)["id"])
    assert run.proc.returncode == 0, run.output[-3000:]
    return run


def make_due(runner: BotRunner, *titles: str) -> None:
    """The clock reaching the jobs' slot: their next run 30 s ago (inside Hermes' catch-up grace,
    cron/jobs.py:_compute_grace_seconds, so get_due_jobs fires rather than fast-forwards)."""
    data = json.loads(store(runner).read_text())
    due = (datetime.now(UTC) - timedelta(seconds=30)).isoformat()
    for entry in data["jobs"]:
        if entry["name"] in {f"[bot:writer] {t}" for t in titles}:
            entry["next_run_at"] = due
    store(runner).write_text(json.dumps(data, indent=2))


@pytest.fixture(scope="module")
def morning(runner: BotRunner) -> Run:
    return cron_run(runner, "Morning")


def test_the_routine_runs_as_its_bot_with_the_routines_model(morning: Run) -> None:
    (request,) = morning.requests
    assert request.model == ROUTINE_MODEL
    assert request.system_prompt.startswith(SOUL)
    assert "Ran now: succeeded" in morning.proc.stdout


def test_the_instruction_itself_reaches_the_model(morning: Run) -> None:
    (request,) = morning.requests
    assert MORNING in request.user_text
    assert not [mark for mark in DELEGATION_MARKS if mark in request.user_text], request.user_text


def test_the_routine_is_offered_its_bots_toolsets(runner: BotRunner, morning: Run) -> None:
    """Cron runs on the `cron` platform (cron/scheduler.py:_resolve_cron_enabled_toolsets); the
    bot's [web, file] reach it, and Hermes' own registry says which tools those are."""
    code = (
        "import json\nfrom hermes_cli.env_loader import load_hermes_dotenv\nload_hermes_dotenv()\n"
        "from model_tools import get_tool_definitions\n"
        "print(json.dumps(sorted(t['function']['name'] for t in get_tool_definitions("
        "enabled_toolsets=['web', 'file'], quiet_mode=True))))"
    )
    expected = runner.probe("writer", code)
    assert isinstance(expected, list) and "read_file" in expected
    assert morning.requests[0].tool_names == set(expected)


def test_local_delivery_is_the_output_file_hermes_writes(runner: BotRunner, morning: Run) -> None:
    (saved,) = outputs(runner, "Morning")
    assert REPLY in saved.read_text()
    record = job(runner, "Morning")
    assert record["last_status"] == "ok" and record["last_delivery_error"] is None


def test_context_from_self_feeds_the_previous_output(runner: BotRunner) -> None:
    cron_run(runner, "Follow-up")
    second = cron_run(runner, "Follow-up")
    (request,) = second.requests
    follow_id = job(runner, "Follow-up")["id"]
    assert f"## Output from job '{follow_id}'" in request.user_text
    assert REPLY in request.user_text


def test_a_paused_routine_is_refused_by_cron_run(runner: BotRunner) -> None:
    run = cron_run(runner, "Held")
    assert run.requests == []
    assert "paused" in run.proc.stdout.lower()
    assert outputs(runner, "Held") == []


def test_the_tick_fires_due_routines_and_never_a_paused_one(runner: BotRunner, morning: Run) -> None:
    before = len(outputs(runner, "Morning"))
    make_due(runner, "Morning", "Held")
    tick = runner.hermes("writer", "cron", "tick")
    assert tick.proc.returncode == 0, tick.output[-3000:]
    assert len(tick.requests) == 1 and tick.requests[0].model == ROUTINE_MODEL
    assert not [r for r in tick.requests if HELD in r.user_text]
    assert len(outputs(runner, "Morning")) == before + 1
    assert outputs(runner, "Held") == []
    assert job(runner, "Held")["enabled"] is False


def test_nothing_left_the_machine(morning: Run, runner: BotRunner) -> None:
    assert morning.outside == []
