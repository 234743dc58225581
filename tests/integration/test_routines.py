"""Routines converge onto each bot's own Hermes cron store (`<profile>/cron/jobs.json`).

Real files in temporary homes, the CLI in-process; jobs.json is read back (and hand-edited, the
way a user or Hermes' scheduler would) as plain JSON. See docs/routines.md for the rules tested.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import (
    apply,
    assert_converged,
    changes,
    fields,
    hermes_fleet,
    mode,
    plan,
    profile,
    write_fleet,
)

V2_TEMPLATE = (
    "[bot-mode:routine:v2] You are running the scheduled routine \"{title}\" for agent '{bot}'. Execute it AS "
    "that agent so the run lands in its own history: run this in the terminal and relay the output:\n\n"
    "hermes -p {qbot} chat -c {qtitle} -q {qinstruction}\n\nIf the command fails, report the error instead."
)


def q(value: str) -> str:
    """Desktop's shell quoting: single quotes, each inner ' written as '"'"'."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def v2(bot: str, title: str, instruction: str) -> str:
    return V2_TEMPLATE.format(
        title=title, bot=bot, qbot=q(bot), qtitle=q("Routine: " + title), qinstruction=q("[Scheduled routine] " + instruction)
    )


def store(home: Path, bot: str) -> Path:
    return profile(home, bot) / "cron" / "jobs.json"


def jobs(home: Path, bot: str) -> list[dict[str, Any]]:
    return json.loads(store(home, bot).read_text(encoding="utf-8"))["jobs"]


def job(home: Path, bot: str, title: str) -> dict[str, Any]:
    found = [j for j in jobs(home, bot) if j.get("name") == f"[bot:{bot}] {title}"]
    assert len(found) == 1, [j.get("name") for j in jobs(home, bot)]
    return found[0]


def edit_jobs(home: Path, bot: str, edit: Any) -> None:
    """Rewrite the store the way Hermes does (whole file); `edit` changes the job list in place."""
    path = store(home, bot)
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data["jobs"])
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def fleet(manifests: Path, routines: dict[str, list[dict[str, Any]]], **extra: Any) -> Path:
    """A fleet whose bots are the keys of `routines` (each with those routines)."""
    bots = []
    for name, items in routines.items():
        bot: dict[str, Any] = {"name": name, "routines": items}
        if name != "default":
            bot["title"] = name.capitalize()
        bot.update(extra.get(name, {}))
        bots.append(bot)
    return write_fleet(manifests, bots)


def ok(run: Any) -> Any:
    assert run.code == 0, run.text
    return run


def iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- fields ---------------------------------------------------------------------------------------


