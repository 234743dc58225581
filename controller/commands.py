"""The verbs that touch a Hermes home: plan (diff), apply, status, restore.

The only place the stages are wired together, guard-chain style: validate -> observe -> resolve
secrets -> plan -> (stop here for plan / --dry-run) -> lock -> re-observe -> apply -> inventory.
Imported lazily by cli.py.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller import cli, planning, reporting
from controller import inventory as inv
from controller import secrets as secrets_mod
from controller.adapters import cronstore, profiles
from controller.adapters.home import resolve_root
from controller.desired import DesiredState
from controller.errors import ConflictError, ControllerError, ExitCode
from controller.naming import DEFAULT_PROFILE
from controller.observed import LiveProfile, observe_profile


def gather(root: Path, state: DesiredState, *, prune: bool = False, adopt: bool = False,
           yes: bool = False) -> planning.Inputs:
    """Observe the home and resolve secrets for everything the plan will look at (read-only)."""
    inventory = inv.load(root, state.fleet)
    foreign, foreign_install = _foreign(root, state.fleet)
    names = set(state.bots) | set(inventory.owned_bots())
    live: dict[str, LiveProfile] = {DEFAULT_PROFILE: observe_profile(root, DEFAULT_PROFILE,
                                                                     with_bot_chat=DEFAULT_PROFILE in state.bots)}
    for name in sorted(names - {DEFAULT_PROFILE}):
        live[name] = observe_profile(root, name)
    inputs = planning.Inputs(state=state, inventory=inventory, live=live, env_values={}, secret_keys={},
                             foreign=foreign, foreign_install=foreign_install, prune=prune, adopt=adopt, yes=yes)
    _observe_routines(root, state, inputs)
    _resolve_env("", state.install_env, inputs)
    for name, bot in state.bots.items():
        _resolve_env(name, bot.env, inputs)
        if bot.avatar_image:
            inputs.avatars[name] = _image_digest(bot.avatar_image)
    return inputs


def _observe_routines(root: Path, state: DesiredState, inputs: planning.Inputs) -> None:
    """Each bot's own cron store, and the Hermes `timezone` its scheduler uses."""
    from controller import routines

    owners = {k.split("/")[1] for k in inputs.inventory.objects if k.startswith("routine/")}
    for name in sorted(owners | {n for n, b in state.bots.items() if b.routines}):
        live = inputs.live.get(name) or observe_profile(root, name, with_bot_chat=False)
        try:
            inputs.jobs[name] = cronstore.read_jobs(live.path) or [] if live.exists else []
        except ControllerError as exc:
            inputs.job_errors[name] = str(exc)
        tz_name = _desired_timezone(state, name)
        if tz_name is None:
            tz_name = live.config_value("timezone")[1] if live.config is not None else None
        inputs.timezones[name] = routines.zone(tz_name)


def _desired_timezone(state: DesiredState, name: str) -> str | None:
    if name == DEFAULT_PROFILE:
        bot_tz = state.bots[name].config.get("timezone") if name in state.bots else None
        return bot_tz or state.install_config.get("timezone")
    return state.bots[name].config.get("timezone") if name in state.bots else None


def _resolve_env(owner: str, entries: dict[str, Any], inputs: planning.Inputs) -> None:
    values: dict[str, str] = {}
    for key, entry in entries.items():
        try:
            values[key] = secrets_mod.resolve(entry)
        except secrets_mod.SecretUnavailable as exc:
            inputs.secret_errors[owner] = f"env {key}: {exc}"
    inputs.env_values[owner] = values
    inputs.secret_keys[owner] = {k for k, e in entries.items() if e.secret}


def _image_digest(path: str) -> tuple[str, str]:
    import hashlib

    from controller.validating import image_extension

    data = Path(path).read_bytes()
    return image_extension(data[:16]) or "png", hashlib.sha256(data).hexdigest()


def _foreign(root: Path, fleet: str) -> tuple[dict[str, str], dict[str, str]]:
    objects: dict[str, str] = {}
    install: dict[str, str] = {}
    for other in inv.all_fleets(root):
        if other == fleet:
            continue
        theirs = inv.load(root, other)
        for key in theirs.objects:
            objects.setdefault(key, other)
        for field in theirs.applied(inv.INSTALL_KEY):
            install.setdefault(field, other)
    return objects, install


