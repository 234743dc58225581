"""`status`: what each fleet owns in this home, its last apply, and drift (the same rule as `plan`).

With selectors (`--bot`, `-l`: docs/cli.md#selectors) it shows the selected bots alone, as `plan`
plans them: their objects, drift, hand edits, health and pending changes; the install-wide
settings and rooms only without a selector."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.adapters import inventory as inventory_file
from controller.adapters import locking, suspension
from controller.adapters.home import HomeLayout, resolve_root
from controller.codes import WatchResult as R
from controller.core import drift, rooms
from controller.core import selection as selecting
from controller.core.inventory import Inventory, routine_parts, split_key
from controller.core.selection import Scope, Selection
from controller.core.types import GatewayView, LiveProfile
from controller.engine import handedits, health, observing, records
from controller.engine.reconciling import Planned
from controller.engine.watchstatus import read_status
from controller.errors import ControllerError, ExitCode, UsageError
from controller.hermes import DEFAULT_PROFILE
from controller.verbs import common, reporting
from controller.verbs.plan import make_plan, observation_cache, plan_exit


def cmd_status(args: argparse.Namespace) -> int:
    root = resolve_root(args.home)
    chosen = common.selection(args)
    planned: Planned | None = None
    if args.files:
        planned = make_plan(args, prune=False, adopt=False)  # narrowed to the selection, its --bot names checked
        fleets = [planned.state.fleet]
        scope = chosen.scope(planned.state)
    else:
        common.check_fleet(args.fleet)
        fleets, scope = selected_fleets(root, [args.fleet] if args.fleet else inventory_file.all_fleets(root), chosen)
    try:
        reports = [fleet_status(root, name, planned, args, scope=scope) for name in fleets]
    finally:
        common.gateway_options(args).release()
    held = suspension.read(root)
    watch = read_status(root)
    if watch is not None:
        watch["running"] = locking.is_held(HomeLayout(root).state.watch_lock)
        if scope is not None:  # the reconciler's drift, of the selected bots
            watch["drift"] = [key for key in watch.get("drift") or [] if selecting.key_in_scope(key, scope)]
    if args.output == "json":
        reporting.write(
            json.dumps(
                {
                    "schemaVersion": reporting.JSON_SCHEMA_VERSION,
                    "kind": "status",
                    "home": str(root),
                    "selection": chosen.describe() or None,
                    "fleets": reports,
                    "suspended": held.to_json() if held is not None else None,
                    "reconciler": watch,
                },
                indent=2,
                default=str,
            )
            + "\n"
        )
        common.wrote_report(args)
    else:
        color = reporting.use_color(sys.stdout, args.color)
        reporting.write(
            _selection_text(chosen, reports)
            + _status_text(root, reports, color=color)
            + _suspended_text(held, color=color)
            + _watch_text(watch, color=color)
        )
    if planned is not None:
        return plan_exit(planned.plan, False)
    return ExitCode.OK


def selected_fleets(root: Path, fleets: list[str], chosen: Selection) -> tuple[list[str], Scope]:
    """Without -f: the fleets owning a selected bot, and the scope (the `--bot` names; each must be
    a bot one of these fleets owns here). Labels are in the manifests: `-l` needs -f."""
    if not chosen:
        return fleets, None
    if chosen.labels:
        raise UsageError(
            f"-l {','.join(f'{k}={v}' for k, v in chosen.labels)}: labels are in the manifests, not in the home",
            hint="add -f PATH (the manifests), or select by name with --bot NAME",
        )
    owners = {fleet: bots_of(records.load(root, fleet)) for fleet in fleets}
    known = {bot for bots in owners.values() for bot in bots}
    owner = f"fleet {fleets[0]!r}" if len(fleets) == 1 else "any fleet of this home"
    where = "in this home's inventory (without -f, status knows the bots a fleet owns here)"
    selecting.check_known(chosen, known, owner=owner, where=where)
    return [fleet for fleet in fleets if owners[fleet] & chosen.bots], chosen.bots


def bots_of(inventory: Inventory) -> set[str]:
    """The bots a fleet owns here: its bots and the bots of its routines."""
    return {bot for key in inventory.objects if (bot := selecting.owner_of(key)) is not None}


def fleet_status(
    root: Path, fleet: str, planned: Planned | None, args: argparse.Namespace | None = None, *, scope: Scope = None
) -> dict[str, Any]:
    """One fleet's report; `scope`: the selected bots alone (no install-wide settings, no rooms)."""
    inventory = records.load(root, fleet)
    # Each profile observed, each cron store read, once; unchanged files from the observation cache.
    reads = observing.HomeReads(root, observation_cache(args) if args is not None else None)
    hand = handedits.Finder(root, inventory)
    objects = []
    view: GatewayView | None = None
    keys = sorted(key for key in inventory.objects if selecting.key_in_scope(key, scope))
    if any(split_key(key)[0] == "room" for key in keys):  # one read-only look at the gateway, shared by every fleet
        mine = planned is not None and planned.state.fleet == fleet
        view = (planned.inputs.observed.rooms if mine and planned is not None else None) or _rooms_view(root, args)
    for key in keys:
        objects.append(
            {
                "object": key,
                "drifted_fields": object_drift(inventory, key, view, reads, seen=hand.look),
                "updated_at": inventory.objects[key].get("updated_at"),
            }
        )
    report: dict[str, Any] = {
        "fleet": fleet,
        "managed": len([bot for bot in inventory.owned_bots() if scope is None or bot in scope]),
        "last_apply": inventory.last_apply,
        "objects": objects,
        # A string is why the fields are unknown (missing, unreadable, gateway unreachable): not drift.
        "drifted": sum(1 for o in objects if isinstance(o["drifted_fields"], list) and o["drifted_fields"]),
        "unknown": sum(1 for o in objects if isinstance(o["drifted_fields"], str)),
        # Keys of managed files the fleet does not manage, changed since the apply that last wrote
        # the file (engine/handedits.py): information, never drift.
        "hand_edits": hand.report(),
    }
    if hand.problem:
        report["hand_edits_unknown"] = hand.problem
    if scope is not None:
        report["selected"] = sorted(bots_of(inventory) & scope)
    if planned is not None and planned.state.fleet == fleet:
        report["pending"] = {"changes_pending": planned.plan.has_changes, **planned.plan.counts()}
    report["health"] = health.check(root, fleet, inventory=inventory, reads=reads, only=scope).to_json()
    return report