def test_every_field_lands_on_the_job_key_hermes_reads(home: Path, manifests: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {
                    "name": "Digest",
                    "schedule": "0 9 * * 1-5",
                    "prompt": "Summarize today's news",
                    "skills": ["arxiv", "notes"],
                    "model": "anthropic/claude-opus-4",
                    "provider": "custom",
                    "base_url": "https://llm.example/v1/",
                    "deliver": "bot-chat",
                    "toolsets": ["web", "terminal"],
                    "workdir": str(workdir),
                    "repeat": 5,
                    "context_from": ["self"],
                },
                {"name": "Sweep", "schedule": "every 30m", "script": "sweep.sh", "no_agent": True},
                {"name": "Hold", "schedule": "every 1d", "prompt": "wait", "paused": True, "paused_reason": "on leave"},
            ]
        },
    )
    ok(apply(manifest, home))

    digest = job(home, "alpha", "Digest")
    assert digest["prompt"] == "Summarize today's news"
    assert digest["schedule"] == {"kind": "cron", "expr": "0 9 * * 1-5", "display": "0 9 * * 1-5"}
    assert digest["schedule_display"] == "0 9 * * 1-5"
    assert digest["skills"] == ["arxiv", "notes"] and digest["skill"] == "arxiv"
    assert (digest["model"], digest["provider"]) == ("anthropic/claude-opus-4", "custom")
    assert digest["base_url"] == "https://llm.example/v1"  # Hermes strips the trailing slash too
    assert digest["deliver"] == "bot-chat"
    assert digest["enabled_toolsets"] == ["web", "terminal"]
    assert digest["workdir"] == str(workdir)
    assert digest["repeat"] == {"times": 5, "completed": 0}
    assert digest["context_from"] == [digest["id"]]  # 0.19.0 takes job ids only: `self` is the job's own
    assert digest["script"] is None and digest["no_agent"] is False
    assert (digest["enabled"], digest["state"], digest["paused_at"]) == (True, "scheduled", None)
    assert digest["origin"] is None and digest["last_run_at"] is None
    assert len(digest["id"]) == 12 and int(digest["id"], 16) >= 0

    sweep = job(home, "alpha", "Sweep")
    assert (sweep["script"], sweep["no_agent"]) == ("sweep.sh", True)
    assert sweep["schedule"] == {"kind": "interval", "minutes": 30, "display": "every 30m"}
    assert sweep["prompt"] == "" and sweep["deliver"] == "local" and sweep["enabled_toolsets"] is None
    assert sweep["repeat"] == {"times": None, "completed": 0}

    hold = job(home, "alpha", "Hold")
    assert (hold["enabled"], hold["state"], hold["paused_reason"]) == (False, "paused", "on leave")
    assert hold["paused_at"]
    assert_converged(manifest, home)

    # Each field changed in the manifests is one update of that key, on the same job.
    ids = {j["name"]: j["id"] for j in jobs(home, "alpha")}
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {
                    "name": "Digest",
                    "schedule": "every 2h",
                    "prompt": "Summarize the week",
                    "skills": ["notes"],
                    "model": "openai/gpt-5",
                    "provider": "openai-api",
                    "deliver": "local",
                    "toolsets": ["web"],
                    "repeat": 9,
                },
                {"name": "Sweep", "schedule": "every 30m", "script": "sweep2.sh", "no_agent": True},
                {"name": "Hold", "schedule": "every 1d", "prompt": "wait", "paused": True, "paused_reason": "sick"},
            ]
        },
    )
    pending = changes(manifest, home)
    assert set(fields(pending["routine/alpha/Digest"])) == {
        "job:prompt",
        "job:schedule",
        "job:skills",
        "job:model",
        "job:provider",
        "job:base_url",
        "job:deliver",
        "job:enabled_toolsets",
        "job:workdir",
        "job:repeat",
        "job:context_from",
    }
    assert set(fields(pending["routine/alpha/Sweep"])) == {"job:script"}
    assert set(fields(pending["routine/alpha/Hold"])) == {"job:paused_reason"}
    ok(apply(manifest, home))
    assert {j["name"]: j["id"] for j in jobs(home, "alpha")} == ids
    digest = job(home, "alpha", "Digest")
    assert digest["schedule"] == {"kind": "interval", "minutes": 120, "display": "every 120m"}
    assert digest["prompt"] == "Summarize the week"
    assert (digest["skills"], digest["skill"]) == (["notes"], "notes")
    assert (digest["base_url"], digest["workdir"], digest["context_from"]) == (None, None, None)
    assert digest["enabled_toolsets"] == ["web"] and digest["deliver"] == "local"
    assert digest["repeat"] == {"times": 9, "completed": 0}
    assert job(home, "alpha", "Sweep")["script"] == "sweep2.sh"
    assert job(home, "alpha", "Hold")["paused_reason"] == "sick"
    assert_converged(manifest, home)


