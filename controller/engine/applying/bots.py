"""Applying bots and the install-wide settings: a fixed order of small atomic writes.

Profile folder, config.yaml, .env, SOUL.md, profile.yaml, avatar, Bot Chat; every file is
re-read just before it is written, so a concurrent Hermes writer loses nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from controller.adapters import configfile, cronstore, envfile, fsio, home, honcho, profilemeta, profiles, sessions
from controller.adapters import history as history_file
from controller.adapters import inventory as inventory_file
from controller.adapters.home import HomeLayout, ProfileLayout, profile_dir
from controller.core import jobs
from controller.core.inventory import INSTALL_KEY, bot_key, routine_key, routine_parts, split_key
from controller.core.planning.bots import applied_record, bot_desired, clear_value, inherited_left, install_fields, owned_by
from controller.core.types import Action, FieldChange, Inputs, Kind, ObjectChange, Op
from controller.engine import records
from controller.engine.ledger import Ledger
from controller.errors import ConflictError
from controller.hermes import AVATAR_EXTENSIONS, DEFAULT_PROFILE, image_extension, renaming
from controller.hermes.env import PROFILE_ENV_HEADER
from controller.manifests import references
from controller.manifests.desired import DesiredBot

META_NEVER_WRITE = ("image", "pet", "chat")  # docs/hermes/bot-mode.md#never-write


def apply_object(
    root: Path,
    change: ObjectChange,
    inputs: Inputs,
    ledger: Ledger,
    kept: list[str] | None = None,
    with_new: Callable[[Path], None] | None = None,
) -> None:
    """Converge one bot (or the install-wide settings) and record it in the run's ledger.

    `with_new(staging)`: more of a new profile to write into its staging folder before it is
    published (its cron store: applying/__init__.py).

    A file about to be overwritten where a managed field was edited by hand (drift) is first
    copied to `.hermes-fleet/replaced/` (`keep_hand_edits`); the copies' paths go to `kept`.
    """
    obs = inputs.observed
    fleet = inputs.state.fleet
    if change.kind is Kind.INSTALL:
        fsio.make_dirs(root, mode=0o700)
        home.check_profile(root, DEFAULT_PROFILE)
        desired = install_fields(inputs.state, obs)
        keep_hand_edits(root, root, change.fields, inputs, kept)
        write_fields(root, change.fields, desired, bot=None)
        left = install_left(inputs, change, ledger)
        record(
            ledger,
            INSTALL_KEY,
            desired=desired,
            secret_keys=obs.secret_keys.get("", frozenset()),
            verb="updated",
            left=left,
        )
        return
    name = change.name
    if change.action is Action.RENAME:
        move_profile(root, change.ref, name, inputs, ledger)
    elif change.action is Action.CREATE and change.ref and ledger.owns(bot_key(change.ref)):
        # A rename whose old profile is gone: the new bot is created empty, the old records go with it.
        ledger.rename_bot(change.ref, name)
    if change.action is not Action.CREATE:
        home.check_profile(root, name)  # containment, checked again right before the writes
    if change.action is Action.DELETE:
        # The backup keeps the bot's and its routines' inventory entries: restore gives them back.
        kept_records = {k: v for k, v in ledger.items() if owned_with(k, name)}
        profiles.backup_profile(root, name, fleet=fleet, records=kept_records)
        ledger.drop(bot_key(name))
        return
    if change.action is Action.RELEASE:
        path = profile_dir(root, name)
        if name != DEFAULT_PROFILE and (inventory_file.read_marker(root, name) or {}).get("fleet") == fleet:
            inventory_file.remove_marker(path)  # only our own marker: another fleet's stays
        ledger.drop(bot_key(name))
        return
    bot = inputs.state.bots[name]
    path = profile_dir(root, name)
    want = bot_desired(inputs.state, obs, bot)
    if change.action is Action.CREATE:
        # Every file is written into the staging folder; one sync and one rename publish it whole.
        profiles.create_profile(
            root,
            name,
            clone_from=bot.clone_from,
            create_empty=bot.create_empty,
            extra_files={inventory_file.MARKER: inventory_file.marker_text(fleet, name)},
            fill=lambda staging: fill_new(staging, change.fields, want.fields, bot, with_new),
        )
    else:
        if name == DEFAULT_PROFILE:
            fsio.make_dirs(root, mode=0o700)
        elif change.action is Action.ADOPT or inventory_file.read_marker(root, name) is None:
            inventory_file.write_marker(path, fleet, name)
        keep_hand_edits(root, path, change.fields, inputs, kept)
        write_fields(path, change.fields, want.fields, bot=bot)
    verb = {Action.CREATE: "created", Action.ADOPT: "adopted", Action.RENAME: "renamed"}.get(change.action, "updated")
    left = inherited_left(inputs, name) if change.action is Action.UPDATE else {}
    record(ledger, bot_key(name), desired=want.fields, secret_keys=want.secret_keys, verb=verb, left=left)


def fill_new(
    staging: Path,
    fields: tuple[FieldChange, ...],
    desired: Mapping[str, Any],
    bot: DesiredBot,
    more: Callable[[Path], None] | None,
) -> None:
    """A new profile's files, written into its staging folder (profiles.create_profile)."""
    write_fields(staging, fields, desired, bot=bot)
    if more is not None:
        more(staging)


