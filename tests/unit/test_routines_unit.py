"""controller/routines.py, pure: names, Desktop's prompt forms, managed fields, job records."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from controller.core import health
from controller.core import jobs as routines
from controller.engine import observing
from controller.engine.applying import routines as applying_routines
from controller.errors import RefusedValue
from controller.manifests import loading, validating
from controller.manifests.models import Routine

JOB_ID = "0123456789ab"
NOW = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # a Monday

# Desktop's `routinePrompt` for a bot that is not the active profile (docs/hermes/bot-mode.md#routines),
# spelled out literally here so a drift in the template fails this test. hermes-fleet no longer writes
# it (0.19.0 cannot run it); it reads it back from adopted Desktop jobs.
EXPECTED_V2 = (
    "[bot-mode:routine:v2] You are running the scheduled routine \"Tea 'n' talk\" for agent 'alpha'. "
    "Execute it AS that agent so the run lands in its own history: run this in the terminal and relay the "
    "output:\n\nhermes -p 'alpha' chat -c 'Routine: Tea '\"'\"'n'\"'\"' talk' "
    "-q '[Scheduled routine] Say \"hi\"\nto '\"'\"'all'\"'\"''\n\nIf the command fails, report the error instead."
)


def _q(value: str) -> str:
    return "'" + value.replace("'", "'\"'\"'") + "'"


def desktop_v2(bot: str, title: str, instruction: str) -> str:
    """Desktop's `routinePrompt` (cron-prompt.ts @416ebc2) for a bot that is not the active profile."""
    return (
        f"[bot-mode:routine:v2] You are running the scheduled routine \"{title}\" for agent '{bot}'. "
        "Execute it AS that agent so the run lands in its own history: run this in the terminal and relay "
        f"the output:\n\nhermes -p {_q(bot)} chat -c {_q('Routine: ' + title)} "
        f"-q {_q('[Scheduled routine] ' + instruction)}\n\nIf the command fails, report the error instead."
    )


def r(**kw: object) -> Routine:
    return Routine.model_validate({"name": "Digest", "schedule": "0 9 * * 1-5", "prompt": "Do it", **kw})


def test_job_name_trims_the_title() -> None:
    assert routines.job_name("alpha", "  Morning digest ") == "[bot:alpha] Morning digest"
    # Desktop's Routines pane finds a bot's jobs with this pattern.
    assert re.match(r"^\[bot:([a-z0-9][a-z0-9_-]*)\]\s*", routines.job_name("a-b_1", "x"), re.I)


def test_the_prompt_is_the_instruction_itself() -> None:
    """Every bot's job carries the bare instruction, as `hermes cron create` stores it: no delegation."""
    assert routines.routine_prompt("  Just do it\n") == "Just do it"
    assert routines.routine_prompt("") == ""  # a script-only job has no prompt
    for bot in ("default", "alpha"):
        prompt = routines.desired_fields(bot, r(prompt="Say 'hi'"))["prompt"]
        assert prompt == "Say 'hi'"
        assert not prompt.startswith((routines.SAFE_ROUTINE_MARKER, routines.LEGACY_SENTENCE))


def test_the_desktop_v2_form_is_read_back_as_its_instruction() -> None:
    """Desktop's template, built literally, unwraps to the instruction whatever the shell quoting."""
    assert desktop_v2("alpha", "Tea 'n' talk", "Say \"hi\"\nto 'all'") == EXPECTED_V2
    assert routines.instruction_of(EXPECTED_V2) == "Say \"hi\"\nto 'all'"
    assert routines.is_delegation(EXPECTED_V2) and not routines.is_delegation("Say hi")
    title, instruction = "it's $HOME `x`", "rm -rf / ; echo 'ok' \"q\"\nline2"
    assert routines.instruction_of(desktop_v2("bot", title, instruction)) == instruction