def test_the_four_schedule_forms(home: Path, manifests: Path) -> None:
    before = datetime.now(UTC)
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {"name": "Cron", "schedule": "15 7 * * 1-5", "prompt": "a"},
                {"name": "Every", "schedule": "every 2h", "prompt": "b"},
                {"name": "At", "schedule": "2030-01-02T03:04:00Z", "prompt": "c"},
                {"name": "In", "schedule": "45m", "prompt": "d"},
            ]
        },
    )
    ok(apply(manifest, home))
    cron = job(home, "alpha", "Cron")
    assert cron["schedule"] == {"kind": "cron", "expr": "15 7 * * 1-5", "display": "15 7 * * 1-5"}
    nxt = iso(cron["next_run_at"])
    assert (nxt.minute, nxt.hour) == (15, 7) and nxt.weekday() < 5 and nxt > before
    every = job(home, "alpha", "Every")
    assert every["schedule"] == {"kind": "interval", "minutes": 120, "display": "every 120m"}
    assert timedelta(minutes=119) < iso(every["next_run_at"]) - before < timedelta(minutes=121)
    assert every["repeat"]["times"] is None
    at = job(home, "alpha", "At")
    assert at["schedule"]["kind"] == "once" and at["schedule"]["display"] == "once at 2030-01-02 03:04"
    assert iso(at["schedule"]["run_at"]) == iso(at["next_run_at"]) == datetime(2030, 1, 2, 3, 4, tzinfo=UTC)
    assert at["repeat"] == {"times": 1, "completed": 0}  # one-shots run once
    inn = job(home, "alpha", "In")
    assert inn["schedule"]["kind"] == "once" and inn["schedule"]["display"] == "once in 45m"
    assert timedelta(minutes=44) < iso(inn["next_run_at"]) - before < timedelta(minutes=46)
    assert inn["repeat"] == {"times": 1, "completed": 0}
    assert_converged(manifest, home)  # a relative one-shot is not re-planned as time passes


def test_placement_name_prompt_forms_and_file_modes(home: Path, manifests: Path) -> None:
    instruction = "Check 'inbox'\nthen reply"
    manifest = fleet(
        manifests,
        {
            "default": [{"name": "  Morning  ", "schedule": "0 9 * * *", "prompt": instruction}],
            "alpha": [{"name": "Morning", "schedule": "0 9 * * *", "prompt": instruction}],
        },
    )
    ok(apply(manifest, home, "--adopt"))

    root_jobs = jobs(home, "default")
    assert [j["name"] for j in root_jobs] == ["[bot:default] Morning"]  # title trimmed, like Desktop
    assert root_jobs[0]["prompt"] == instruction
    alpha_jobs = jobs(home, "alpha")
    assert [j["name"] for j in alpha_jobs] == ["[bot:alpha] Morning"]
    assert alpha_jobs[0]["prompt"] == instruction  # every bot gets the bare instruction: no delegation
    assert not (home / "profiles" / "alpha" / "profiles").exists()
    for bot in ("default", "alpha"):
        path = store(home, bot)
        assert mode(path) == 0o600 and mode(path.parent) == 0o700
        data = json.loads(path.read_text(encoding="utf-8"))
        assert set(data) == {"jobs", "updated_at"} and iso(data["updated_at"]).tzinfo is not None
        assert (path.parent / ".jobs.lock").exists()
        assert not list(path.parent.glob("*.tmp"))
    assert_converged(manifest, home)


def test_next_run_at_honours_the_bots_timezone(home: Path, manifests: Path) -> None:
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {"name": "Nine", "schedule": "0 9 * * *", "prompt": "x"},
                {"name": "Local", "schedule": "2030-01-02T03:04", "prompt": "y"},
            ],
            "beta": [{"name": "Nine", "schedule": "0 9 * * *", "prompt": "x"}],
        },
        alpha={"config": {"timezone": "Asia/Kolkata"}},
        beta={"config": {"timezone": "UTC"}},
    )
    text = ok(plan(manifest, home)).out
    assert "next runs (Asia/Kolkata): " in text and "next runs (UTC): " in text
    ok(apply(manifest, home))
    nine = job(home, "alpha", "Nine")["next_run_at"]
    assert nine.endswith("+05:30") and "T09:00:00" in nine
    local = job(home, "alpha", "Local")
    assert local["schedule"]["run_at"] == "2030-01-02T03:04:00+05:30"  # a naive time is the bot's wall clock
    assert job(home, "beta", "Nine")["next_run_at"].endswith("+00:00")