def move_profile(root: Path, old: str, new: str, inputs: Inputs, ledger: Ledger) -> None:
    """Rename profile `old` to `new` as `hermes profile rename` does (docs/hermes/rename.md), plus
    the Bot Mode names in its cron store and this fleet's own records.

    Each step is one atomic write and safe to repeat, so a run cut short anywhere is finished by
    the next one (core.planning.renames: `finish`): the folder (one rename), the owner marker, the
    Honcho host blocks, `active_profile`, the cron store, the inventory.
    """
    fleet = inputs.state.fleet
    source, target = home.check_profile_dir(root, old), home.check_profile_dir(root, new)
    home.check_profile(root, DEFAULT_PROFILE, (ProfileLayout.HONCHO, HomeLayout.ACTIVE_PROFILE))  # the root's files, no way out
    if not os.path.lexists(target):
        home.check_profile(root, old, (*home.PROFILE_ENTRIES, ProfileLayout.HONCHO))  # containment of what moves
        fsio.publish_dir(source, target)  # everything inside moves with it: memories, state.db, skills, cron
    elif (inventory_file.read_marker_any(root, new) or {}).get("fleet") != fleet:
        raise ConflictError(f"{target} appeared while hermes-fleet was renaming {old!r} to it", hint="run apply again")
    home.check_profile(root, new, (*home.PROFILE_ENTRIES, ProfileLayout.HONCHO))
    if inventory_file.read_marker(root, new) is None:
        inventory_file.write_marker(target, fleet, new)
    for path in honcho.files(root, new):
        honcho.rewrite(path, lambda data: renaming.honcho_renamed(data, old, new))
    sticky = HomeLayout(Path(root)).active_profile
    current = fsio.read_or_none(sticky) if sticky.is_file() else None
    if current is not None and current.decode("utf-8", "replace").strip() == old:
        fsio.atomic_write_text(sticky, new + "\n", expect=current)
    if cronstore.jobs_path(target).is_file():

        def retarget(jobs: list[dict[str, Any]]) -> bool:
            return any([renaming.retarget_job(job, old, new) for job in jobs])  # every job, no short cut

        cronstore.update(target, retarget, now=datetime.now().astimezone())
    if ledger.rename_bot(old, new):
        fsio.sync_group_now()  # the move is durable before the inventory says it happened
        records.save(root, ledger)


def owned_with(key: str, bot: str) -> bool:
    """The inventory entries that belong to a bot: its own and its routines'."""
    kind, name = split_key(key)
    return (kind == "bot" and name == bot) or (kind == "routine" and routine_parts(name)[0] == bot)