def test_desired_fields_defaults_and_normalisation() -> None:
    fields = routines.desired_fields("alpha", r(base_url="https://x.example/v1/", toolsets=["web"]))
    assert fields["name"] == "[bot:alpha] Digest"
    assert fields["schedule"] == "cron:0 9 * * 1-5"
    assert fields["deliver"] == "local"  # what Hermes stores when nothing is said
    assert fields["base_url"] == "https://x.example/v1"
    assert fields["enabled_toolsets"] == ["web"]
    assert (fields["skills"], fields["repeat"], fields["paused"], fields["paused_reason"]) == ([], None, False, None)
    assert set(fields) == set(routines.MANAGED)
    # A reason without pause is not written.
    assert routines.desired_fields("alpha", r(paused_reason="x"))["paused_reason"] is None
    assert routines.desired_fields("alpha", r(schedule="every 2h"))["schedule"] == "interval:every 120m"
    assert routines.desired_fields("alpha", r(schedule="10m"))["repeat"] == 1
    assert routines.desired_fields("alpha", r(schedule="10m", repeat=3))["repeat"] == 3


@pytest.mark.parametrize(
    "schedule",
    ["0 9 * * 1-5", "every 45m", "every 1d", "2030-01-02T03:04:00+00:00", "2030-01-02T03:04", "15m", "2h"],
)
def test_a_new_job_reads_back_as_desired(schedule: str) -> None:
    routine = r(
        schedule=schedule,
        skills=["a", "b"],
        deliver="bot-chat",
        context_from=["self"],
        repeat=4,
        model="m",
        provider="p",
        workdir="/",
        toolsets=["web"],
        paused=True,
        paused_reason="why",
    )
    job = routines.new_job("alpha", routine, NOW, JOB_ID)
    assert routines.live_fields(job) == routines.desired_fields("alpha", routine)
    json.dumps(job)  # JSON-serialisable as Hermes writes it


def test_new_job_has_hermes_shape() -> None:
    job = routines.new_job("alpha", r(), NOW, applying_routines.new_job_id())
    hermes_keys = {  # cron.jobs.create_job in 0.19.0 (docs/hermes/cron.md#job-record)
        "id",
        "name",
        "prompt",
        "skills",
        "skill",
        "model",
        "provider",
        "provider_snapshot",
        "model_snapshot",
        "base_url",
        "script",
        "no_agent",
        "context_from",
        "schedule",
        "schedule_display",
        "repeat",
        "enabled",
        "state",
        "paused_at",
        "paused_reason",
        "created_at",
        "next_run_at",
        "last_run_at",
        "last_status",
        "last_error",
        "last_delivery_error",
        "deliver",
        "origin",
        "enabled_toolsets",
        "workdir",
    }
    assert set(job) == hermes_keys
    assert re.fullmatch(r"[0-9a-f]{12}", job["id"])
    assert job["next_run_at"] == "2026-03-02T09:00:00+00:00"
    assert job["created_at"] == NOW.isoformat()
    assert applying_routines.new_job_id() != job["id"]  # the engine's ids are fresh each time


def test_next_run_in_the_bots_timezone() -> None:
    kolkata = datetime(2026, 3, 2, 8, 0, tzinfo=ZoneInfo("Asia/Kolkata"))
    assert routines.next_run(r(), kolkata) == "2026-03-02T09:00:00+05:30"
    assert routines.next_run(r(schedule="every 90m"), NOW) == (NOW + timedelta(minutes=90)).isoformat()
    assert routines.next_run(r(schedule="30m"), NOW) == (NOW + timedelta(minutes=30)).isoformat()
    naive = routines.new_job("a", r(schedule="2030-01-02T03:04"), kolkata, JOB_ID)
    assert naive["schedule"]["run_at"] == "2030-01-02T03:04:00+05:30"
    assert observing.zone("Asia/Kolkata") == ZoneInfo("Asia/Kolkata")
    assert observing.zone("Not/AZone") is None and observing.zone(None) is None
    assert applying_routines.now_in(ZoneInfo("Asia/Kolkata")).utcoffset() == timedelta(hours=5, minutes=30)