def test_a_workdir_hermes_would_refuse_fails_that_bot_and_writes_nothing(home: Path, manifests: Path) -> None:
    manifest = fleet(
        manifests,
        {
            "alpha": [{"name": "A", "schedule": "every 1h", "prompt": "a"}],
            "beta": [{"name": "B", "schedule": "every 1h", "prompt": "b"}],
        },
    )
    ok(apply(manifest, home))
    before = store(home, "alpha").read_bytes()
    beta_before = store(home, "beta").read_bytes()
    # A relative workdir is wrong on every machine: validation refuses it, nothing is written.
    relative = fleet(
        manifests,
        {
            "alpha": [{"name": "A", "schedule": "every 1h", "prompt": "a", "workdir": "relative/path"}],
            "beta": [{"name": "B", "schedule": "every 1h", "prompt": "b2"}],
        },
    )
    run = apply(relative, home)
    assert run.code == 2, run.text
    assert "is not an absolute path" in run.err and "nothing was changed" in run.err
    assert store(home, "alpha").read_bytes() == before and store(home, "beta").read_bytes() == beta_before
    # A folder missing on this machine is known only here: that routine fails, the others converge.
    missing = fleet(
        manifests,
        {
            "alpha": [{"name": "A", "schedule": "every 1h", "prompt": "a", "workdir": "/nonexistent/hermes-fleet-test"}],
            "beta": [{"name": "B", "schedule": "every 1h", "prompt": "b2"}],
        },
    )
    run = apply(missing, home)
    assert run.code == 1, run.text
    assert "is not an existing folder" in run.out
    assert store(home, "alpha").read_bytes() == before
    assert job(home, "beta", "B")["prompt"] == "b2"


# --- identity -------------------------------------------------------------------------------------


def test_rename_keeps_the_job_id(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, {"alpha": [{"name": "Old title", "schedule": "every 1h", "prompt": "x"}]})
    ok(apply(manifest, home))
    before = job(home, "alpha", "Old title")
    edit_jobs(home, "alpha", lambda js: js[0].update(last_run_at="2026-01-01T00:00:00+00:00"))

    manifest = fleet(
        manifests, {"alpha": [{"name": "New title", "renamed_from": "Old title", "schedule": "every 1h", "prompt": "x"}]}
    )
    pending = changes(manifest, home)
    assert set(pending) == {"routine/alpha/New title"}
    change = pending["routine/alpha/New title"]
    assert change["action"] == "update" and "renamed" in change["reason"]
    assert set(fields(change)) == {"job:name"}  # the prompt is the instruction: the title is not in it
    run = ok(apply(manifest, home))
    assert "created" not in run.out and "deleted" not in run.out
    after = jobs(home, "alpha")
    assert len(after) == 1
    assert after[0]["id"] == before["id"] and after[0]["name"] == "[bot:alpha] New title"
    assert after[0]["prompt"] == "x"
    assert after[0]["created_at"] == before["created_at"]
    assert after[0]["last_run_at"] == "2026-01-01T00:00:00+00:00"
    assert_converged(manifest, home)
    # Dropping renamed_from later changes nothing, and the old name is not an orphan.
    manifest = fleet(manifests, {"alpha": [{"name": "New title", "schedule": "every 1h", "prompt": "x"}]})
    assert_converged(manifest, home)
    assert "orphan" not in plan(manifest, home).out


