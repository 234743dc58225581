"""`plan` (what would change, including drift) and `apply` (converge the home)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from controller.adapters import inputtrace, obscache, settled
from controller.adapters.home import HomeLayout, resolve_root
from controller.core import insights as plan_insights
from controller.core.types import Action, ObjectChange, Plan
from controller.engine import history, reconciling
from controller.engine.applying import ApplyResult
from controller.engine.reconciling import Planned
from controller.errors import ConflictError, ControllerError, ExitCode, UsageError
from controller.manifests import parallel, reading
from controller.manifests.desired import DesiredState
from controller.redact import MaskedStream
from controller.verbs import common, fastplan, reporting, suspend
from controller.verbs.progress import ProgressLine

if TYPE_CHECKING:  # apply --notify only: the webhook client and its threads (docs/performance.md#start-up)
    from controller.adapters import webhooks

NOTIFY_TIMEOUT = 10.0  # apply --notify: how long the deliveries may take after the apply


def make_plan(args: argparse.Namespace, **overrides: bool) -> Planned:
    result = common.load_valid(args)
    assert result.state is not None
    gateway = common.gateway_options(args)
    try:
        return reconciling.plan_home(
            resolve_root(args.home),
            result.state,
            result.files,
            options=common.options(args, **overrides),
            gateway=gateway,
            hermes_version=getattr(args, "hermes_version", None),
            selection=common.selection(args),
            cache=observation_cache(args),
        )
    finally:
        gateway.release()


def observation_cache(args: argparse.Namespace) -> obscache.ObservationCache | None:
    """The home's observation cache; None with --no-cache (every file read in full)."""
    if not obscache.wanted(not getattr(args, "no_cache", False)):
        return None
    return obscache.ObservationCache.load(resolve_root(args.home))


def view(plan: Plan, args: argparse.Namespace, *, group: bool = False) -> str:
    """How much of the plan a text report shows (-q, --detail, else by its size; docs/cli.md#plan-views)."""
    return reporting.plan_view(plan, detail=getattr(args, "detail", False), quiet=getattr(args, "quiet", False), group=group)


def render_plan(
    planned: Planned,
    args: argparse.Namespace,
    *,
    results: ApplyResult | None = None,
    kind: str = "plan",
    group: bool = False,
    found: plan_insights.Insights | None = None,
) -> None:
    found = plan_insights.insights(planned.inputs, planned.plan) if found is None else found
    if args.output == "json":
        reporting.write(reporting.plan_json(planned.plan, home=str(planned.root), results=results, kind=kind, insights=found))
        common.wrote_report(args)
        return
    color = reporting.use_color(sys.stdout, args.color)
    shown = view(planned.plan, args, group=group)
    reporting.write_lines(reporting.plan_lines(planned.plan, home=str(planned.root), color=color, view=shown))
    reporting.write(reporting.insights_text(found, color=color, view=shown))


def plan_exit(plan: Plan, detailed: bool) -> int:
    if plan.conflicts:
        return ExitCode.CONFLICT
    if plan.errors:
        return ExitCode.FAILED
    return ExitCode.CHANGES if detailed and plan.has_changes else ExitCode.OK


def cmd_plan(args: argparse.Namespace) -> int:
    planned = make_plan(args, yes=False)
    if getattr(args, "out", None):
        from controller.verbs import saved_plan

        host = reading.selected_host(getattr(args, "host", None), planned.state)
        saved_plan.save(args.out, planned, host=host, options=common.options(args, yes=False), hermes_version=args.hermes_version)
    render_plan(planned, args)
    suspend.refuse_if_suspended(planned.root, force=False, verb="apply", dry_run=True)  # a note only
    code = plan_exit(planned.plan, args.detailed_exitcode)
    if getattr(args, "deny_widening", False) and code in (ExitCode.OK, ExitCode.CHANGES):
        widening = plan_insights.insights(planned.inputs, planned.plan).widening
        if widening:
            for line in denials(widening, detail=bool(getattr(args, "detail", False))):
                print(f"hermes-fleet: widening denied: {line}", file=sys.stderr)
            return ExitCode.DENIED
    return code


KINDS_SHOWN = 10  # kinds of widening named by --deny-widening (--detail: every change)
BOTS_SHOWN = 3  # bots named per kind


def denials(widening: list[plan_insights.CapabilityChange], *, detail: bool) -> list[str]:
    """One line per kind of widening, with its bots (the first few and a count); `detail`: one per change."""
    if detail:
        return [change.describe() for change in widening]
    groups = plan_insights.by_kind(widening)
    lines = []
    for kind, bots in groups[:KINDS_SHOWN]:
        if len(bots) == 1:
            lines.append(f"bot/{bots[0]} {kind}")
            continue
        more = f" and {len(bots) - BOTS_SHOWN:,} more" if len(bots) > BOTS_SHOWN else ""
        lines.append(f"{kind}, for {len(bots):,} bots: {', '.join(bots[:BOTS_SHOWN])}{more}")
    if len(groups) > KINDS_SHOWN:
        rest = groups[KINDS_SHOWN:]
        count = len({bot for _, names in rest for bot in names})
        lines.append(
            f"... and {len(rest):,} more kind(s) of widening, on {count:,} bot(s) (--detail lists every change; "
            "-o json has them all)"
        )
    return lines


