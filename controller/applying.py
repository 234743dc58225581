"""Applying: carry out a Plan through the adapters, one object at a time.

Each bot is converged in a fixed order of small atomic writes (profile folder, config.yaml,
.env, SOUL.md, profile.yaml, avatar, Bot Chat), re-reading every file just before it is written
so a concurrent Hermes writer loses nothing. A failure stops that one object, is recorded with
its cause, and the others go on; the next apply finishes the job. Called by commands.apply.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller import inventory as inv
from controller import planning
from controller.adapters import configfile, cronstore, envfile, fsio, profilemeta, profiles, sessions
from controller.adapters.home import profile_dir
from controller.desired import DesiredBot
from controller.errors import ConflictError, ControllerError
from controller.naming import DEFAULT_PROFILE
from controller.planning import Action, FieldChange, ObjectChange

META_NEVER_WRITE = ("image", "pet", "chat")  # bot-mode-state.md section 8, rule 4
META_RETRIES = 3


@dataclass
class Outcome:
    change: ObjectChange
    ok: bool
    error: str = ""


@dataclass
class ApplyResult:
    outcomes: list[Outcome] = field(default_factory=list)
    abandoned: bool = False  # stopped early on request (SIGTERM); the next apply finishes the job

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def done(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]


def apply_plan(root: Path, plan: planning.Plan, inputs: planning.Inputs,
               on_outcome: Callable[[Outcome], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> ApplyResult:
    """Converge every object the plan writes; record ownership in the inventory as we go."""
    result = ApplyResult()
    routine_batches: dict[str, list[ObjectChange]] = {}
    room_changes: list[ObjectChange] = []
    failed_bots: set[str] = set()
    for change in plan.changes:
        if change.action is Action.NOOP:
            _refresh_record(root, change, inputs)
        if change.action not in planning.WRITING_ACTIONS:
            continue
        if should_stop is not None and should_stop():
            result.abandoned = True  # a shutdown between two objects: each finished object is whole
            break
        if change.kind == "routine":
            routine_batches.setdefault(change.name.split("/", 1)[0], []).append(change)
            continue
        if change.kind == "room":  # after bots and routines, over the gateway (controller/rooms.py)
            room_changes.append(change)
            continue
        try:
            _apply_one(root, change, inputs)
            outcome = Outcome(change, True)
        except (ControllerError, OSError, ValueError) as exc:
            outcome = Outcome(change, False, _cause(exc))
            failed_bots.add(change.name)
        _report(result, outcome, on_outcome)
    for bot, batch in routine_batches.items():
        if result.abandoned:
            break
        if bot in failed_bots:
            for change in batch:
                _report(result, Outcome(change, False, f"bot/{bot} was not converged"), on_outcome)
            continue
        try:
            _apply_routines(root, bot, batch, inputs)
            outcomes = [Outcome(change, True) for change in batch]
        except (ControllerError, OSError, ValueError) as exc:
            outcomes = [Outcome(change, False, _cause(exc)) for change in batch]
        for outcome in outcomes:
            _report(result, outcome, on_outcome)
    if room_changes and not result.abandoned:
        from controller import rooms

        rooms.apply_rooms(root, room_changes, inputs, failed_bots,
                          lambda c, ok, error: _report(result, Outcome(c, ok, error), on_outcome))
    return result


def _report(result: ApplyResult, outcome: Outcome, on_outcome: Callable[[Outcome], None] | None) -> None:
    result.outcomes.append(outcome)
    if on_outcome:
        on_outcome(outcome)


def _apply_routines(root: Path, bot: str, batch: list[ObjectChange], inputs: planning.Inputs) -> None:
    """All of one bot's routine changes in one locked read-modify-write of its cron store."""
    from controller import routines

    desired_bot = inputs.state.bots.get(bot)
    by_title = {r.name: r for r in (desired_bot.routines if desired_bot else ())}
    now = routines.now_in(inputs.timezones.get(bot))
    path = profile_dir(root, bot)
    # Write-ahead: the new jobs' ids go into the inventory before the cron store, so a crash in
    # between leaves a job this fleet recognises (not a same-named stranger that needs --adopt).
    # An entry whose job is missing is re-created by the next apply (its `applied` is empty).
    prepared = {c.name.split("/", 1)[1]: routines.new_job(bot, by_title[c.name.split("/", 1)[1]], now)
                for c in batch if c.action is Action.CREATE}
    if prepared:
        for title, job in prepared.items():
            pending = inputs.inventory.objects.setdefault(planning.routine_key(bot, title), {})
            pending.update(job_id=job["id"], applied=pending.get("applied") or {})
        inv.save(root, inputs.inventory)
    created: dict[str, str] = {}

    def mutate(jobs: list[dict[str, Any]]) -> bool:
        changed = False
        index = {str(j.get("id")): j for j in jobs}
        for change in batch:
            title = change.name.split("/", 1)[1]
            if change.action is Action.DELETE:
                before = len(jobs)
                jobs[:] = [j for j in jobs if str(j.get("id")) != change.ref]
                changed = changed or len(jobs) != before
            elif change.action is Action.CREATE:
                job = prepared[title]
                jobs.append(job)
                created[title] = job["id"]
                changed = True
            elif change.action in (Action.UPDATE, Action.ADOPT):
                job = index.get(change.ref)
                if job is None:
                    raise ConflictError(f"cron job {change.ref} of bot {bot} vanished during apply",
                                        hint="run apply again")
                keys = {f.field.partition(":")[2] for f in change.fields}
                routines.update_job(job, bot, by_title[title], keys, now)
                changed = changed or bool(keys)
        return changed

    if any(c.action in (Action.CREATE, Action.UPDATE, Action.ADOPT, Action.DELETE) for c in batch) and (
            path.is_dir() or any(c.action is not Action.DELETE for c in batch)):
        cronstore.update(path, mutate, now=now)
    inventory = inputs.inventory
    for change in batch:
        title = change.name.split("/", 1)[1]
        key = planning.routine_key(bot, title)
        if change.action in (Action.DELETE, Action.RELEASE):
            inventory.objects.pop(key, None)
            continue
        routine = by_title[title]
        if routine.renamed_from:
            inventory.objects.pop(planning.routine_key(bot, routine.renamed_from), None)
        entry = inventory.objects.setdefault(key, {})
        entry["job_id"] = created.get(title) or change.ref
        entry["applied"] = routines.desired_fields(bot, routine)
        entry["updated_at"] = inv.now_iso()


