"""Planning routines: each bot's cron jobs against its routines (pure).

A routine is owned through the inventory (`routine/<bot>/<title>` -> job id); a job of the same
name that this fleet does not own is a conflict until --adopt. The next runs shown in a plan are
computed in the bot's Hermes `timezone` from the `now` the planner is given.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from controller.core import drift, jobs
from controller.core.inventory import routine_key, routine_name, routine_parts, split_key
from controller.core.types import Action, FieldChange, Inputs, Kind, ObjectChange, Op, Reason
from controller.errors import ScheduleError
from controller.hermes import schedules
from controller.manifests.desired import DesiredBot
from controller.manifests.models import Routine


def plan_routines(inputs: Inputs, bot: DesiredBot, bot_action: Action) -> list[ObjectChange]:
    obs = inputs.observed
    if bot_action in (Action.CONFLICT, Action.ERROR):
        return []  # the bot's own line says why; its routines wait for it
    if bot.name in obs.job_errors:
        return [
            ObjectChange(
                kind=Kind.ROUTINE,
                name=routine_name(bot.name, r.name),
                action=Action.ERROR,
                code=Reason.UNREADABLE,
                reason=obs.job_errors[bot.name],
            )
            for r in bot.routines
        ]
    live_jobs = {str(j.get("id")): j for j in obs.jobs.get(bot.name, ())}
    return [_plan_routine(inputs, bot, bot_action, routine, live_jobs) for routine in bot.routines]


def _plan_routine(
    inputs: Inputs, bot: DesiredBot, bot_action: Action, routine: Routine, live_jobs: Mapping[str, Mapping[str, Any]]
) -> ObjectChange:
    name = routine_name(bot.name, routine.name)
    objects = inputs.inventory.objects
    own_entry = objects.get(routine_key(bot.name, routine.name))
    entry = own_entry
    if entry is None and routine.renamed_from:
        entry = objects.get(routine_key(bot.name, routine.renamed_from))
    desired = jobs.desired_fields(bot.name, routine)
    tz = inputs.observed.timezones.get(bot.name)

    def change(
        action: Action, code: Reason, reason: str, fields: tuple[FieldChange, ...] = (), drifted: bool = False, ref: str = ""
    ) -> ObjectChange:
        return ObjectChange(
            kind=Kind.ROUTINE, name=name, action=action, code=code, reason=reason, fields=fields, drift=drifted, ref=ref
        )

    job = live_jobs.get(str(entry.get("job_id"))) if entry else None
    if entry is not None and job is not None:
        fields = tuple(diff_job(desired, jobs.live_fields(job), entry.get("applied", {})))
        renamed = routine.renamed_from is not None and entry is not own_entry
        code, reason = (Reason.RENAMED, "renamed") if renamed else (Reason.MANAGED, "managed by this fleet")
        when = next_runs_note(routine, tz, inputs.now) if fields else ""  # no-op: no croniter work
        return change(
            Action.UPDATE if fields else Action.NOOP,
            code,
            _join(reason, when),
            fields,
            any(f.drift for f in fields),
            str(job.get("id")),
        )
    when = next_runs_note(routine, tz, inputs.now)
    if entry is not None and jobs.is_one_shot(routine) and _applied_as(entry.get("applied"), desired):
        return change(Action.NOOP, Reason.ONE_SHOT_DONE, "one-shot ran and Hermes removed it: done")
    added = tuple(
        FieldChange(field=job_field(k), op=Op.ADD, old=None, new=v) for k, v in desired.items() if v not in (None, [], False)
    )
    if entry is not None:
        return change(Action.CREATE, Reason.RECREATED, _join("job was deleted outside hermes-fleet", when), added, drifted=True)
    same_name = [j for j in live_jobs.values() if j.get("name") == desired["name"]]
    if same_name:
        job = same_name[0]
        if inputs.options.adopt or bot_action is Action.ADOPT:
            return change(
                Action.ADOPT,
                Reason.ADOPTED,
                "existing job taken over (--adopt)",
                tuple(diff_job(desired, jobs.live_fields(job), {})),
                ref=str(job.get("id")),
            )
        return change(
            Action.CONFLICT,
            Reason.UNMANAGED,
            f"a cron job named {desired['name']!r} exists that this fleet does not own; re-run with --adopt to take it over",
        )
    return change(Action.CREATE, Reason.NEW, _join("new routine", when), added)


def _applied_as(applied: Any, desired: Mapping[str, Any]) -> bool:
    """The inventory's last-applied values are the desired ones (a v2 prompt an earlier fleet wrote
    counts as its instruction: the one-shot it made ran and is done)."""
    if not isinstance(applied, Mapping) or applied.keys() != desired.keys():
        return False
    return all(jobs.same(key, applied[key], want) for key, want in desired.items())


def diff_job(desired: Mapping[str, Any], live: Mapping[str, Any], applied: Mapping[str, Any]) -> list[FieldChange]:
    out = []
    for key, want in desired.items():
        have = live.get(key)
        if jobs.same(key, have, want) and not jobs.stale_form(key, have, applied.get(key)):
            continue
        drifted = key in applied and drift.job_field_drifted(key, applied[key], have)
        out.append(FieldChange(field=job_field(key), op=Op.CHANGE, old=have, new=want, drift=drifted))
    return out


def job_field(key: str) -> str:
    """A job field's plan name (`job:<key>`), one string for every routine of the plan (memory)."""
    name = _JOB_FIELDS.get(key)
    if name is None:
        name = _JOB_FIELDS[key] = sys.intern(f"job:{key}")
    return name