def test_pause_and_resume(home: Path, manifests: Path) -> None:
    running = {"name": "Tick", "schedule": "every 1h", "prompt": "x"}
    manifest = fleet(manifests, {"alpha": [running]})
    ok(apply(manifest, home))
    ident = job(home, "alpha", "Tick")["id"]

    manifest = fleet(manifests, {"alpha": [{**running, "paused": True, "paused_reason": "holiday"}]})
    assert set(fields(changes(manifest, home)["routine/alpha/Tick"])) == {"job:paused", "job:paused_reason"}
    ok(apply(manifest, home))
    paused = job(home, "alpha", "Tick")
    assert (paused["enabled"], paused["state"], paused["paused_reason"]) == (False, "paused", "holiday")
    assert iso(paused["paused_at"]) <= datetime.now(UTC)
    assert_converged(manifest, home)
    # While paused, the run time goes stale (Hermes does not advance paused jobs).
    edit_jobs(home, "alpha", lambda js: js[0].update(next_run_at="2020-01-01T00:00:00+00:00"))
    assert_converged(manifest, home)

    before = datetime.now(UTC)
    manifest = fleet(manifests, {"alpha": [running]})
    ok(apply(manifest, home))
    resumed = job(home, "alpha", "Tick")
    assert resumed["id"] == ident
    assert (resumed["enabled"], resumed["state"], resumed["paused_at"], resumed["paused_reason"]) == (
        True,
        "scheduled",
        None,
        None,
    )
    assert iso(resumed["next_run_at"]) > before + timedelta(minutes=59)  # recomputed from now
    assert_converged(manifest, home)


@pytest.mark.parametrize("schedule", ["2030-01-02T03:04:00+00:00", "20m"])
def test_a_one_shot_that_ran_is_not_recreated(home: Path, manifests: Path, schedule: str) -> None:
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {"name": "Once", "schedule": schedule, "prompt": "x"},
                {"name": "Daily", "schedule": "0 8 * * *", "prompt": "y"},
            ]
        },
    )
    ok(apply(manifest, home))
    assert job(home, "alpha", "Once")["repeat"]["times"] == 1
    # It ran; Hermes removed it from jobs.json.
    edit_jobs(home, "alpha", lambda js: js.remove(next(j for j in js if j["name"].endswith("Once"))))
    assert_converged(manifest, home)
    ok(apply(manifest, home))
    assert [j["name"] for j in jobs(home, "alpha")] == ["[bot:alpha] Daily"]

    # A recurring job that vanished is drift, and is recreated.
    edit_jobs(home, "alpha", lambda js: js.clear())
    pending = changes(manifest, home)
    assert set(pending) == {"routine/alpha/Daily"}
    assert pending["routine/alpha/Daily"]["action"] == "create" and pending["routine/alpha/Daily"]["drift"]
    ok(apply(manifest, home))
    assert [j["name"] for j in jobs(home, "alpha")] == ["[bot:alpha] Daily"]
    assert_converged(manifest, home)


def test_a_changed_one_shot_is_created_again(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, {"alpha": [{"name": "Once", "schedule": "2030-01-02T03:04:00Z", "prompt": "x"}]})
    ok(apply(manifest, home))
    edit_jobs(home, "alpha", lambda js: js.clear())
    manifest = fleet(manifests, {"alpha": [{"name": "Once", "schedule": "2031-01-02T03:04:00Z", "prompt": "x"}]})
    assert changes(manifest, home)["routine/alpha/Once"]["action"] == "create"
    ok(apply(manifest, home))
    assert job(home, "alpha", "Once")["schedule"]["run_at"] == "2031-01-02T03:04:00+00:00"


# --- ownership ------------------------------------------------------------------------------------


def hand_made(ident: str, name: str, prompt: str = "mine") -> dict[str, Any]:
    return {
        "id": ident,
        "name": name,
        "prompt": prompt,
        "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"},
        "enabled": True,
        "custom_key": {"keep": 1},
    }