def _rooms_view(root: Path, args: argparse.Namespace | None) -> GatewayView:
    cached = getattr(args, "status_rooms_view", None) if args is not None else None
    if isinstance(cached, GatewayView):
        return cached
    view = observing.observe_rooms(root, common.gateway_options(args))
    if args is not None:
        args.status_rooms_view = view
    return view


def object_drift(
    inventory: Inventory,
    key: str,
    view: GatewayView | None,
    reads: observing.HomeReads,
    *,
    seen: Callable[[str, LiveProfile], None] | None = None,
) -> list[str] | str:
    """The drifted fields of one owned object (core.drift, as `plan` uses it), or why they are unknown.
    `seen(profile, live)` is given each profile read (for its hand edits)."""
    kind, name = split_key(key)
    entry = inventory.objects.get(key, {})
    applied = entry.get("applied", {})
    if kind == "room":
        if view is None or view.error:
            return view.error if view else "pending: gateway not consulted"
        room = view.rooms.get(str(entry.get("room_id")))
        if room is None or room.get("disbanded_at"):
            return "missing (disbanded or gone from the gateway)"
        return drift.room_drift(applied, rooms.live_fields(room))
    if kind == "routine":
        bot = routine_parts(name)[0]
        try:
            jobs = reads.jobs(bot)
        except ControllerError as exc:
            return f"unreadable: {exc}"
        job = next((j for j in jobs if str(j.get("id")) == str(entry.get("job_id"))), None)
        if job is None:  # a one-shot that ran is removed by Hermes: done, not drift
            return [] if str(applied.get("schedule", "")).startswith("once:") else "cron job is missing"
        return drift.routine_drift(applied, job)
    profile = name if kind == "bot" else DEFAULT_PROFILE
    try:
        live = reads.profile(profile, with_bot_chat="botchat" in applied)
    except ControllerError as exc:  # e.g. a profile folder that became a symlink: reported, not a crash
        return f"unreadable: {exc}"
    if not live.exists and profile != DEFAULT_PROFILE:
        return "missing"
    if live.errors:
        return "unreadable: " + "; ".join(live.errors)
    if seen is not None:
        seen(profile, live)
    return drift.profile_drift(applied, live, inventory)


def _status_text(root: Path, reports: list[dict[str, Any]], *, color: bool) -> str:
    p = reporting.Palette(color)
    if not reports:
        return f"No fleet manages {root} yet (no inventory under {inventory_file.inventory_dir(root)}).\n"
    lines = []
    for r in reports:
        last = r["last_apply"] or {}
        which = "selected bot(s)" if "selected" in r else "bot(s)"
        lines.append(p.bold(f"Fleet {r['fleet']!r}") + f": {r['managed']} {which} managed in {root}")
        if last:
            of = f", of {last['selection']}" if last.get("selection") else ""
            lines.append(f"  last apply: {last.get('at')} ({last.get('result')}{of}), manifests {str(last.get('digest'))[:19]}")
        else:
            lines.append("  last apply: never")
        for o in r["objects"]:
            drifted = o["drifted_fields"]
            if drifted == "missing":
                lines.append(p.red(f"  ! {o['object']}: profile folder is missing"))
            elif isinstance(drifted, str):
                lines.append(p.red(f"  ! {o['object']}: {drifted}"))
            elif drifted:
                lines.append(p.yellow(f"  ~ {o['object']}: drift in {', '.join(drifted)}"))
        unknown = f"; {r['unknown']} object(s) could not be checked (see above)" if r.get("unknown") else ""
        in_sync = "" if r["drifted"] or unknown else " (in sync)"
        lines.append(f"  drift: {r['drifted']} object(s) differ from the last apply{in_sync}{unknown}")
        lines += _hand_edits_text(r, p)
        if "pending" in r:
            lines.append(f"  manifests: {'changes pending' if r['pending']['changes_pending'] else 'no changes pending'}")
        if "health" in r:
            lines += _health_text(r["health"], p)
    return "\n".join(lines) + "\n"