def test_a_past_one_shot_is_refused() -> None:
    with pytest.raises(RefusedValue, match="in the past"):
        routines.next_run(r(schedule="2020-01-01T00:00:00Z"), NOW)
    assert routines.next_run(r(schedule=(NOW - timedelta(seconds=60)).isoformat()), NOW)  # within grace


def test_update_job_touches_only_changed_fields_and_keeps_runtime() -> None:
    job = routines.new_job("alpha", r(), NOW, JOB_ID)
    job.update(
        next_run_at="2026-03-09T09:00:00+00:00",
        last_run_at="2026-03-02T09:00:01+00:00",
        last_status="ok",
        fire_claim={"x": 1},
        unknown_key="kept",
    )
    job["repeat"]["completed"] = 3
    before = copy.deepcopy(job)
    routine = r(prompt="New words", repeat=10)
    routines.update_job(job, "alpha", routine, {"prompt", "repeat"}, NOW)
    assert job["prompt"] == "New words"
    assert job["repeat"] == {"times": 10, "completed": 3}
    assert {k: v for k, v in job.items() if k not in ("prompt", "repeat")} == {
        k: v for k, v in before.items() if k not in ("prompt", "repeat")
    }


def test_update_job_schedule_pause_and_resume() -> None:
    job = routines.new_job("alpha", r(), NOW, JOB_ID)
    later = NOW + timedelta(days=1)
    routines.update_job(job, "alpha", r(schedule="every 2h"), {"schedule"}, later)
    assert job["schedule"] == {"kind": "interval", "minutes": 120, "display": "every 120m"}
    assert job["schedule_display"] == "every 120m"
    assert job["next_run_at"] == (later + timedelta(hours=2)).isoformat()

    routines.update_job(job, "alpha", r(schedule="every 2h", paused=True, paused_reason="a"), {"paused", "paused_reason"}, later)
    assert (job["enabled"], job["state"], job["paused_at"], job["paused_reason"]) == (False, "paused", later.isoformat(), "a")
    # A new reason keeps the original pause time.
    routines.update_job(
        job, "alpha", r(schedule="every 2h", paused=True, paused_reason="b"), {"paused_reason"}, later + timedelta(hours=1)
    )
    assert (job["paused_at"], job["paused_reason"]) == (later.isoformat(), "b")

    resume = later + timedelta(days=2)
    routines.update_job(job, "alpha", r(schedule="every 2h"), {"paused", "paused_reason"}, resume)
    assert (job["enabled"], job["state"], job["paused_at"], job["paused_reason"]) == (True, "scheduled", None, None)
    assert job["next_run_at"] == (resume + timedelta(hours=2)).isoformat()


def test_live_fields_read_hermes_variants() -> None:
    minimal = {
        "id": "x",
        "name": "n",
        "prompt": "p",
        "schedule": {"kind": "cron", "expr": "0 9 * * *", "display": "0 9 * * *"},
        "enabled": True,
    }
    live = routines.live_fields(minimal)
    assert (live["deliver"], live["skills"], live["repeat"], live["paused"]) == ("local", [], None, False)
    assert routines.live_fields({**minimal, "skill": "legacy"})["skills"] == ["legacy"]
    assert routines.live_fields({**minimal, "state": "paused"})["paused"] is True
    assert routines.live_fields({**minimal, "enabled": False, "paused_reason": "r"})["paused_reason"] == "r"
    assert routines.live_fields({**minimal, "paused_reason": "stale"})["paused_reason"] is None
    assert routines.live_fields({**minimal, "schedule": {}})["schedule"] == "None:None"  # a dead job never matches


def test_prompt_forms_compare_by_instruction_but_a_v2_text_must_match_exactly() -> None:
    v2 = desktop_v2("alpha", "Digest", "Do it")
    assert routines.same("prompt", v2, "Do it")  # a Desktop-made job, adopted: the same routine
    assert routines.same("prompt", "Do it", v2)  # an inventory written by an earlier fleet
    assert not routines.same("prompt", desktop_v2("alpha", "Old", "Do it"), v2)  # renamed
    assert not routines.same("prompt", desktop_v2("beta", "Digest", "Do it"), v2)
    assert not routines.same("prompt", "Do it differently", v2)
    assert not routines.same("name", "a", "b") and routines.same("skills", ["a"], ["a"])


