"""Routines as Hermes cron jobs (pure).

A routine of bot B titled T is the job named `[bot:B] T` in B's own cron store (current Desktop
passes `profile: B` to `cron.manage`, so the job lands in `<B>/cron/jobs.json`). Its prompt is the
instruction itself, as `hermes cron create` writes it: the job runs under B's HERMES_HOME, so it
already runs as B. The Desktop's `[bot-mode:routine:v2]` delegation form (a terminal call to
`hermes -p B chat -c 'Routine: T'`) cannot run on 0.19.0; a live job in that form (an adopted
Desktop routine) is read back as its instruction (docs/routines.md; docs/hermes/bot-mode.md#routines).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from controller.errors import RefusedValue
from controller.hermes import cronjobs, schedules
from controller.manifests.models import Routine

SAFE_ROUTINE_MARKER = cronjobs.DELEGATION_MARKER  # the Desktop's delegation form (read, never written)
LEGACY_SENTENCE = cronjobs.LEGACY_SENTENCE  # the Desktop auto-pauses a tagged job starting so
ONESHOT_GRACE_SECONDS = 120  # Hermes refuses a one-shot further in the past than this
# The job fields a routine manages; every other field (next_run_at, last_*, repeat.completed,
# claims, snapshots, origin, created_at, unknown keys) belongs to Hermes and is kept as it is.
MANAGED = (
    "name",
    "prompt",
    "schedule",
    "skills",
    "model",
    "provider",
    "base_url",
    "script",
    "no_agent",
    "context_from",
    "enabled_toolsets",
    "workdir",
    "deliver",
    "repeat",
    "paused",
    "paused_reason",
)
# Managed fields stored in the job exactly as desired_fields gives them (the others need shaping).
COPIED = frozenset(MANAGED) - {"schedule", "skills", "repeat", "paused", "paused_reason", "context_from"}
# How a live `context_from: ["self"]` (the Desktop's continuity, written literally) reads back: 0.19.0
# takes job ids only and skips it, so it differs from the routine's `self` and apply rewrites it.
UNRESOLVED_SELF = "self (not a job id: skipped by Hermes 0.19.0)"


def job_name(bot: str, title: str) -> str:
    return f"[bot:{bot}] {title.strip()}"


def routine_prompt(instruction: str) -> str:
    """The job prompt of a routine: its instruction, trimmed, as `hermes cron create` stores it."""
    return instruction.strip()


_V2_INSTRUCTION = re.compile(r"^\[bot-mode:routine:v2\] .* -q ('(?:[^']|'\"'\"')*')\n\nIf the command fails", re.S)


def instruction_of(prompt: str) -> str:
    """The instruction inside a prompt: the v2 delegation form unwrapped, a bare prompt as it is."""
    match = _V2_INSTRUCTION.match(prompt)
    if not match:
        return prompt
    quoted = match.group(1)[1:-1].replace("'\"'\"'", "'")
    return quoted.removeprefix("[Scheduled routine] ")


def is_delegation(prompt: str) -> bool:
    """The prompt is in the Desktop's v2 delegation form."""
    return instruction_of(prompt) != prompt


def same(key: str, have: Any, want: Any) -> bool:
    """Equality of one managed field; a prompt in either form of one instruction is the same prompt."""
    if have == want:
        return True
    if key == "prompt" and isinstance(have, str) and isinstance(want, str):
        # A live v2 delegation of the instruction (a Desktop-made job, adopted) is the same routine
        # as the bare instruction. Two v2 texts must match exactly: they also carry the title and
        # the bot, which a rename changes.
        bare_have, bare_want = instruction_of(have), instruction_of(want)
        return bare_have == bare_want and (bare_have == have or bare_want == want)
    return False