def notify(state: DesiredState, events: list[webhooks.Event], root: Path) -> None:
    """`apply --notify`: post, and wait (bounded) for the deliveries; a failure to notify never fails the apply.
    Events not delivered stay in the home's outbox; the next `apply --notify` or `watch` sends them."""
    if not events:
        return
    from controller.adapters import outbox, webhooks
    from controller.engine import notifying

    targets, problems = notifying.targets(state)
    for problem in problems:
        print(f"hermes-fleet: warning: {problem}", file=sys.stderr)
    if not targets:
        return

    def log(name: str, **fields: object) -> None:
        if name in ("notify_failed", "notify_dropped", "notify_outbox_error"):
            kept = "; kept, sent again by the next apply --notify or watch" if fields.get("kept") else ""
            print(f"hermes-fleet: warning: notification {fields.get('kind')} to webhook {fields.get('webhook')} "
                  f"not delivered: {fields.get('error') or fields.get('reason')}{kept}", file=sys.stderr)  # fmt: skip

    notifier = webhooks.Notifier(log, retries=2, outbox=outbox.Outbox(root, log))
    notifier.configure(targets)
    for found in events:
        notifier.post(found)
    notifier.close(timeout=NOTIFY_TIMEOUT)


def report_kept(results: ApplyResult) -> None:
    """Name the folder holding what hand-edited files held before this apply overwrote them."""
    if results.replaced_dir:
        print(
            f"hermes-fleet: {len(results.replaced)} hand-edited file(s) were overwritten; what they held is kept in "
            f"{results.replaced_dir} (docs/cli.md#replaced-content)",
            file=sys.stderr,
        )


SETTLE_MAX_BOTS = 5_000  # above: the settled plan's own plan would cost the apply a third more time and memory


def cmd_apply(args: argparse.Namespace) -> int:
    code, bots = converge(args)
    if code == ExitCode.OK and not args.dry_run and not getattr(args, "plan", None) and bots <= SETTLE_MAX_BOTS:
        # After converge's frame is gone: the apply's manifests, plans and results are freed before
        # the settled plan's own plan is made (at 10,000 bots the two at once doubled the peak).
        gc.collect()
        settle(args, resolve_root(args.home))
    return code


def converge(args: argparse.Namespace) -> tuple[int, int]:
    """Apply, and say how many bots the manifests hold: (exit code, bots)."""
    if getattr(args, "plan", None) and (args.dry_run or args.prune or args.adopt or args.no_rooms):
        raise UsageError(
            "apply --plan takes its options from the saved plan",
            hint="leave out --dry-run, --prune, --adopt and --no-rooms (plan --out records them)",
        )
    if args.dry_run:
        planned = make_plan(args)
        render_plan(planned, args, kind="dry-run")
        suspend.refuse_if_suspended(planned.root, force=args.force, verb="apply", dry_run=True)
        return plan_exit(planned.plan, False), len(planned.state.bots)
    result = common.load_valid(args)  # invalid manifests stop here, before the lock or any write
    assert result.state is not None
    text_mode = args.output != "json"
    root = resolve_root(args.home)
    suspend.refuse_if_suspended(root, force=args.force, verb="apply")
    options = common.options(args)
    saved = None
    if getattr(args, "plan", None):
        from controller.verbs import saved_plan

        saved = saved_plan.load(args.plan)
        host = reading.selected_host(args.host, result.state)
        saved_plan.check_inputs(
            saved, args.plan, digest=result.state.digest, home=root, host=host, selection=common.selection(args).describe()
        )
        options = saved_plan.options_of(saved, yes=args.yes)
        args.hermes_version = args.hermes_version or saved.get("hermes_version")

    def show(planned: Planned) -> None:
        if saved is not None:  # under the lock, right before the first write
            saved_plan.check_home(saved, args.plan, planned)
        if text_mode:
            render_plan(planned, args, group=True)

    snapshot = history.snapshot(result, fleet_arg=args.fleet, host=reading.selected_host(args.host, result.state))
    result.loaded = []  # the snapshot holds the documents now, as text (memory)
    progress = ProgressLine(enabled=None if text_mode else False)
    try:
        planned, results = reconciling.apply_once(
            reconciling.ApplyRequest(
                root=root,
                state=result.state,
                files=result.files,
                options=options,
                lock_timeout=args.lock_timeout,
                before_apply=show,
                on_conflict=lambda p: render_plan(p, args, kind="apply"),
                gateway=common.gateway_options(args),
                hermes_version=args.hermes_version,
                snapshot=snapshot,
                on_progress=progress,
                selection=common.selection(args),
            )
        )
    except ConflictError as exc:
        if getattr(args, "notify", False):
            from controller.engine import notifying

            events = notifying.apply_events(
                result.state.fleet, str(root), failed=(), pruned=(), conflict=str(exc), host=getattr(args, "host", None)
            )
            notify(result.state, events, root)
        raise
    finally:
        progress.close()
    plan = planned.plan
    if getattr(args, "notify", False):
        from controller.engine import notifying

        failed = [f"{o.change.key}: {o.error}" for o in results.failed] + [f"{c.key}: {c.reason}" for c in plan.errors]
        pruned = [o.change.key for o in results.done if o.change.action is Action.DELETE]
        events = notifying.apply_events(plan.fleet, str(root), failed=failed, pruned=pruned, host=getattr(args, "host", None))
        notify(result.state, events, root)
    if text_mode:
        color = reporting.use_color(sys.stdout, args.color)
        shown = view(plan, args, group=True)
        reporting.write(reporting.apply_text(results, color=color, not_applied=len(plan.errors), view=shown))
    else:
        render_plan(planned, args, results=results, kind="apply")
    report_kept(results)
    if results.failed or plan.errors:
        if plan.errors and text_mode:
            for line in not_applied(plan.errors):
                print(line, file=sys.stderr)
        # An object that kept changing under the apply (a room edited meanwhile) is a conflict.
        return (ExitCode.CONFLICT if any(o.conflict for o in results.failed) else ExitCode.FAILED), len(planned.state.bots)
    return ExitCode.OK, len(planned.state.bots)