def refresh_record(root: Path, change: ObjectChange, inputs: Inputs, ledger: Ledger) -> None:
    """A no-op object already holds the desired values: make its inventory record say so.

    After a crash between the files and the inventory write, the files are new and the record is
    old (or missing); without this, status would report drift and three-way diffs would misjudge.
    """
    obs = inputs.observed
    left: dict[str, Any] = {}
    if change.kind is Kind.INSTALL and ledger.owns(INSTALL_KEY):
        desired = install_fields(inputs.state, obs)
        key, secret_keys, left = INSTALL_KEY, obs.secret_keys.get("", frozenset()), install_left(inputs, change, ledger)
    elif (
        change.kind is Kind.BOT
        and change.name in inputs.state.bots
        and (
            owned_by(inputs, change.name)
            or (inventory_file.read_marker(root, change.name) or {}).get("fleet") == inputs.state.fleet
        )
    ):
        bot = inputs.state.bots[change.name]
        want = bot_desired(inputs.state, obs, bot)
        desired, key, secret_keys = want.fields, bot_key(change.name), want.secret_keys
        left = inherited_left(inputs, change.name)
    elif change.kind is Kind.ROUTINE and change.ref:
        key = routine_key(change.bot, change.title)
        entry = ledger.get(key)
        desired_bot = inputs.state.bots.get(change.bot)
        routine = next((r for r in (desired_bot.routines if desired_bot else ()) if r.name == change.title), None)
        if entry is not None and routine is not None:
            fields = jobs.desired_fields(change.bot, routine)
            if entry.get("applied") != fields or entry.get("job_id") != change.ref:
                ledger.entry(key).update(job_id=change.ref, applied=fields, updated_at=inventory_file.now_iso())
        return
    else:
        return
    if {**applied_record(desired, secret_keys, ledger.planned), **left} != ledger.applied(key):
        record(ledger, key, desired=desired, secret_keys=secret_keys, verb="updated", left=left)


def install_left(inputs: Inputs, change: ObjectChange, ledger: Ledger) -> dict[str, Any]:
    """The install record's entries for fields gone from the manifests that this change leaves in
    the root profile (no --prune): kept, so that a later `apply --prune` still removes them."""
    if inputs.options.prune:
        return {}
    removed = {f.field for f in change.fields if f.op is Op.REMOVE}
    desired = install_fields(inputs.state, inputs.observed)
    return {n: v for n, v in ledger.applied(INSTALL_KEY).items() if n not in desired and n not in removed}


def record(
    ledger: Ledger,
    key: str,
    *,
    desired: Mapping[str, Any],
    secret_keys: frozenset[str],
    verb: str,
    left: Mapping[str, Any] | None = None,
) -> None:
    entry = ledger.entry(key)
    entry["applied"] = {**applied_record(desired, secret_keys, ledger.planned), **(left or {})}
    entry.setdefault(f"{verb}_at", inventory_file.now_iso())
    entry["updated_at"] = inventory_file.now_iso()


# --- hand edits kept before they are overwritten -------------------------------------------------

# The file each field space lives in (the avatar: whichever assets/avatar.<ext> is there).
FILE_OF_SPACE = {
    "config": ProfileLayout.CONFIG,
    "env": ProfileLayout.ENV,
    "soul": ProfileLayout.SOUL,
    "profile": ProfileLayout.META,
    "meta": ProfileLayout.META,
}


def keep_hand_edits(root: Path, path: Path, fields: tuple[FieldChange, ...], inputs: Inputs, kept: list[str] | None) -> None:
    """Copy each file this change overwrites where a managed field drifted (someone edited what
    this fleet last wrote: a hand edit that apply, or watch --self-heal, is about to undo).

    Only drifted fields count: a key this fleet does not manage is never overwritten, so a hand
    edit there needs no copy (docs/cli.md#replaced-content).
    """
    stamp = inputs.now.strftime("%Y%m%dT%H%M%S%fZ")
    names: list[str] = []
    for change in fields:
        if not change.drift:
            continue
        if change.space == "avatar":
            names += [ProfileLayout.avatar_name(ext) for ext in AVATAR_EXTENSIONS]
        elif change.space in FILE_OF_SPACE:
            names.append(FILE_OF_SPACE[change.space])
    for name in dict.fromkeys(names):
        copy = history_file.keep_replaced(root, stamp, path / name)
        if copy is not None and kept is not None:
            kept.append(str(copy))


# --- field writers -------------------------------------------------------------------------------