@dataclass
class Planned:
    root: Path
    state: DesiredState
    inputs: planning.Inputs
    plan: planning.Plan
    files: list[str]


def make_plan(args: argparse.Namespace, *, prune: bool, adopt: bool, yes: bool = False) -> Planned:
    result = cli.load_valid(args)
    root = resolve_root(args.home)
    inputs = gather(root, result.state, prune=prune, adopt=adopt, yes=yes)
    return Planned(root, result.state, inputs, planning.plan(inputs), result.files)


def _render_plan(planned: Planned, args: argparse.Namespace, *, results: Any = None, kind: str = "plan") -> None:
    if args.output == "json":
        reporting.write(reporting.plan_json(planned.plan, home=str(planned.root), results=results, kind=kind))
        return
    color = reporting.use_color(sys.stdout, args.color)
    reporting.write(reporting.plan_text(planned.plan, home=str(planned.root), color=color))


def _plan_exit(plan: planning.Plan, detailed: bool) -> int:
    if plan.conflicts:
        return ExitCode.CONFLICT
    if plan.errors:
        return ExitCode.FAILED
    return ExitCode.CHANGES if detailed and plan.has_changes else ExitCode.OK


def cmd_plan(args: argparse.Namespace) -> int:
    planned = make_plan(args, prune=args.prune, adopt=args.adopt)
    _render_plan(planned, args)
    return _plan_exit(planned.plan, args.detailed_exitcode)


