"""`history` (list the applies, or show one) and `rollback` (apply an earlier entry's manifests)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from controller.adapters.home import resolve_root
from controller.core.selection import Selection
from controller.core.types import Action, Options, Reason
from controller.engine import history, reconciling, records
from controller.engine.reconciling import Planned
from controller.errors import ConflictError, ExitCode, ManifestError, SecretUnavailable, UsageError
from controller.manifests import desired, reading
from controller.manifests.desired import DesiredState
from controller.verbs import common, reporting, suspend
from controller.verbs.plan import plan_exit, render_plan, report_kept, view


def _fleet(args: argparse.Namespace) -> tuple[Any, str]:
    common.check_fleet(args.fleet)
    root = resolve_root(args.home)
    return root, history.pick_fleet(root, args.fleet)


# --- history ----------------------------------------------------------------------------------


def cmd_history(args: argparse.Namespace) -> int:
    root, fleet = _fleet(args)
    if args.action == "show":
        if args.number is None:
            raise UsageError("history show needs an entry number", hint="e.g. hermes-fleet history show 3")
        found = history.entry(root, fleet, args.number)
        if args.output == "json":
            found = {**found, "desired": _with_selection(found.get("desired") or {})}
            _json(args, "history", home=str(root), fleet=fleet, entry=found)
        else:
            reporting.write(show_text(found))
        return ExitCode.OK
    entries = history.entries(root, fleet, shrink=_brief)
    if args.output == "json":
        _json(args, "history", home=str(root), fleet=fleet, entries=entries)
        return ExitCode.OK
    reporting.write(list_text(fleet, entries))
    for e in entries:
        if "unreadable" in e:
            print(f"hermes-fleet: warning: {e['unreadable']}", file=sys.stderr)
    return ExitCode.OK


def _brief(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry without its documents (`history show N -o json` has them)."""
    if "unreadable" in entry:
        return entry
    desired_part = {k: v for k, v in (entry.get("desired") or {}).items() if k != "documents"}
    return {**{k: v for k, v in entry.items() if k != "desired"}, "desired": {**_with_selection(desired_part), **summary(entry)}}


def _with_selection(desired_part: dict[str, Any]) -> dict[str, Any]:
    """`selection` always present in JSON: an entry written before it was recorded was a whole-fleet run (null)."""
    return {**desired_part, "selection": desired_part.get("selection")}


def selection_cell(entry: dict[str, Any]) -> str:
    return history.selection_text(entry) or "all"


def source_text(entry: dict[str, Any]) -> str:
    source = entry.get("source") or {}
    parts = []
    if source.get("rollback_of") is not None:
        parts.append(f"rollback to #{source['rollback_of']}")
    if source.get("revision"):
        parts.append(f"git {str(source['revision'])[:12]}" + ("+dirty" if source.get("dirty") else ""))
    elif source.get("digest"):
        parts.append(f"digest {str(source['digest']).removeprefix('sha256:')[:12]}")
    return ", ".join(parts) or "-"


def _counts(entry: dict[str, Any]) -> dict[str, int]:
    counts = entry.get("counts") or {}
    return {k: int(counts.get(k, 0)) for k in ("created", "changed", "deleted", "failed")}