def test_prune_only_owned_routines_and_only_with_prune(home: Path, manifests: Path) -> None:
    keep = {"name": "Keep", "schedule": "every 1h", "prompt": "k"}
    manifest = fleet(manifests, {"alpha": [keep, {"name": "Drop", "schedule": "every 1h", "prompt": "d"}]})
    ok(apply(manifest, home))
    edit_jobs(home, "alpha", lambda js: js.append(hand_made("aaaaaaaaaaaa", "my own job")))

    manifest = fleet(manifests, {"alpha": [keep]})
    pending = changes(manifest, home)
    assert set(pending) == {"routine/alpha/Drop"} and pending["routine/alpha/Drop"]["action"] == "orphan"
    ok(apply(manifest, home))
    assert {j["name"] for j in jobs(home, "alpha")} == {"[bot:alpha] Keep", "[bot:alpha] Drop", "my own job"}

    pending = changes(manifest, home, "--prune")
    assert set(pending) == {"routine/alpha/Drop"} and pending["routine/alpha/Drop"]["action"] == "delete"
    ok(apply(manifest, home, "--prune"))
    left = jobs(home, "alpha")
    assert {j["name"] for j in left} == {"[bot:alpha] Keep", "my own job"}
    assert next(j for j in left if j["id"] == "aaaaaaaaaaaa") == hand_made("aaaaaaaaaaaa", "my own job")
    assert_converged(manifest, home)
    # Even with every routine gone and --prune, the hand-made job stays.
    manifest = fleet(manifests, {"alpha": []})
    ok(apply(manifest, home, "--prune"))
    assert [j["id"] for j in jobs(home, "alpha")] == ["aaaaaaaaaaaa"]
    assert_converged(manifest, home)


def test_a_same_named_job_we_do_not_own_is_a_conflict_unless_adopted(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, {"alpha": []})
    ok(apply(manifest, home))
    foreign = {**hand_made("bbbbbbbbbbbb", "[bot:alpha] Digest", "old"), "last_run_at": "2026-01-01T00:00:00+00:00"}
    store(home, "alpha").parent.mkdir(parents=True, exist_ok=True)
    store(home, "alpha").write_text(json.dumps({"jobs": [foreign]}), encoding="utf-8")
    manifest = fleet(manifests, {"alpha": [{"name": "Digest", "schedule": "every 1h", "prompt": "new"}]})

    run = apply(manifest, home)
    assert run.code == 3, run.text
    assert "routine/alpha/Digest" in run.out and "--adopt" in run.out
    assert jobs(home, "alpha") == [foreign]

    assert changes(manifest, home, "--adopt")["routine/alpha/Digest"]["action"] == "adopt"
    ok(apply(manifest, home, "--adopt"))
    (adopted,) = jobs(home, "alpha")
    assert adopted["id"] == "bbbbbbbbbbbb"
    assert adopted["prompt"] == "new"
    assert adopted["last_run_at"] == "2026-01-01T00:00:00+00:00" and adopted["custom_key"] == {"keep": 1}
    assert_converged(manifest, home)


def test_an_adopted_desktop_v2_job_of_the_same_instruction_does_not_churn(home: Path, manifests: Path) -> None:
    """A Desktop-made job (v2 delegation of the same instruction) is adopted as it is, and stays so."""
    manifest = fleet(manifests, {"alpha": []})
    ok(apply(manifest, home))
    desktop = hand_made("cccccccccccc", "[bot:alpha] Digest", v2("alpha", "Digest", "Say 'hi'"))
    store(home, "alpha").write_text(json.dumps({"jobs": [desktop]}), encoding="utf-8")
    manifest = fleet(manifests, {"alpha": [{"name": "Digest", "schedule": "every 1h", "prompt": "Say 'hi'"}]})
    adopt = changes(manifest, home, "--adopt")["routine/alpha/Digest"]
    assert adopt["action"] == "adopt" and "job:prompt" not in fields(adopt)
    ok(apply(manifest, home, "--adopt"))
    assert job(home, "alpha", "Digest")["prompt"] == desktop["prompt"]
    assert_converged(manifest, home)


def test_a_v2_prompt_an_earlier_fleet_wrote_is_rewritten_bare(home: Path, manifests: Path) -> None:
    """The fleet's own old v2 output (0.19.0 cannot run it) is replaced by the instruction, not as drift."""
    manifest = fleet(manifests, {"alpha": [{"name": "Digest", "schedule": "every 1h", "prompt": "Say 'hi'"}]})
    ok(apply(manifest, home))
    old = v2("alpha", "Digest", "Say 'hi'")
    edit_jobs(home, "alpha", lambda js: js[0].update(prompt=old))
    (inventory,) = (home / ".hermes-fleet" / "inventory").glob("*.json")
    data = json.loads(inventory.read_text(encoding="utf-8"))
    data["objects"]["routine/alpha/Digest"]["applied"]["prompt"] = old  # as an earlier fleet recorded it
    inventory.write_text(json.dumps(data), encoding="utf-8")
    change = changes(manifest, home)["routine/alpha/Digest"]
    assert change["action"] == "update" and set(fields(change)) == {"job:prompt"}
    assert not change.get("drift")
    ok(apply(manifest, home))
    assert job(home, "alpha", "Digest")["prompt"] == "Say 'hi'"
    assert_converged(manifest, home)


