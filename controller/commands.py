"""The verbs that touch a Hermes home: plan (diff), apply, status, restore.

Each verb validates its manifests first (cli.load_valid), then hands the desired state to
reconciling.py, and renders the result. Imported lazily by cli.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from controller import cli, planning, reconciling, reporting
from controller import inventory as inv
from controller.adapters import profiles
from controller.adapters.home import resolve_root
from controller.errors import ExitCode
from controller.naming import DEFAULT_PROFILE
from controller.observed import observe_profile
from controller.reconciling import Planned


def make_plan(args: argparse.Namespace, *, prune: bool, adopt: bool, yes: bool = False) -> Planned:
    result = cli.load_valid(args)
    return reconciling.plan_home(resolve_root(args.home), result.state, result.files, prune=prune, adopt=adopt,
                                 yes=yes, gateway=gateway_options(args))


def gateway_options(args: argparse.Namespace) -> Any:
    from controller.adapters.gateway import GatewayOptions

    timeout = getattr(args, "gateway_timeout", None) or 10.0
    return GatewayOptions(getattr(args, "gateway", None), getattr(args, "gateway_token_env", None), timeout)


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
    result = cli.load_valid(args)  # invalid manifests stop here, before the lock or any write
    text_mode = args.output != "json"

    def show(planned: Planned) -> None:
        if text_mode:
            _render_plan(planned, args)

    planned, results = reconciling.apply_once(
        resolve_root(args.home), result.state, result.files, prune=args.prune, adopt=args.adopt, yes=args.yes,
        lock_timeout=args.lock_timeout, before_apply=show,
        on_conflict=lambda p: _render_plan(p, args, kind="apply"), gateway=gateway_options(args))
    plan = planned.plan
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


# --- status ---------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    if args.files:
        planned = make_plan(args, prune=False, adopt=False)
        fleets = [planned.state.fleet]
    else:
        planned = None
        fleets = [args.fleet] if args.fleet else inv.all_fleets(root)
    reports = [_fleet_status(root, name, planned, args) for name in fleets]
    from controller.watching import read_status

    watch = read_status(root)
    if args.output == "json":
        import json

        reporting.write(json.dumps({"schemaVersion": reporting.JSON_SCHEMA_VERSION, "kind": "status",
                                    "home": str(root), "fleets": reports, "reconciler": watch},
                                   indent=2, default=str) + "\n")
    else:
        color = reporting.use_color(sys.stdout, args.color)
        reporting.write(_status_text(root, reports, color=color) + _watch_text(watch, color=color))
    if planned is not None:
        return _plan_exit(planned.plan, False)
    return ExitCode.OK


def _fleet_status(root: Path, fleet: str, planned: Planned | None, args: Any = None) -> dict[str, Any]:
    from controller import rooms

    inventory = inv.load(root, fleet)
    objects = []
    room_live = None
    if any(k.startswith("room/") for k in inventory.objects):  # one read-only look at the gateway
        room_live = planned.inputs.rooms if planned is not None and planned.state.fleet == fleet else None
        room_live = room_live or rooms.observe(root, gateway_options(args) if args is not None else None)
    for key in sorted(inventory.objects):
        kind, _, name = key.partition("/")
        if kind == "room":
            drift = rooms.status_drift(inventory.objects[key], room_live)
        elif kind == "routine":
            drift = _routine_drift(root, inventory, key)
        else:
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


def _routine_drift(root: Path, inventory: inv.Inventory, key: str) -> list[str] | str:
    """A routine's managed job fields that differ from the last apply (its job in the bot's cron store)."""
    from controller import routines
    from controller.adapters import cronstore
    from controller.adapters.home import profile_dir
    from controller.errors import ControllerError

    entry = inventory.objects.get(key, {})
    try:
        jobs = cronstore.read_jobs(profile_dir(root, key.split("/")[1])) or []
    except ControllerError as exc:
        return f"unreadable: {exc}"
    job = next((j for j in jobs if str(j.get("id")) == str(entry.get("job_id"))), None)
    if job is None:  # a one-shot that ran is removed by Hermes: done, not drift
        return [] if str(entry.get("applied", {}).get("schedule", "")).startswith("once:") else "cron job is missing"
    live = routines.live_fields(job)
    return [f for f, was in entry.get("applied", {}).items() if not routines.same(f, live.get(f), was)]


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


def _watch_text(watch: dict[str, Any] | None, *, color: bool) -> str:
    if not watch:
        return ""
    p = reporting.Palette(color)
    result = str(watch.get("last_result"))
    paint = p.green if result in ("applied", "in-sync") else (p.yellow if result in ("drift", "busy") else p.red)
    lines = [p.bold("Reconciler") + f" (pid {watch.get('pid')}, {watch.get('mode')}, every {watch.get('interval')}s): "
             f"source {watch.get('source')}",
             "  last run: " + paint(result) + f" at revision {str(watch.get('last_revision'))[:16]}"
             + (f" — {watch.get('message')}" if watch.get("message") else ""),
             f"  last good revision: {str(watch.get('last_good_revision'))[:16]}; "
             f"next run: {watch.get('next_run_at') or 'stopped'}"]
    if watch.get("drift"):
        lines.append(p.yellow(f"  drift: {', '.join(watch['drift'])}"))
    runs = watch.get("runs") or []
    if runs:
        lines.append("  recent runs: " + ", ".join(f"{r['at'][11:19]} {r['result']}" for r in runs[-5:]))
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