def test_only_the_fleets_own_v2_text_is_stale() -> None:
    """A v2 prompt the fleet applied itself is rewritten bare; an adopted Desktop one is left alone."""
    v2 = desktop_v2("alpha", "Digest", "Do it")
    assert routines.stale_form("prompt", v2, v2)
    assert not routines.stale_form("prompt", v2, "Do it")  # adopted: the inventory holds the bare text
    assert not routines.stale_form("prompt", "Do it", "Do it")
    assert not routines.stale_form("name", v2, v2)


@pytest.mark.parametrize("workdir", ["relative/dir", "/no/such/folder/anywhere"])
def test_a_workdir_hermes_would_refuse_is_refused(workdir: str) -> None:
    with pytest.raises(RefusedValue, match="workdir"):
        applying_routines.check_workdir(r(workdir=workdir))
    applying_routines.check_workdir(r(workdir="/"))


# --- what Hermes 0.19.0 does with a routine's own fields (docs/hermes/cron.md) ---------------------


def validate_routine(tmp_path: Path, **fields: object) -> validating.ValidationResult:
    """The diagnostics of one routine of bot `a`, validated from a real manifest file."""
    routine = {"name": "r", "schedule": "every 1h", "prompt": "x", **fields}
    manifest = {"apiVersion": "hermes-fleet/v1", "kind": "Fleet", "metadata": {"name": "acme"}}
    manifest["spec"] = {"bots": [{"name": "a", "routines": [routine]}]}
    path = tmp_path / "fleet.yaml"
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    loaded, problems = loading.load_files(loading.discover([str(path)]))
    assert problems == []
    return validating.validate(loaded, now=NOW)


@pytest.mark.parametrize(
    "prompt",
    [
        "You are running the scheduled routine \"Digest\" for agent 'a'. Do it.",
        "  " + EXPECTED_V2,  # the v2 text itself would be read back as a delegation
    ],
)
def test_an_instruction_in_bot_modes_own_words_is_refused_at_its_line(tmp_path: Path, prompt: str) -> None:
    result = validate_routine(tmp_path, prompt=prompt)
    (error,) = result.errors
    assert error.path == "spec.bots[0].routines[0].prompt" and error.line > 1 and error.file.endswith("fleet.yaml")
    assert "auto-pauses" in error.message and error.hint
    assert result.state is None  # nothing is planned or written
    assert not validate_routine(tmp_path, prompt='Say: You are running the scheduled routine "x"').errors


@pytest.mark.parametrize(
    ("provider", "refused"),
    [
        (None, "requires an explicit provider"),
        ("openrouter", "not allowed for provider 'openrouter'"),
        ("anthropic", "not allowed for provider 'anthropic'"),
        ("custom", ""),
        ("Custom", ""),  # Hermes compares lower-cased
    ],
)
def test_a_base_url_hermes_credential_guard_blocks_is_refused(tmp_path: Path, provider: str | None, refused: str) -> None:
    fields: dict[str, object] = {"base_url": "http://127.0.0.1:9/v1"}
    if provider:
        fields["provider"] = provider
    errors = validate_routine(tmp_path, **fields).errors
    if not refused:
        assert errors == []
        return
    (error,) = errors
    assert error.path == "spec.bots[0].routines[0].base_url" and refused in error.message
    assert "provider: custom" in error.hint