_JOB_FIELDS: dict[str, str] = {}


def next_runs_note(routine: Routine, tz: tzinfo | None, now: datetime) -> str:
    """The next three runs of a cron routine, in the bot's Hermes `timezone` (the one its
    scheduler evaluates the expression in), or the server's local time when none is configured."""
    return _next_runs_note(routine.schedule, tz, now)


@functools.lru_cache(maxsize=4096)
def _next_runs_note(schedule: str, tz: tzinfo | None, now: datetime) -> str:
    # By schedule text, zone and `now` (one value for a whole plan): a fleet's bots share a few
    # schedules, and each distinct one is worked out once per plan.
    try:
        parsed = schedules.parse(schedule)
    except ScheduleError:
        return ""
    if parsed.kind != "cron":
        return ""
    local = now.astimezone(tz) if tz is not None else now.astimezone()
    runs = schedules.next_runs(parsed, 3, now=local)
    label = getattr(tz, "key", None) or local.strftime("%Z") or "local"
    return f"next runs ({label}): " + ", ".join(r.strftime("%Y-%m-%d %H:%M") for r in runs)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def plan_routine_orphans(inputs: Inputs, bot_actions: Mapping[str, Action]) -> list[ObjectChange]:
    wanted = set()
    for bot in inputs.state.bots.values():
        for routine in bot.routines:
            wanted.add(routine_key(bot.name, routine.name))
            if routine.renamed_from:
                wanted.add(routine_key(bot.name, routine.renamed_from))
    out = []
    for key in inputs.inventory.keys_of("routine"):
        if key in wanted:
            continue
        name = split_key(key)[1]
        owner = routine_parts(name)[0]
        follows = bot_actions.get(owner)
        if follows in (Action.DELETE, Action.RELEASE):
            out.append(
                ObjectChange(
                    kind=Kind.ROUTINE,
                    name=name,
                    action=Action.RELEASE,
                    code=Reason.GOES_WITH_BOT,
                    reason=f"goes with bot/{owner}",
                )
            )
        elif follows in (Action.CONFLICT, Action.ERROR):
            continue
        elif inputs.options.prune and follows is not Action.ORPHAN:
            out.append(
                ObjectChange(
                    kind=Kind.ROUTINE,
                    name=name,
                    action=Action.DELETE,
                    code=Reason.PRUNED,
                    reason="removed from the manifests (--prune)",
                    ref=str(inputs.inventory.objects[key].get("job_id") or ""),
                )
            )
        else:
            out.append(
                ObjectChange(
                    kind=Kind.ROUTINE,
                    name=name,
                    action=Action.ORPHAN,
                    code=Reason.REMOVED,
                    reason="removed from the manifests; `apply --prune` deletes the job",
                )
            )
    return out
