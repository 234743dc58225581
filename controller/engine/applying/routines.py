"""Applying routines: all of one bot's routine changes in one locked write of its cron store."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from controller.adapters import cronstore, home
from controller.adapters import inventory as inventory_file
from controller.core import jobs
from controller.core.inventory import routine_key
from controller.core.types import Action, Inputs, ObjectChange
from controller.engine import records
from controller.engine.ledger import Ledger
from controller.errors import ConflictError, RefusedValue
from controller.manifests.models import Routine

WRITING = (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.DELETE)
JobIds = Callable[[], str]  # a fresh job id per call


def new_job_id() -> str:
    """A fresh job id in Hermes' shape (12 hex digits: cron/jobs.py `create_job`)."""
    return uuid.uuid4().hex[:12]


def now_in(tz: tzinfo | None) -> datetime:
    """Now, in a bot's scheduler zone (the server's local time when it has none)."""
    return datetime.now(tz) if tz is not None else datetime.now().astimezone()


def check_workdir(routine: Routine) -> None:
    """Hermes' `_normalize_workdir` refuses a workdir that is not an absolute, existing folder
    (cron jobs run detached from any cwd); writing jobs.json directly must not bypass that."""
    if not routine.workdir:
        return
    path = Path(routine.workdir)
    if not path.is_absolute():
        raise RefusedValue(f"routine {routine.name!r}: workdir {routine.workdir!r} must be an absolute path")
    if not path.is_dir():
        raise RefusedValue(f"routine {routine.name!r}: workdir {routine.workdir!r} is not an existing folder")


def prepare(bot: str, batch: list[ObjectChange], inputs: Inputs, new_id: JobIds = new_job_id) -> dict[str, str]:
    """Check what must hold before any write (a workdir Hermes would refuse) and choose the new
    jobs' ids: title -> id for each routine of `batch` that is created."""
    desired_bot = inputs.state.bots.get(bot)
    by_title = {r.name: r for r in (desired_bot.routines if desired_bot else ())}
    for change in batch:
        if change.action is Action.CREATE or (
            change.action in (Action.UPDATE, Action.ADOPT) and any(f.key == "workdir" for f in change.fields)
        ):
            check_workdir(by_title[change.title])
    return {c.title: new_id() for c in batch if c.action is Action.CREATE}


def write_ahead(root: Path, pending: dict[str, dict[str, str]], ledger: Ledger) -> None:
    """Record the new jobs' ids (bot -> title -> id) in the inventory before any cron store is written.

    One inventory write for the whole run (not one per bot, which made apply quadratic): a crash
    after it leaves every new job recognisable as this fleet's (not a same-named stranger that
    needs --adopt). An entry whose job is missing is re-created by the next apply (its `applied`
    is empty).
    """
    if not any(pending.values()):
        return
    for bot, ids in pending.items():
        for title, job_id in ids.items():
            entry = ledger.entry(routine_key(bot, title))
            entry.update(job_id=job_id, applied=entry.get("applied") or {})
    records.save(root, ledger)


def apply_routines(root: Path, bot: str, batch: list[ObjectChange], inputs: Inputs, ids: dict[str, str], ledger: Ledger) -> None:
    """Write one bot's routine changes in one locked write of its cron store; its new jobs get
    the `ids` that `prepare` chose and `write_ahead` recorded."""
    path = home.check_profile(root, bot)  # the cron store stays inside the bot's own profile
    record(bot, batch, inputs, write_store(path, bot, batch, inputs, ids), ledger)


def write_store(path: Path, bot: str, batch: list[ObjectChange], inputs: Inputs, ids: dict[str, str]) -> dict[str, str]:
    """Carry out `batch` in the cron store of the profile at `path` (a new profile's staging
    folder too); returns title -> id of the jobs it created."""
    desired_bot = inputs.state.bots.get(bot)
    by_title = {r.name: r for r in (desired_bot.routines if desired_bot else ())}
    now = now_in(inputs.observed.timezones.get(bot))
    prepared = {c.title: jobs.new_job(bot, by_title[c.title], now, ids[c.title]) for c in batch if c.action is Action.CREATE}
    created: dict[str, str] = {}

    def mutate(live_jobs: list[dict[str, Any]]) -> bool:
        changed = False
        index = {str(j.get("id")): j for j in live_jobs}
        for change in batch:
            if change.action is Action.DELETE:
                before = len(live_jobs)
                live_jobs[:] = [j for j in live_jobs if str(j.get("id")) != change.ref]
                changed = changed or len(live_jobs) != before
            elif change.action is Action.CREATE:
                job = prepared[change.title]
                live_jobs.append(job)
                created[change.title] = job["id"]
                changed = True
            elif change.action in (Action.UPDATE, Action.ADOPT):
                found = index.get(change.ref)
                if found is None:
                    raise ConflictError(f"cron job {change.ref} of bot {bot} vanished during apply", hint="run apply again")
                keys = {f.key for f in change.fields}
                jobs.update_job(found, bot, by_title[change.title], keys, now)
                changed = changed or bool(keys)
        return changed

    if any(c.action in WRITING for c in batch) and (path.is_dir() or any(c.action is not Action.DELETE for c in batch)):
        cronstore.update(path, mutate, now=now)
    return created


def record(bot: str, batch: list[ObjectChange], inputs: Inputs, created: dict[str, str], ledger: Ledger) -> None:
    """The inventory entries of a bot's routines once its cron store holds them."""
    desired_bot = inputs.state.bots.get(bot)
    by_title = {r.name: r for r in (desired_bot.routines if desired_bot else ())}
    for change in batch:
        key = routine_key(bot, change.title)
        if change.action in (Action.DELETE, Action.RELEASE):
            ledger.drop(key)
            continue
        routine = by_title[change.title]
        if routine.renamed_from:
            ledger.drop(routine_key(bot, routine.renamed_from))
        entry = ledger.entry(key)
        entry["job_id"] = created.get(change.title) or change.ref
        entry["applied"] = jobs.desired_fields(bot, routine)
        entry["updated_at"] = inventory_file.now_iso()