def settle(args: argparse.Namespace, root: Path) -> None:
    """Keep what `plan` prints for this home now, with every input it reads (adapters/settled.py),
    so the next `plan` with the same inputs answers without reading them again. Kept only when
    that plan changes nothing and read only what stat keys vouch for. A write that fails is the
    apply's error, as the observation cache's (docs/performance.md#the-settled-plan)."""
    if not obscache.wanted() or fastplan.reads_stdin(args):
        return  # manifests from stdin cannot be read again (nor keyed)
    salt = settled.new_salt()
    errors = io.StringIO()
    try:
        cache = str(HomeLayout(root).state.cache)
        with (
            inputtrace.tracing(skip=[cache], salt=salt.encode()) as trace,
            parallel.in_one_process(),  # a fork, and the looks at /proc deciding on one, have no stat key
            contextlib.redirect_stderr(MaskedStream(errors)),
        ):
            planned = make_plan(args, yes=False)
            suspend.refuse_if_suspended(planned.root, force=False, verb="apply", dry_run=True)
    except (ControllerError, inputtrace.Busy):
        return  # what the apply itself did not run into (the gateway went away): plan in full next time
    except Exception:  # the memo is a shortcut: an apply that converged never fails for want of it
        if getattr(args, "debug", False):
            raise
        return
    if trace.tainted or planned.inputs.observed.rooms is not None:
        return
    if any(c.action is not Action.NOOP for c in planned.plan.changes):
        return
    memo = settled.Settled(
        params=fastplan.params(args, root),
        process=settled.process_key(salt),
        code=settled.code_key(),
        salt=salt,
        records=trace.inputs(),
        outputs={"stderr": errors.getvalue(), **settled_outputs(planned, args)},
    )
    settled.save(root, memo)


def settled_outputs(planned: Planned, args: argparse.Namespace) -> dict[str, str]:
    """What `plan` prints for `planned`: -o json, and the text of each view in and out of colour."""
    outputs = {}
    found = plan_insights.insights(planned.inputs, planned.plan)
    texts = [("text", view, color) for view in fastplan.VIEWS for color in (False, True)]
    for output, view, color in [("json", "default", False), *texts]:
        shown = argparse.Namespace(**vars(args))
        shown.output, shown.color = output, "always" if color else "never"
        shown.quiet, shown.detail = view == "quiet", view == "detail"
        buffer = io.StringIO()
        with contextlib.redirect_stdout(MaskedStream(buffer)):
            render_plan(planned, shown, found=found)
        outputs[fastplan.output_key(output, view, color)] = buffer.getvalue()
    return outputs


NOT_APPLIED_LINES = 20


def not_applied(errors: list[ObjectChange], limit: int = NOT_APPLIED_LINES) -> list[str]:
    """One stderr line per cause of the objects apply could not plan: objects that share a cause
    (1,000 bots missing one environment variable) are one line naming the first few, and past
    `limit` lines the rest is counted (each object is in the plan above, and in -o json)."""
    by_reason: dict[str, list[str]] = {}
    for change in errors:
        by_reason.setdefault(change.reason, []).append(change.key)
    lines = []
    for reason, keys in by_reason.items():
        if len(keys) == 1:
            lines.append(f"hermes-fleet: {keys[0]} not applied: {reason}")
            continue
        more = f" and {len(keys) - 3:,} more" if len(keys) > 3 else ""
        lines.append(f"hermes-fleet: {len(keys):,} objects not applied ({', '.join(keys[:3])}{more}): {reason}")
    if len(lines) > limit:
        rest = sum(len(keys) for keys in list(by_reason.values())[limit:])
        lines[limit:] = [
            f"hermes-fleet: {rest:,} more objects not applied, for other causes (each is in the plan above, and in -o json)"
        ]
    return lines