def stale_form(key: str, have: Any, applied: Any) -> bool:
    """The live prompt is the v2 delegation an earlier hermes-fleet wrote itself (it is rewritten bare).

    A v2 prompt the fleet applied (the inventory holds that very text) is its own old output, which
    0.19.0 cannot run; a v2 prompt the fleet never wrote (an adopted Desktop job) is left alone.
    """
    return key == "prompt" and isinstance(have, str) and have == applied and is_delegation(have)


def desired_fields(bot: str, routine: Routine) -> dict[str, Any]:
    """The managed job fields, in the form Hermes stores them."""
    title = routine.name.strip()
    parsed = schedules.parse(routine.schedule)
    repeat = routine.repeat if routine.repeat is not None else (1 if parsed.kind == "once" else None)
    # Interned: the plan's FieldChanges and the inventory record of the same routine then hold one
    # copy of each text (a prompt is about 400 characters; 30,000 routines at 10,000 bots: memory).
    return {
        "name": sys.intern(job_name(bot, title)),
        "prompt": sys.intern(routine_prompt(routine.prompt or "")),
        "schedule": sys.intern(f"{parsed.kind}:{parsed.display}"),
        "skills": list(routine.skills or []),
        "model": routine.model,
        "provider": routine.provider,
        "base_url": routine.base_url.rstrip("/") if routine.base_url else None,
        "script": routine.script,
        "no_agent": bool(routine.no_agent),
        "context_from": list(routine.context_from) if routine.context_from else None,
        "enabled_toolsets": list(routine.toolsets) if routine.toolsets else None,
        "workdir": routine.workdir,
        "deliver": routine.deliver or "local",
        "repeat": repeat,
        "paused": routine.paused,
        "paused_reason": (routine.paused_reason if routine.paused else None),
    }


def job_context_from(wanted: list[str] | None, job_id: str) -> list[str] | None:
    """The stored `context_from`: `self` written as the job's own id (0.19.0 reads job ids only)."""
    return [job_id if source == cronjobs.SELF else source for source in wanted] if wanted else None


def manifest_context_from(job: Mapping[str, Any], unresolved: str = cronjobs.SELF) -> list[str] | None:
    """A job's `context_from` as a manifest says it: its own id is `self`; a literal `self` is `unresolved`."""
    stored = job.get("context_from")
    if isinstance(stored, str):
        stored = [stored]
    if not isinstance(stored, list) or not stored:
        return None
    own = str(job.get("id"))
    return [cronjobs.SELF if source == own else unresolved if source == cronjobs.SELF else source for source in stored]


def live_fields(job: Mapping[str, Any]) -> dict[str, Any]:
    """The same managed fields read back from a job record (as Hermes would interpret it)."""
    schedule = v if isinstance(v := job.get("schedule"), dict) else {}
    repeat = v if isinstance(v := job.get("repeat"), dict) else {}
    paused = job.get("enabled") is False or job.get("state") == "paused"
    skills = job.get("skills")
    if not isinstance(skills, list):
        skills = [job["skill"]] if job.get("skill") else []
    return {
        "name": job.get("name"),
        "prompt": job.get("prompt") or "",
        "schedule": f"{schedule.get('kind')}:{schedule.get('display')}",
        "skills": skills,
        "model": job.get("model"),
        "provider": job.get("provider"),
        "base_url": job.get("base_url"),
        "script": job.get("script"),
        "no_agent": bool(job.get("no_agent")),
        "context_from": manifest_context_from(job, UNRESOLVED_SELF),
        "enabled_toolsets": job.get("enabled_toolsets") or None,
        "workdir": job.get("workdir"),
        "deliver": job.get("deliver") or "local",
        "repeat": repeat.get("times"),
        "paused": paused,
        "paused_reason": job.get("paused_reason") if paused else None,
    }


def is_one_shot(routine: Routine) -> bool:
    return schedules.parse(routine.schedule).kind == "once"