def _refresh_record(root: Path, change: ObjectChange, inputs: planning.Inputs) -> None:
    """A no-op object already holds the desired values: make its inventory record say so.

    After a crash between the files and the inventory write, the files are new and the record is
    old (or missing); without this, status would report drift and three-way diffs would misjudge.
    """
    from controller import routines

    inventory = inputs.inventory
    if change.kind == "install" and inventory.owns(inv.INSTALL_KEY):
        desired = planning.install_fields(inputs.state, inputs.env_values.get("", {}))
        key, secret_keys = inv.INSTALL_KEY, inputs.secret_keys.get("", set())
    elif change.kind == "bot" and change.name in inputs.state.bots and (
            inventory.owns(inv.bot_key(change.name))
            or (inv.read_marker(root, change.name) or {}).get("fleet") == inputs.state.fleet):
        bot = inputs.state.bots[change.name]
        desired = planning.desired_fields(bot, inputs.env_values.get(change.name, {}), inputs.avatars.get(change.name))
        key, secret_keys = inv.bot_key(change.name), inputs.secret_keys.get(change.name, set())
    elif change.kind == "routine" and change.ref:
        bot_name, _, title = change.name.partition("/")
        entry = inventory.objects.get(planning.routine_key(bot_name, title))
        bot = inputs.state.bots.get(bot_name)
        routine = next((r for r in (bot.routines if bot else ()) if r.name == title), None)
        if entry is not None and routine is not None:
            fields = routines.desired_fields(bot_name, routine)
            if entry.get("applied") != fields or entry.get("job_id") != change.ref:
                entry.update(job_id=change.ref, applied=fields, updated_at=inv.now_iso())
        return
    else:
        return
    if applied_record(desired, secret_keys, inventory) != inventory.applied(key):
        _record(inventory, key, desired, secret_keys, "updated")


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def _apply_one(root: Path, change: ObjectChange, inputs: planning.Inputs) -> None:
    inventory = inputs.inventory
    fleet = inputs.state.fleet
    if change.kind == "install":
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        desired = planning.install_fields(inputs.state, inputs.env_values.get("", {}))
        _write_fields(root, change.fields, desired, meta_ctx=None)
        _record(inventory, inv.INSTALL_KEY, desired, inputs.secret_keys.get("", set()), "updated")
        return
    name = change.name
    if change.action is Action.DELETE:
        profiles.backup_profile(root, name, fleet=fleet)
        inventory.objects.pop(inv.bot_key(name), None)
        return
    if change.action is Action.RELEASE:
        path = profile_dir(root, name)
        if name != DEFAULT_PROFILE and path.is_dir():
            inv.remove_marker(path)
        inventory.objects.pop(inv.bot_key(name), None)
        return
    bot = inputs.state.bots[name]
    path = profile_dir(root, name)
    if change.action is Action.CREATE:
        profiles.create_profile(root, name, clone_from=bot.clone_from, create_empty=bot.create_empty,
                                extra_files={inv.MARKER: inv.marker_text(fleet, name)})
    elif name == DEFAULT_PROFILE:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    elif change.action is Action.ADOPT or inv.read_marker(root, name) is None:
        inv.write_marker(path, fleet, name)
    desired = planning.desired_fields(bot, inputs.env_values.get(name, {}), inputs.avatars.get(name))
    _write_fields(path, change.fields, desired, meta_ctx=bot)
    verb = {Action.CREATE: "created", Action.ADOPT: "adopted"}.get(change.action, "updated")
    _record(inventory, inv.bot_key(name), desired, inputs.secret_keys.get(name, set()), verb)