def cmd_apply(args: argparse.Namespace) -> int:
    if args.dry_run:
        planned = make_plan(args, prune=args.prune, adopt=args.adopt, yes=args.yes)
        _render_plan(planned, args, kind="dry-run")
        return _plan_exit(planned.plan, False)
    from controller import applying, locking

    result = cli.load_valid(args)  # invalid manifests stop here, before the lock or any write
    root = resolve_root(args.home)
    # A conflict visible before locking refuses here, read-only: taking the lock would already
    # create <home>/.hermes-fleet/apply.lock (and the home itself) for an apply that changes nothing.
    inputs = gather(root, result.state, prune=args.prune, adopt=args.adopt, yes=args.yes)
    early = Planned(root, result.state, inputs, planning.plan(inputs), result.files)
    if early.plan.conflicts:
        _refuse_conflicts(early, args)
    with locking.apply_lock(root, timeout=args.lock_timeout):
        inputs = gather(root, result.state, prune=args.prune, adopt=args.adopt, yes=args.yes)
        planned = Planned(root, result.state, inputs, planning.plan(inputs), result.files)
        plan = planned.plan
        if plan.conflicts:
            _refuse_conflicts(planned, args)
        text_mode = args.output != "json"
        if text_mode:
            _render_plan(planned, args)
        results = applying.apply_plan(root, plan, inputs)
        _finish_inventory(root, planned, results)
        if text_mode:
            reporting.write(reporting.apply_text(results, color=reporting.use_color(sys.stdout, args.color),
                                                 not_applied=len(plan.errors)))
        else:
            _render_plan(planned, args, results=results, kind="apply")
    if results.failed or plan.errors:
        if plan.errors and text_mode:
            for change in plan.errors:
                print(f"hermes-fleet: {change.kind}/{change.name} not applied: {change.reason}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


def _refuse_conflicts(planned: Planned, args: argparse.Namespace) -> None:
    _render_plan(planned, args, kind="apply")
    names = ", ".join(f"{c.kind}/{c.name}" for c in planned.plan.conflicts)
    raise ConflictError(f"apply refused, nothing was changed: conflict on {names}",
                        hint="see the reasons above (--adopt takes over unmanaged profiles; --yes "
                        "confirms a large prune)")


def _finish_inventory(root: Path, planned: Planned, results: Any) -> None:
    inventory = planned.inputs.inventory
    failed = bool(results.failed or planned.plan.errors)
    record = {"at": inv.now_iso(), "digest": planned.state.digest, "manifests": planned.files,
              "result": "partial" if failed else "ok", "changed": len(results.done),
              "failed": len(results.failed) + len(planned.plan.errors)}
    inventory.last_apply = record
    inventory.history.append(record)
    inv.save(root, inventory)  # always: the run itself is history, even when nothing changed


# --- status ---------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    if args.files:
        planned = make_plan(args, prune=False, adopt=False)
        fleets = [planned.state.fleet]
    else:
        planned = None
        fleets = [args.fleet] if args.fleet else inv.all_fleets(root)
    reports = [_fleet_status(root, name, planned) for name in fleets]
    if args.output == "json":
        import json

        reporting.write(json.dumps({"schemaVersion": reporting.JSON_SCHEMA_VERSION, "kind": "status",
                                    "home": str(root), "fleets": reports}, indent=2, default=str) + "\n")
    else:
        reporting.write(_status_text(root, reports, color=reporting.use_color(sys.stdout, args.color)))
    if planned is not None:
        return _plan_exit(planned.plan, False)
    return ExitCode.OK


def _fleet_status(root: Path, fleet: str, planned: Planned | None) -> dict[str, Any]:
    inventory = inv.load(root, fleet)
    objects = []
    for key in sorted(inventory.objects):
        kind, _, name = key.partition("/")
        drift = _drift_fields(root, inventory, key, name if kind == "bot" else DEFAULT_PROFILE)
        objects.append({"object": key, "drifted_fields": drift, "updated_at": inventory.objects[key].get("updated_at")})
    report: dict[str, Any] = {
        "fleet": fleet, "managed": len(inventory.owned_bots()), "last_apply": inventory.last_apply,
        "objects": objects, "drifted": sum(1 for o in objects if o["drifted_fields"]),
    }
    if planned is not None and planned.state.fleet == fleet:
        report["pending"] = {"changes_pending": planned.plan.has_changes, **planned.plan.counts()}
    return report


def _drift_fields(root: Path, inventory: inv.Inventory, key: str, name: str) -> list[str] | str:
    applied = inventory.applied(key)
    live = observe_profile(root, name, with_bot_chat="botchat" in applied)
    if not live.exists and name != DEFAULT_PROFILE:
        return "missing"
    if live.errors:
        return "unreadable: " + "; ".join(live.errors)
    drifted = []
    for field, was in applied.items():
        secret = was is not None and isinstance(was, str) and was.startswith("hmac:")
        present, value = planning.live_value(live, field)
        now = planning.comparable(field, value, secret=secret, inventory=inventory) if present else None
        if now != was:
            drifted.append(field)
    return drifted


def _status_text(root: Path, reports: list[dict[str, Any]], *, color: bool) -> str:
    p = reporting.Palette(color)
    if not reports:
        return f"No fleet manages {root} yet (no inventory under {inv.inventory_dir(root)}).\n"
    lines = []
    for r in reports:
        last = r["last_apply"] or {}
        lines.append(p.bold(f"Fleet {r['fleet']!r}") + f": {r['managed']} bot(s) managed in {root}")
        if last:
            lines.append(f"  last apply: {last.get('at')} ({last.get('result')}), manifests {str(last.get('digest'))[:19]}")
        else:
            lines.append("  last apply: never")
        for o in r["objects"]:
            drift = o["drifted_fields"]
            if drift == "missing":
                lines.append(p.red(f"  ! {o['object']}: profile folder is missing"))
            elif isinstance(drift, str):
                lines.append(p.red(f"  ! {o['object']}: {drift}"))
            elif drift:
                lines.append(p.yellow(f"  ~ {o['object']}: drift in {', '.join(drift)}"))
        lines.append(f"  drift: {r['drifted']} object(s) differ from the last apply"
                     + ("" if r["drifted"] else " (in sync)"))
        if "pending" in r:
            lines.append(f"  manifests: {'changes pending' if r['pending']['changes_pending'] else 'no changes pending'}")
    return "\n".join(lines) + "\n"


# --- restore --------------------------------------------------------------------------------------


def cmd_restore(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    if not args.backup:
        backups = profiles.list_backups(root)
        if not backups:
            print(f"No backups under {profiles.backups_dir(root)}.")
        for b in backups:
            print(f"{b.path.name}\tprofile {b.name}\tfleet {b.fleet}\t{b.created_at}")
        return ExitCode.OK
    restored = profiles.restore_profile(root, args.backup)
    print(f"Restored {restored}. It is still marked as owned by its fleet: keep it in the manifests, "
          "or the next apply lists it as an orphan.")
    return ExitCode.OK