def _selection_text(chosen: Selection, reports: list[dict[str, Any]]) -> str:
    if not chosen:
        return ""
    if not any(r.get("selected") for r in reports):
        return f"Selection {chosen.describe()}: no bot it selects is managed in this home.\n"
    return (
        f"Selection {chosen.describe()}: only these bots are shown; the install-wide settings and rooms are left out "
        "(a status without --bot or -l shows them).\n"
    )


def _hand_edits_text(r: dict[str, Any], p: reporting.Palette) -> list[str]:
    """Keys the fleet does not manage, edited since the apply that last wrote their file: never drift."""
    edits = r.get("hand_edits") or []
    lines = []
    if edits:
        lines.append(f"  edited by hand: {len(edits)} file(s), in keys this fleet does not manage (not drift, never corrected):")
        lines += [p.dim(f"    {handedits.text_line(e)}") for e in edits[:SHOWN_EDITED_FILES]]
        if len(edits) > SHOWN_EDITED_FILES:
            lines.append(p.dim(f"    ... and {len(edits) - SHOWN_EDITED_FILES:,} more file(s) (-o json lists all)"))
    if r.get("hand_edits_unknown"):
        lines.append(
            p.yellow(
                f"  edited by hand: unknown, the baseline is unusable ({r['hand_edits_unknown']}); "
                "the next apply records it afresh"
            )
        )
    return lines


SHOWN_EDITED_FILES = 20


def _health_text(h: dict[str, Any], p: reporting.Palette) -> list[str]:
    """Runtime health (engine.health): one summary line, then one line per problem."""
    bots = h["bots"]
    routines = [r for b in bots for r in b["routines"] if r["found"]]
    up = sum(1 for b in bots if b["gateway"]["running"])
    ok = sum(1 for r in routines if r["last_status"] == "ok")
    summary = f"{len(bots)} bot(s), gateway running for {up}; {len(routines)} routine(s), {ok} last ran ok"
    findings = h["findings"]
    if not findings:
        return [f"  health: {p.green('ok')} ({summary})"]
    errors = sum(1 for f in findings if f["severity"] == "error")
    lines = [
        f"  health: {p.red(f'{len(findings)} problem(s)') if errors else p.yellow(f'{len(findings)} warning(s)')} ({summary})"
    ]
    for f in findings:
        paint = p.red if f["severity"] == "error" else p.yellow
        lines.append(paint(f"  ! {f['object']}: {f['code']}: {f['message']}"))
    return lines


def _suspended_text(held: suspension.Suspension | None, *, color: bool) -> str:
    if held is None:
        return ""
    p = reporting.Palette(color)
    return p.yellow("S" + held.describe()[1:]) + " (watch changes nothing; apply needs --force; `hermes-fleet resume`)\n"


def _watch_text(watch: dict[str, Any] | None, *, color: bool) -> str:
    if not watch:
        return ""
    p = reporting.Palette(color)
    result = str(watch.get("last_result"))
    paint = p.green if result in (R.APPLIED, R.IN_SYNC) else (p.yellow if result in (R.DRIFT, R.BUSY) else p.red)
    running = watch.get("running")
    how = f"{watch.get('mode')}, every {watch.get('interval')}s"
    how += f", selection {watch['selection']}" if watch.get("selection") else ""  # it converges only these bots
    if running is False:  # its status file outlives it: say so, not the PID it had
        head = p.bold("Reconciler") + p.yellow(f" not running since {watch.get('updated_at')}") + f" (was {how})"
    else:
        head = p.bold("Reconciler") + f" (pid {watch.get('pid')}, {how})"
    head += f": source {watch.get('source')}"
    next_run = watch.get("next_run_at") if running is not False else None
    lines = [
        head,
        "  last run: "
        + paint(result)
        + f" at revision {watch.get('last_revision')}"
        + (f" — {watch.get('message')}" if watch.get("message") else ""),
        f"  last good revision: {watch.get('last_good_revision') or 'none'}; next run: {next_run or 'stopped'}",
    ]
    if watch.get("drift"):
        lines.append(p.yellow(f"  drift: {', '.join(watch['drift'])}"))
    runs = watch.get("runs") or []
    if runs:
        lines.append("  recent runs: " + ", ".join(f"{r['at'][11:19]} {r['result']}" for r in runs[-5:]))
    return "\n".join(lines) + "\n"