def applied_record(desired: dict[str, Any], secret_keys: set[str], inventory: inv.Inventory) -> dict[str, Any]:
    return {
        name: planning.comparable(name, value, secret=name.startswith("env:") and name[4:] in secret_keys,
                                  inventory=inventory)
        for name, value in desired.items()
    }


def _record(inventory: inv.Inventory, key: str, desired: dict[str, Any], secret_keys: set[str], verb: str) -> None:
    applied = applied_record(desired, secret_keys, inventory)
    entry = inventory.objects.setdefault(key, {})
    entry["applied"] = applied
    entry.setdefault(f"{verb}_at", inv.now_iso())
    entry["updated_at"] = inv.now_iso()


# --- field writers -------------------------------------------------------------------------------


def _write_fields(path: Path, fields: tuple[FieldChange, ...], desired: dict[str, Any],
                  meta_ctx: DesiredBot | None) -> None:
    groups: dict[str, list[FieldChange]] = {}
    for change in fields:
        groups.setdefault(change.field.partition(":")[0], []).append(change)
    if "config" in groups:
        _write_config(path / "config.yaml", groups["config"], desired)
    if "env" in groups:
        _write_env(path / ".env", groups["env"], desired)
    if "soul" in groups:
        fsio.atomic_write_text(path / "SOUL.md", desired["soul"], mode=0o644)
    if "profile" in groups or "meta" in groups:
        _write_profile_yaml(path / "profile.yaml", groups.get("profile", []), groups.get("meta", []), desired)
    if "avatar" in groups and meta_ctx is not None:
        _write_avatar(path, meta_ctx.avatar_image if "avatar" in desired else None)
    if "botchat" in groups:
        sessions.ensure_bot_chat(path)


def _write_config(target: Path, changes: list[FieldChange], desired: dict[str, Any]) -> None:
    def write() -> None:
        doc = configfile.ConfigDoc.load(target)
        for change in changes:
            key = change.field.partition(":")[2]
            if change.op == "remove":
                doc.delete(key)
            else:
                doc.set(key, desired[change.field])
        if doc.changed:
            doc.save(target)

    fsio.retrying(write)


def _write_env(target: Path, changes: list[FieldChange], desired: dict[str, Any]) -> None:
    fsio.retrying(lambda: _write_env_once(target, changes, desired))


def _write_env_once(target: Path, changes: list[FieldChange], desired: dict[str, Any]) -> None:
    before = fsio.read_or_none(target)
    env = envfile.read_env(target)
    changed = False
    for change in changes:
        key = change.field.partition(":")[2]
        if change.op == "remove":
            changed = env.remove(key) or changed
        else:
            try:
                changed = env.set(key, str(desired[change.field])) or changed
            except ValueError as exc:  # a value Hermes' .env cannot carry safely
                raise ControllerError(f".env key {key}: {exc}", hint="change the value at its source") from None
    if changed:
        if not target.exists() and not env.render().startswith("#"):
            env = envfile.EnvFile.parse(envfile.PROFILE_ENV_HEADER + env.render())
        envfile.write_env(target, env, expect=before)


def _write_profile_yaml(target: Path, profile_changes: list[FieldChange], meta_changes: list[FieldChange],
                        desired: dict[str, Any]) -> None:
    # profile.yaml has no file lock in Hermes; ProfileMeta.save refuses if the file moved under
    # us, and we start over from a fresh read (bot-mode-state.md section 8, rule 2).
    def write() -> None:
        meta = profilemeta.ProfileMeta.load(target)
        for change in profile_changes:
            value = None if change.op == "remove" else desired[change.field]
            key = change.field.partition(":")[2]
            if key == "description":
                meta.description = value
            else:
                meta.display_name = value
        if meta_changes:
            meta.set_bot_record(_merged_record(meta.bot_record(), meta_changes, desired))
        if meta.changed:
            meta.save(target)

    fsio.retrying(write)


def _merged_record(live: dict[str, Any] | None, changes: list[FieldChange], desired: dict[str, Any]) -> dict[str, Any]:
    """The whole hermes-bots record: the live one (unknown keys kept) with our keys set."""
    record = {k: v for k, v in (live or {}).items() if k not in META_NEVER_WRITE}
    if live is None:
        # What Desktop's own create path writes first (bot-mode-state.md section 1).
        record.update({"shape": "blobatar", "imageKind": "shape", "created": int(time.time() * 1000)})
    for name, value in desired.items():
        if name.startswith("meta:"):
            record[name[5:]] = value
    for change in changes:
        if change.op == "remove":
            record[change.field[5:]] = planning.clear_value(change.field)
    return record


def _write_avatar(path: Path, image: str | None) -> None:
    assets = path / "assets"
    keep = None
    if image is not None:
        data = Path(image).read_bytes()
        from controller.validating import image_extension

        ext = image_extension(data[:16]) or "png"
        assets.mkdir(exist_ok=True)
        fsio.atomic_write_bytes(assets / f"avatar.{ext}", data, mode=0o644)
        keep = f"avatar.{ext}"
    for other in ("avatar.png", "avatar.jpg", "avatar.webp"):
        if other != keep:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(assets / other)