# --- drift ----------------------------------------------------------------------------------------


def test_hand_edits_are_drift_and_runtime_fields_are_hermes(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, {"alpha": [{"name": "Daily", "schedule": "0 8 * * *", "prompt": "report"}]})
    ok(apply(manifest, home))
    ident = job(home, "alpha", "Daily")["id"]

    # What Hermes' scheduler writes is not drift.
    runtime = {
        "next_run_at": "2030-05-05T08:00:00+00:00",
        "last_run_at": "2030-05-04T08:00:01+00:00",
        "last_status": "ok",
        "fire_claim": {"by": "gw"},
        "x_future_key": [1, 2],
        "provider_snapshot": "openrouter",
        "model_snapshot": "m",
    }

    def run_it(js: list[dict[str, Any]]) -> None:
        js[0].update(runtime)
        js[0]["repeat"]["completed"] = 7

    edit_jobs(home, "alpha", run_it)
    assert_converged(manifest, home)

    # A hand edit of a managed field is drift; apply puts it back and keeps everything else.
    def tamper(js: list[dict[str, Any]]) -> None:
        js[0]["prompt"] = "something else"
        js[0]["deliver"] = "telegram"

    edit_jobs(home, "alpha", tamper)
    run = plan(manifest, home)
    assert "routine/alpha/Daily  update [drift]" in run.out, run.out
    assert "(drift: changed outside hermes-fleet)" in run.out
    ok(apply(manifest, home))
    fixed = job(home, "alpha", "Daily")
    assert fixed["prompt"] == "report" and fixed["deliver"] == "local"
    assert {k: fixed[k] for k in runtime} == runtime and fixed["repeat"]["completed"] == 7
    assert fixed["id"] == ident
    assert_converged(manifest, home)

    # Schedule and pause edits: drift too; the schedule's next run is recomputed, the rest is kept.
    def tamper2(js: list[dict[str, Any]]) -> None:
        js[0]["schedule"] = {"kind": "cron", "expr": "0 23 * * *", "display": "0 23 * * *"}
        js[0].update(enabled=False, state="paused", paused_at="2030-01-01T00:00:00+00:00")

    edit_jobs(home, "alpha", tamper2)
    pending = changes(manifest, home)["routine/alpha/Daily"]
    assert pending["drift"] and {f for f, c in fields(pending).items() if c["drift"]} == {"job:schedule", "job:paused"}
    run = plan(manifest, home)
    assert "[drift]" in run.out
    ok(apply(manifest, home))
    fixed = job(home, "alpha", "Daily")
    assert fixed["schedule"] == {"kind": "cron", "expr": "0 8 * * *", "display": "0 8 * * *"}
    assert (fixed["enabled"], fixed["state"], fixed["paused_at"]) == (True, "scheduled", None)
    nxt = iso(fixed["next_run_at"])
    assert (nxt.hour, nxt.minute) == (8, 0) and nxt > datetime.now(UTC)
    assert fixed["last_run_at"] == runtime["last_run_at"] and fixed["repeat"]["completed"] == 7
    assert fixed["x_future_key"] == [1, 2] and fixed["fire_claim"] == {"by": "gw"}
    assert_converged(manifest, home)