def write_fields(path: Path, fields: tuple[FieldChange, ...], desired: Mapping[str, Any], bot: DesiredBot | None) -> None:
    groups: dict[str, list[FieldChange]] = {}
    for change in fields:
        groups.setdefault(change.space, []).append(change)
    files = ProfileLayout(path)
    if "config" in groups:
        _write_config(files.config, groups["config"], desired)
    if "env" in groups:
        fsio.retrying(lambda: _write_env(files.env, groups["env"], desired))
    if "soul" in groups:
        fsio.atomic_write_text(files.soul, desired["soul"], mode=0o644)
    if "profile" in groups or "meta" in groups or "botmode" in groups:
        _write_profile_yaml(files.meta, groups.get("profile", []), groups.get("meta", []), desired,
                            ensure_record="botmode" in groups)  # fmt: skip
    if "avatar" in groups and bot is not None:
        _write_avatar(path, bot.avatar_image if "avatar" in desired else None)
    if "botchat" in groups:
        # By name: `path` may be the staging folder of a new profile (profiles.create_profile).
        sessions.ensure_bot_chat(path, profile=bot.name if bot is not None and bot.name != DEFAULT_PROFILE else None)


def _write_config(target: Path, changes: list[FieldChange], desired: Mapping[str, Any]) -> None:
    def write() -> None:
        doc = configfile.ConfigDoc.load(target)
        for change in changes:
            if change.op is Op.REMOVE:
                doc.delete(change.key)
            else:
                doc.set(change.key, desired[change.field])
        if doc.changed:
            doc.save(target)

    fsio.retrying(write)


def _write_env(target: Path, changes: list[FieldChange], desired: Mapping[str, Any]) -> None:
    before = fsio.read_or_none(target)
    env = envfile.read_env(target)
    changed = False
    for change in changes:
        if change.op is Op.REMOVE:
            changed = env.remove(change.key) or changed
        else:
            changed = env.set(change.key, str(desired[change.field])) or changed
    if changed:
        if not target.exists() and not env.render().startswith("#"):
            env = envfile.EnvFile.parse(PROFILE_ENV_HEADER + env.render())
        envfile.write_env(target, env, expect=before)


def _write_profile_yaml(
    target: Path,
    profile_changes: list[FieldChange],
    meta_changes: list[FieldChange],
    desired: Mapping[str, Any],
    *,
    ensure_record: bool = False,
) -> None:
    # profile.yaml has no file lock in Hermes; ProfileMeta.save refuses if the file moved under
    # us, and we start over from a fresh read (docs/hermes/bot-mode.md#revisions).
    def write() -> None:
        meta = profilemeta.ProfileMeta.load(target)
        for change in profile_changes:
            value = None if change.op is Op.REMOVE else desired[change.field]
            if change.key == "description":
                meta.description = value
            else:
                meta.display_name = value
        if meta_changes or (ensure_record and meta.bot_record() is None):
            meta.set_bot_record(_merged_record(meta.bot_record(), meta_changes, desired))
        if meta.changed:
            meta.save(target)

    fsio.retrying(write)


def _merged_record(live: Mapping[str, Any] | None, changes: list[FieldChange], desired: Mapping[str, Any]) -> dict[str, Any]:
    """The whole hermes-bots record: the live one (unknown keys kept) with our keys set."""
    merged = {k: v for k, v in (live or {}).items() if k not in META_NEVER_WRITE}
    if live is None:
        # What Desktop's own create path writes first (docs/hermes/bot-mode.md#new-bot-record).
        merged.update({"shape": "blobatar", "imageKind": "shape", "created": int(time.time() * 1000)})
    for name, value in desired.items():
        if name.startswith("meta:"):
            merged[name[5:]] = value
    for change in changes:
        if change.op is Op.REMOVE:
            merged[change.key] = clear_value(change.field)
    return merged


def _write_avatar(path: Path, image: str | None) -> None:
    files = ProfileLayout(path)
    keep = None
    if image is not None:
        data = references.read_image(image)
        ext = image_extension(data[:16]) or "png"
        fsio.make_dirs(files.assets)
        fsio.atomic_write_bytes(files.avatar(ext), data, mode=0o644)
        keep = ext
    for other in AVATAR_EXTENSIONS:
        if other != keep:
            fsio.remove(files.avatar(other))