def next_run(routine: Routine, now: datetime) -> str | None:
    """`next_run_at` for a new or rescheduled job, as Hermes' compute_next_run gives it."""
    parsed = schedules.parse(routine.schedule, tz=now.tzinfo)
    if parsed.kind == "cron":
        return schedules.next_runs(parsed, 1, now=now)[0].isoformat()
    if parsed.kind == "interval":
        return (now + timedelta(minutes=parsed.minutes or 0)).isoformat()
    run_at = parsed.run_at or now + timedelta(minutes=parsed.relative_minutes or 0)
    if run_at < now - timedelta(seconds=ONESHOT_GRACE_SECONDS):
        raise RefusedValue(
            f"the one-shot time {routine.schedule!r} is more than {ONESHOT_GRACE_SECONDS} s in the "
            "past; Hermes would never run it (set a future time or remove the routine)"
        )
    return run_at.isoformat()


def new_job(bot: str, routine: Routine, now: datetime, job_id: str) -> dict[str, Any]:
    """A complete job record in the shape `cron.jobs.create_job` writes (`job_id`: the engine
    chooses it, engine/applying/routines.py `new_job_id`; core makes no random values)."""
    fields = desired_fields(bot, routine)
    parsed = schedules.parse(routine.schedule, tz=now.tzinfo)
    skills = fields["skills"]
    job = {
        "id": job_id,
        "name": fields["name"],
        "prompt": fields["prompt"],
        "skills": skills,
        "skill": skills[0] if skills else None,
        "model": fields["model"],
        "provider": fields["provider"],
        "provider_snapshot": None,
        "model_snapshot": None,
        "base_url": fields["base_url"],
        "script": fields["script"],
        "no_agent": fields["no_agent"],
        "context_from": job_context_from(fields["context_from"], job_id),
        "schedule": parsed.as_hermes(now),
        "schedule_display": parsed.display,
        "repeat": {"times": fields["repeat"], "completed": 0},
        "enabled": True,
        "state": "scheduled",
        "paused_at": None,
        "paused_reason": None,
        "created_at": now.isoformat(),
        "next_run_at": next_run(routine, now),
        "last_run_at": None,
        "last_status": None,
        "last_error": None,
        "last_delivery_error": None,
        "deliver": fields["deliver"],
        "origin": None,
        "enabled_toolsets": fields["enabled_toolsets"],
        "workdir": fields["workdir"],
    }
    if routine.paused:
        _pause(job, routine.paused_reason, now)
    return job


def update_job(job: dict[str, Any], bot: str, routine: Routine, changed: set[str], now: datetime) -> None:
    """Set the changed managed fields on a live job in place; runtime fields stay Hermes'."""
    fields = desired_fields(bot, routine)
    for key in changed & COPIED:
        job[key] = fields[key]
    if "context_from" in changed:
        job["context_from"] = job_context_from(fields["context_from"], str(job.get("id")))
    if "skills" in changed:
        job["skills"] = fields["skills"]
        job["skill"] = fields["skills"][0] if fields["skills"] else None
    if "repeat" in changed:
        repeat = v if isinstance(v := job.get("repeat"), dict) else {}
        job["repeat"] = {**repeat, "times": fields["repeat"], "completed": repeat.get("completed", 0)}
    if "schedule" in changed:
        parsed = schedules.parse(routine.schedule, tz=now.tzinfo)
        job["schedule"] = parsed.as_hermes(now)
        job["schedule_display"] = parsed.display
    if routine.paused and ("paused" in changed or "paused_reason" in changed):
        _pause(job, routine.paused_reason, now)
    elif not routine.paused and "paused" in changed:
        job.update({"enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None})
        job["next_run_at"] = next_run(routine, now)
    if "schedule" in changed and not routine.paused:
        job["next_run_at"] = next_run(routine, now)


def _pause(job: dict[str, Any], reason: str | None, now: datetime) -> None:
    job.update({"enabled": False, "state": "paused", "paused_reason": reason})
    job.setdefault("paused_at", None)
    if not job["paused_at"]:
        job["paused_at"] = now.isoformat()