def test_context_from_self_is_the_jobs_own_id_and_reads_back_as_self() -> None:
    job = routines.new_job("alpha", r(context_from=["self"]), NOW, job_id="0123456789ab")
    assert job["context_from"] == ["0123456789ab"]  # what 0.19.0's context injection reads
    assert routines.live_fields(job)["context_from"] == ["self"]
    assert routines.desired_fields("alpha", r(context_from=["self"]))["context_from"] == ["self"]
    # A literal "self" (the Desktop's continuity) is skipped by 0.19.0: it differs, so apply rewrites it.
    literal = {**job, "context_from": ["self"]}
    assert routines.live_fields(literal)["context_from"] == [routines.UNRESOLVED_SELF]
    routines.update_job(literal, "alpha", r(context_from=["self"]), {"context_from"}, NOW)
    assert literal["context_from"] == ["0123456789ab"]
    # Export gives the manifest's word back either way.
    assert routines.manifest_context_from(job) == routines.manifest_context_from({**job, "context_from": ["self"]}) == ["self"]


def test_a_context_from_that_is_no_job_id_is_a_warning(tmp_path: Path) -> None:
    result = validate_routine(tmp_path, context_from=["self", "0123456789ab", "Digest"])
    assert result.errors == []
    (warning,) = result.warnings
    assert warning.path == "spec.bots[0].routines[0].context_from[2]" and "not a cron job id" in warning.message


# --- status: a bot whose routines can never fire (docs/routines.md#who-runs-the-routines) -----------


def runtime_of(gateway: health.GatewayRuntime) -> health.BotRuntime:
    routine = health.RoutineRuntime("alpha/Digest", "0123456789ab", found=True, state="scheduled")
    now = NOW.timestamp()
    return health.BotRuntime("alpha", "custom", frozenset(), frozenset(), now, now, gateway, (routine,))


def test_a_bot_served_only_by_a_0_19_multiplexer_has_routines_that_never_fire() -> None:
    """0.19.0's multiplexing root gateway answers the bot's chats but ticks only the root's store."""
    served = health.GatewayRuntime(True, 42, "running", "root", ticks_store=False)
    (finding,) = [f for f in health.evaluate([runtime_of(served)], NOW.timestamp()).findings if f.subject == "bot/alpha"]
    assert (finding.code, finding.severity) == ("gateway-down", "error")
    assert "root gateway (pid 42)" in finding.message and "hermes -p alpha gateway run" in finding.message
    ticking = health.GatewayRuntime(True, 42, "running", "root", ticks_store=True)  # main ticks served stores
    assert not [f for f in health.evaluate([runtime_of(ticking)], NOW.timestamp()).findings if f.code == "gateway-down"]
    down = health.evaluate([runtime_of(health.GatewayRuntime(False))], NOW.timestamp())
    assert [f.code for f in down.findings if f.subject == "bot/alpha"] == ["gateway-down"] and not down.healthy


def test_the_engine_asks_the_hermes_version_whether_the_multiplexer_ticks(tmp_path: Path) -> None:
    """A live multiplexing root gateway (this process, as 0.19.0 records it) serving alpha, with an owned routine."""
    import os

    from controller.core.inventory import Inventory
    from controller.engine import health as engine_health

    root = tmp_path / "home"
    (root / "profiles" / "alpha" / "cron").mkdir(parents=True)
    job = routines.new_job("alpha", r(), NOW, job_id="0123456789ab")
    (root / "profiles" / "alpha" / "cron" / "jobs.json").write_text(json.dumps({"jobs": [job]}))
    state = {"pid": os.getpid(), "gateway_state": "running", "served_profiles": ["default", "alpha"]}
    (root / "gateway_state.json").write_text(json.dumps(state))
    inventory = Inventory("acme", "salt", objects={"routine/alpha/Digest": {"job_id": "0123456789ab", "applied": {}}})
    old = engine_health.check(root, "acme", inventory=inventory, hermes_version="0.19.0", now=NOW.timestamp())
    assert ("gateway-down", "bot/alpha") in {(f.code, f.subject) for f in old.findings}
    new = engine_health.check(root, "acme", inventory=inventory, hermes_version="0.20.0", now=NOW.timestamp())
    assert ("gateway-down", "bot/alpha") not in {(f.code, f.subject) for f in new.findings}