def test_a_corrupt_store_fails_that_bot_only_and_is_never_rewritten(home: Path, manifests: Path) -> None:
    manifest = fleet(
        manifests,
        {
            "alpha": [{"name": "A", "schedule": "every 1h", "prompt": "a"}],
            "beta": [{"name": "B", "schedule": "every 1h", "prompt": "b"}],
        },
    )
    ok(apply(manifest, home))
    broken = b'{"jobs": [{"id": "x", "name": "half'
    store(home, "alpha").write_bytes(broken)
    manifest = fleet(
        manifests,
        {
            "alpha": [{"name": "A", "schedule": "every 2h", "prompt": "a"}],
            "beta": [{"name": "B", "schedule": "every 2h", "prompt": "b"}],
        },
    )

    text = plan(manifest, home)
    assert text.code == 1, text.text
    assert "routine/alpha/A" in text.out and "not valid JSON" in text.out
    run = apply(manifest, home)
    assert run.code == 1, run.text
    assert "not valid JSON" in run.text
    assert store(home, "alpha").read_bytes() == broken
    assert job(home, "beta", "B")["schedule"]["minutes"] == 120
    data = changes(manifest, home)
    assert data["routine/alpha/A"]["action"] == "error" and "routine/beta/B" not in data
    # Fixed by hand: the next apply converges.
    store(home, "alpha").write_text('{"jobs": []}', encoding="utf-8")
    ok(apply(manifest, home))
    assert_converged(manifest, home)


def test_a_bom_and_a_bare_list_are_read_like_hermes_does(home: Path, manifests: Path) -> None:
    manifest = fleet(manifests, {"alpha": [{"name": "A", "schedule": "every 1h", "prompt": "a"}]})
    ok(apply(manifest, home))
    listed = jobs(home, "alpha")
    store(home, "alpha").write_bytes(b"\xef\xbb\xbf" + json.dumps(listed).encode())
    assert_converged(manifest, home)
    manifest = fleet(manifests, {"alpha": [{"name": "A", "schedule": "every 3h", "prompt": "a"}]})
    ok(apply(manifest, home))
    assert json.loads(store(home, "alpha").read_text())["jobs"][0]["id"] == listed[0]["id"]


# --- validation and plan text -----------------------------------------------------------------------


def test_plan_shows_next_runs_and_validate_warns_on_frequent_schedules(home: Path, manifests: Path) -> None:
    manifest = fleet(
        manifests,
        {
            "alpha": [
                {"name": "Daily", "schedule": "30 6 * * *", "prompt": "x"},
                {"name": "Often", "schedule": "*/2 * * * *", "prompt": "y"},
            ]
        },
    )
    text = ok(plan(manifest, home)).out
    line = next(line for line in text.splitlines() if "routine/alpha/Daily" in line)
    assert "next runs" in line and line.count(" 06:30") == 3, line

    run = hermes_fleet("validate", "-f", manifest)
    assert run.code == 0, run.text
    warning = next(line for line in run.text.splitlines() if "*/2 * * * *" in line)
    assert "warning" in warning and "every 2 minute(s)" in warning and "at least 5 minutes" in warning
    assert warning.count(":") >= 6  # three HH:MM run times
    assert "Daily" not in run.text and "30 6" not in run.text  # a daily schedule is fine
    assert hermes_fleet("validate", "--strict", "-f", manifest).code == 2


def test_deliver_bot_chat_is_a_warning_on_a_hermes_without_bot_mode(home: Path, manifests: Path) -> None:
    """0.19.0's cron delivery has no `bot-chat` target: the plan says so (docs/hermes/cron.md#delivery)."""
    manifest = fleet(manifests, {"alpha": [{"name": "Digest", "schedule": "every 1h", "prompt": "x", "deliver": "bot-chat"}]})
    old = plan(manifest, home, "--hermes-version", "0.19.0")
    assert "deliver: bot-chat has no reader on Hermes 0.19.0" in old.out and "alpha/Digest" in old.out
    assert "deliver: bot-chat" not in plan(manifest, home, "--hermes-version", "0.20.0").out
    local = fleet(manifests, {"alpha": [{"name": "Digest", "schedule": "every 1h", "prompt": "x"}]})
    assert "deliver: bot-chat" not in plan(local, home, "--hermes-version", "0.19.0").out