def list_text(fleet: str, entries: list[dict[str, Any]]) -> str:
    if not entries:
        return f"No apply history for fleet {fleet!r} yet.\n"
    header = ("#", "WHEN", "WHO", "COMMAND", "SELECTION", "SOURCE", "CREATED", "CHANGED", "DELETED", "FAILED", "EXIT")
    rows = [header]
    for e in entries:
        if "unreadable" in e:
            rows.append((str(e["seq"]), "(unreadable)", "", "", "", "", "", "", "", "", ""))
            continue
        c = _counts(e)
        rows.append(
            (
                str(e.get("seq")),
                str(e.get("at", "")),
                str(e.get("who", "")),
                str(e.get("command", "")),
                selection_cell(e),
                source_text(e),
                str(c["created"]),
                str(c["changed"]),
                str(c["deleted"]),
                str(c["failed"]),
                str(e.get("exit", "")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"


def summary(entry: dict[str, Any]) -> dict[str, list[str]]:
    """The objects an entry's manifests declare, by kind (bots, rooms, sections, peers, routines)."""
    out: dict[str, list[str]] = {"bots": [], "routines": [], "rooms": [], "sections": [], "peers": []}
    for doc in (entry.get("desired") or {}).get("documents") or []:
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, dict):
            continue
        kind = data.get("kind")
        spec: dict[str, Any] = data["spec"] if isinstance(data.get("spec"), dict) else {}
        name = (data.get("metadata") or {}).get("name") if isinstance(data.get("metadata"), dict) else None
        if kind == "Fleet":
            for plural in ("rooms", "sections", "peers"):
                out[plural] += [str(x.get("name")) for x in spec.get(plural) or [] if isinstance(x, dict)]
            for bot in spec.get("bots") or []:
                if isinstance(bot, dict):
                    out["bots"].append(str(bot.get("name")))
                    out["routines"] += [
                        f"{bot.get('name')}/{r.get('name')}" for r in bot.get("routines") or [] if isinstance(r, dict)
                    ]
        elif kind in ("Bot", "Room", "Section", "Peer") and name:
            out[kind.lower() + "s"].append(str(name))
            if kind == "Bot":  # a Bot document's own routines (the layout `init` writes)
                out["routines"] += [f"{name}/{r.get('name')}" for r in spec.get("routines") or [] if isinstance(r, dict)]
        elif kind == "Routine" and name:
            out["routines"].append(f"{spec.get('bot')}/{name}")
    return {k: sorted(v) for k, v in out.items()}


def show_text(entry: dict[str, Any]) -> str:
    c = _counts(entry)
    source = entry.get("source") or {}
    options = [f"--{k}" for k, v in (entry.get("options") or {}).items() if v and k != "rooms"]
    if (entry.get("options") or {}).get("rooms") is False:
        options.append("--no-rooms")
    host = (entry.get("desired") or {}).get("host")
    lines = [
        f"History entry {entry['seq']} of fleet {entry.get('fleet')!r}",
        f"  when:      {entry.get('at')} by {entry.get('who')} ({entry.get('command')})",
        f"  source:    {source_text(entry)}",
        f"  digest:    {source.get('digest')}",
        f"  manifests: {', '.join(map(str, source.get('files') or [])) or '-'}",
        f"  result:    exit {entry.get('exit')}: {c['created']} created, {c['changed']} changed, "
        f"{c['deleted']} deleted, {c['failed']} failed",
        f"  options:   {' '.join(options) or '(none)'}" + (f"; host {host}" if host else ""),
        f"  selection: {_selection_line(entry)}",
    ]
    confirmed = entry.get("confirmed")
    if isinstance(confirmed, dict):
        lines.append(
            f"  confirmed: {confirmed.get('at')} by {confirmed.get('who')} ({confirmed.get('command')}): "
            f"{confirmed.get('times')} later run(s) found these manifests applied and changed nothing"
        )
    for kind, names in summary(entry).items():
        if names:
            lines.append(f"  {kind + ':':<10} {', '.join(names)}")
    if entry.get("replaced"):
        lines.append(f"  replaced:  hand-edited files it overwrote are kept in {entry['replaced']}")
    lines.append(f"Roll back to it: hermes-fleet rollback --to {entry['seq']} (add --dry-run to see the plan first)")
    return "\n".join(lines) + "\n"


def _selection_line(entry: dict[str, Any]) -> str:
    chosen = history.selection_text(entry)
    if not chosen:
        return "none (the whole fleet was applied)"
    return f"{chosen} (only these bots were applied; a rollback to this entry applies them alone)"


def _json(args: argparse.Namespace, kind: str, **fields: object) -> None:
    payload = {"schemaVersion": reporting.JSON_SCHEMA_VERSION, "kind": kind, **fields}
    reporting.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    common.wrote_report(args)


# --- rollback ---------------------------------------------------------------------------------


def _unresolved(planned: Planned, seq: int) -> None:
    """A secret reference that does not resolve now stops the rollback before any write."""
    missing = [c for c in planned.plan.errors if c.code is Reason.SECRET_UNAVAILABLE]
    if missing:
        for change in missing:
            print(f"hermes-fleet: {change.key}: {change.reason}", file=sys.stderr)
        raise SecretUnavailable(
            f"rollback to history entry {seq} refused, nothing was changed: {len(missing)} object(s) have a secret "
            "reference that does not resolve on this machine now",
            hint="make each reference resolvable (export the variable, put the file back), then run rollback again",
        )


def _selection(root: Path, state: DesiredState, chosen: Selection, seq: int, text_mode: bool) -> Selection | None:
    """The selection the entry's run applied, which the rollback applies too (the entry's documents
    are the whole fleet's, but only these bots were converged to them); None when nothing of it is
    left to roll back. A bot it named that is neither in its manifests nor in this home now (the
    run pruned it) is already as the run left it: it is left out, not refused as a typo."""
    if not chosen:
        return chosen
    known = {*state.bots, *records.load(root, state.fleet).owned_bots()}
    gone = sorted(chosen.bots - known)
    narrowed = Selection(chosen.bots - set(gone), chosen.labels)
    out = sys.stdout if text_mode else sys.stderr  # -o json: stdout is the document alone
    print(
        f"Entry {seq} applied only {chosen.describe()}: the rollback applies the same selection "
        "(the other bots are left as they are).",
        file=out,
    )
    if gone:
        print(f"Bot(s) {', '.join(gone)}: in neither the entry's manifests nor this home, as entry {seq} left them.", file=out)
    if gone and not narrowed.bots:
        print("Nothing left to roll back.", file=out)
        return None
    return narrowed


def cmd_rollback(args: argparse.Namespace) -> int:
    root, fleet = _fleet(args)
    common.check_host(args.host)
    wanted = args.to  # else chosen by each entry's record; only the chosen entry is read whole
    if wanted is None:
        wanted = int(history.rollback_target(history.entries(root, fleet, shrink=history.without_documents))["seq"])
    target = history.entry(root, fleet, wanted)
    seq = int(target["seq"])
    text_mode = args.output != "json"
    with history.replay(target) as (result, snap):
        if result.errors or result.state is None:
            raise ManifestError(result.diagnostics)
        if snap.host is None:  # else the entry names the slice to go back to
            common.check_rehost(args, result.state)
        state = desired.for_host(result.state, reading.selected_host(args.host or snap.host, result.state))
        snap.host = state.host  # the slice this run applies (--host may differ from the entry's)
        if text_mode:
            print(f"Rolling back fleet {fleet!r} to history entry {seq} ({target.get('at')}, {source_text(target)}).")
        chosen = _selection(root, state, snap.selection, seq, text_mode)
        if chosen is None:
            return ExitCode.OK
        options = Options(prune=not args.no_prune, adopt=False, yes=args.yes, rooms=not args.no_rooms, rehost=args.rehost)
        gateway = common.gateway_options(args)
        planned = reconciling.plan_home(
            root, state, result.files, options=options, gateway=gateway, hermes_version=args.hermes_version, selection=chosen
        )
        _unresolved(planned, seq)
        # A deletion the prune guard holds back is still one: rollback asks --yes for any of them.
        guarded = [c for c in planned.plan.conflicts if c.code is Reason.PRUNE_GUARD]
        deletions = [*planned.plan.by_action(Action.DELETE), *guarded]
        suspend.refuse_if_suspended(root, force=args.force, verb="rollback", dry_run=args.dry_run)
        if args.dry_run and not (deletions and not args.yes):
            render_plan(planned, args, kind="dry-run")
            return plan_exit(planned.plan, False)
        if deletions and not args.yes:
            render_plan(planned, args, kind="dry-run" if args.dry_run else "rollback")
            names = ", ".join(c.key for c in deletions)
            refused = "this rollback would be refused" if args.dry_run else "rollback refused, nothing was changed"
            raise ConflictError(
                f"{refused}: going back to entry {seq} deletes {names}",
                hint="re-run with --yes (deleted bots are moved to backups, see `hermes-fleet restore`), "
                "or with --no-prune to keep them",
            )

        def show(again: Planned) -> None:
            _unresolved(again, seq)  # under the lock, right before the first write
            if text_mode:
                render_plan(again, args, group=True)

        planned, results = reconciling.apply_once(
            reconciling.ApplyRequest(
                root=root,
                state=state,
                files=result.files,
                options=options,
                lock_timeout=args.lock_timeout,
                before_apply=show,
                on_conflict=lambda p: render_plan(p, args, kind="rollback"),
                gateway=gateway,
                hermes_version=args.hermes_version,
                snapshot=snap,
                selection=chosen,
            )
        )
    plan = planned.plan
    if text_mode:
        reporting.write(
            reporting.apply_text(
                results,
                color=reporting.use_color(sys.stdout, args.color),
                not_applied=len(plan.errors),
                view=view(plan, args, group=True),
            )
        )
        if results.history_entry is not None:
            print(f"Recorded as history entry {results.history_entry}.")
    else:
        render_plan(planned, args, results=results, kind="rollback")
    report_kept(results)
    if results.failed or plan.errors:
        return ExitCode.CONFLICT if any(o.conflict for o in results.failed) else ExitCode.FAILED
    return ExitCode.OK
