"""Reconciling: one pass of convergence, shared by `apply` and the `watch` loop.

observe (read-only) -> plan (pure) -> [stop for `plan`] -> lock -> observe and plan again ->
refuse conflicts before any write -> apply -> record the run in the inventory. The verbs and the
reconciler in watching.py only add input (manifests) and output around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from controller.adapters import gateway as gw
from controller.adapters import inventory as inventory_file
from controller.adapters import locking, obscache, parsecache, profiles
from controller.core import planning
from controller.core import selection as selecting
from controller.core.inventory import Inventory
from controller.core.selection import Selection
from controller.core.types import Action, Inputs, Options, Plan, RunResult
from controller.engine import applying, handedits, history, observing, records
from controller.engine.ledger import Ledger
from controller.errors import ConflictError, UsageError
from controller.manifests.desired import DesiredState

NO_OPTIONS = Options()


@dataclass
class Planned:
    root: Path
    state: DesiredState
    inputs: Inputs
    plan: Plan
    files: list[str]
    selection: str = ""  # the selectors this plan was narrowed by (--bot, -l), as given


def plan_home(
    root: Path,
    state: DesiredState,
    files: list[str],
    *,
    options: Options = NO_OPTIONS,
    gateway: gw.GatewayOptions | None = None,
    hermes_version: str | None = None,
    selection: Selection | None = None,
    cache: obscache.ObservationCache | None = None,
    inventory: Inventory | None = None,
    memo: PlanMemo | None = None,
) -> Planned:
    """Observe and plan; writes nothing (the gateway is only read). A `selection` keeps only its
    bots' objects (core/selection.py). With `cache`, files whose stat keys it holds are not read
    again (adapters/obscache.py); without, every file is read. `inventory`: the home's, when the
    caller read it already (a watch pass). `memo`: a watch loop's last no-op plan, taken again
    when the inputs are the same."""
    parsecache.load(root)  # parsed YAML of the last apply's files, by content (adapters/parsecache.py)
    inventory = records.load(root, state.fleet) if inventory is None else inventory
    check_slice(inventory, state, options)
    chosen = selection or Selection()
    check_names(chosen, state, inventory)
    inventory = inventory.reclaimed(state.bots)  # a restored bot back in the manifests is owned again (engine/restoring.py)
    observed = observing.observe(root, state, inventory, gateway, hermes_version, with_rooms=options.rooms, cache=cache)
    inputs = Inputs(state=state, inventory=inventory, observed=observed, now=datetime.now(UTC), options=options)
    return Planned(
        root=root,
        state=state,
        inputs=inputs,
        plan=memo.plan(inputs, chosen) if memo is not None else planning.plan(inputs, chosen),
        files=files,
        selection=chosen.describe(),
    )


class PlanMemo:
    """A watch loop's last plan when it changed nothing, with the inputs it was made from.

    The planner is pure (core/planning): the same Inputs give the same Plan. A pass whose inputs
    equal the last ones but for the clock takes that plan again; the clock only shapes the notes
    of routines that change and the rooms (docs/watch.md), so only a plan of no-ops and no rooms is
    kept. The comparison is cheap when nothing changed: the manifests, the inventory and every
    unmarked profile are the very objects of the previous pass (engine/manifestmemo.py,
    records.InventoryMemo, engine/observecache.py), so equality stops at their identity."""

    def __init__(self) -> None:
        self._held: tuple[Inputs, Selection, Plan] | None = None

    def plan(self, inputs: Inputs, chosen: Selection) -> Plan:
        held = self._held
        if held is not None and held[1] == chosen and held[0] == replace(inputs, now=held[0].now):
            return held[2]
        self._held = None
        plan = planning.plan(inputs, chosen)
        if inputs.observed.rooms is None and all(c.action is Action.NOOP for c in plan.changes):
            self._held = (inputs, chosen, plan)
        return plan


def check_names(chosen: Selection, state: DesiredState, inventory: Inventory) -> None:
    """Refuse (exit 2) a `--bot` that names no bot of this fleet: a typo would plan nothing and
    read as "no changes"."""
    known = {*state.bots, *inventory.owned_bots()}
    selecting.check_known(chosen, known, owner=f"fleet {state.fleet!r}", where="in the manifests or in this home's inventory")


def check_slice(inventory: Inventory, state: DesiredState, options: Options) -> None:
    """Refuse (exit 2) a plan for another slice than the one this home was converged as: without it,
    another machine's slice (or the whole fleet) would orphan this machine's bots and drop its peers."""
    recorded = inventory.host
    if recorded is None or recorded == state.host or options.rehost:
        return
    fix = f"pass --host {recorded}; to move this home to another slice on purpose, --host NAME --rehost"
    if state.host is None:
        raise UsageError(
            f"this home was converged as host {recorded!r} of fleet {state.fleet!r}, but these manifests name no host "
            "(the whole fleet would be planned here)",
            hint="check -f; to converge this home as the whole fleet from now on, re-run with --rehost",
        )
    raise UsageError(
        f"this home was converged as host {recorded!r} of fleet {state.fleet!r}, not {state.host!r} "
        "(--host, or this machine's hostname when --host is not given)",
        hint=fix,
    )


def conflict_error(planned: Planned) -> ConflictError:
    names = ", ".join(c.key for c in planned.plan.conflicts)
    return ConflictError(
        f"apply refused, nothing was changed: conflict on {names}",
        hint="see the reasons above (--adopt takes over unmanaged profiles; --yes confirms a large prune)",
    )


@dataclass(frozen=True, kw_only=True)
class ApplyRequest:
    """One apply: the manifests, where, and how (apply, rollback and each watch pass make one)."""

    root: Path
    state: DesiredState
    files: list[str]
    options: Options = NO_OPTIONS
    lock_timeout: float = 10.0
    revision: str | None = None  # the source's revision (watch --git), recorded in the inventory
    before_apply: Callable[[Planned], None] | None = None  # sees the locked plan before any write
    on_conflict: Callable[[Planned], None] | None = None  # sees the plan a conflict refused
    should_stop: Callable[[], bool] | None = None  # asked between two objects (SIGTERM)
    gateway: gw.GatewayOptions | None = None
    hermes_version: str | None = None
    snapshot: history.Snapshot | None = None  # the manifests as read, for the apply history
    on_progress: applying.ProgressFn | None = None
    selection: Selection | None = None
    use_cache: bool = True  # the early, unlocked plan may take unchanged files from the observation cache
    cache: obscache.ObservationCache | None = None  # watch: its in-memory cache (else the home's file)


def apply_once(request: ApplyRequest) -> tuple[Planned, applying.ApplyResult]:
    """Plan, then apply under the lock. Conflicts raise ConflictError before anything is written.

    With `snapshot` (the manifests as read), the run is recorded in the apply history: always for
    `apply` and `rollback`, for `watch` only when it changed or failed something.
    `on_progress(done, total, object)` is called as the apply goes (applying.apply_plan).
    The first, unlocked plan may take unchanged files from the observation cache (`cache`, else
    the home's own unless `use_cache` is False); the plan under the lock reads every file in full,
    and the cache is written afresh after the apply (`cache` itself is updated: a watch loop's).
    """
    try:
        return _apply_once(request)
    finally:
        if request.gateway is not None:
            request.gateway.release()  # the run's connection (a single-use ticket's) ends with the run


def _apply_once(request: ApplyRequest) -> tuple[Planned, applying.ApplyResult]:
    root, state, files, options = request.root, request.state, request.files, request.options
    gateway, hermes_version, selection = request.gateway, request.hermes_version, request.selection
    on_conflict, before_apply, snapshot = request.on_conflict, request.before_apply, request.snapshot
    cache = request.cache
    if cache is None and obscache.wanted(request.use_cache):
        cache = obscache.ObservationCache.load(root)
    parsecache.start_run()
    # A conflict visible before locking refuses here, read-only: taking the lock would already
    # create <home>/.hermes-fleet/apply.lock (and the home itself) for an apply that changes nothing.
    early = plan_home(
        root, state, files, options=options, gateway=gateway, hermes_version=hermes_version, selection=selection, cache=cache
    )
    if early.plan.conflicts and cache is not None:  # the cache never decides a refusal: read everything first
        early = plan_home(
            root, state, files, options=options, gateway=gateway, hermes_version=hermes_version, selection=selection
        )
    if early.plan.conflicts:
        if on_conflict:
            on_conflict(early)
        raise conflict_error(early)
    owned = set(early.inputs.inventory.owned_bots())
    del early  # the locked plan observes everything again: never hold two observations (memory)
    with locking.apply_lock(root, timeout=request.lock_timeout):
        # Under the lock no other hermes-fleet run writes here: a temp file or staging folder of a
        # dead process is debris of a killed run (docs/reliability.md#leftovers-of-a-killed-run).
        swept = profiles.sweep_leftovers(root, set(state.bots) | owned)
        # Under the lock every file is read in full (the cache only records what it found).
        locked = obscache.ObservationCache(root, use=False)
        planned = plan_home(
            root,
            state,
            files,
            options=options,
            gateway=gateway,
            hermes_version=hermes_version,
            selection=selection,
            cache=locked,
        )
        if planned.plan.conflicts:
            if on_conflict:
                on_conflict(planned)
            raise conflict_error(planned)
        if before_apply:
            before_apply(planned)
        results = applying.apply_plan(
            root, planned.plan, planned.inputs, gateway=gateway, should_stop=request.should_stop, on_progress=request.on_progress
        )
        results.swept = [str(path) for path in swept]
        finish_inventory(root, planned, results, revision=request.revision)
        parsecache.save(root)
        if snapshot is not None and (snapshot.command != "watch" or results.outcomes or planned.plan.errors):
            # After the inventory and the parse cache: a kill before it loses this one entry (the next
            # apply records its own), never an earlier one. Before the information-only writes (the
            # observation cache, the hand-edit baseline): their failure must not cost the rollback point.
            results.history_entry = history.record(
                root,
                state.fleet,
                snapshot,
                at=inventory_file.now_iso(),
                digest=state.digest,
                files=files,
                outcomes=results.outcomes,
                errors=len(planned.plan.errors),
                options={"prune": options.prune, "adopt": options.adopt, "yes": options.yes, "rooms": options.rooms},
                replaced=results.replaced_dir,
                selection=selection or Selection(),  # only these bots were converged to the documents
            )
        refresh_cache(root, planned, locked, cache)
        handedits.record(
            root,
            (results.ledger or Ledger(planned.inputs.inventory)).inventory(),  # what this apply recorded
            handedits.written_profiles(o.change for o in results.done),
            lambda name: observing.observe_profile(root, name, with_bot_chat=False),
        )
    return planned, results


def refresh_cache(
    root: Path, planned: Planned, locked: obscache.ObservationCache, target: obscache.ObservationCache | None
) -> None:
    """After an apply's writes: observe its bots again, reading only what changed since the locked
    read, and write the observation cache (a write that fails is the apply's error, as the parse
    cache's: the run's files are all written by then, and the next plan reads in full)."""
    locked.reopen(time.time_ns())  # a file written in the tick of its read is read again
    observing.refresh(root, planned.state, planned.inputs.observed, locked)
    if target is not None:
        target.take(locked)
    (target or locked).save()


def finish_inventory(root: Path, planned: Planned, results: applying.ApplyResult, *, revision: str | None = None) -> None:
    ledger = results.ledger or Ledger(planned.inputs.inventory)
    failed = bool(results.failed or planned.plan.errors or results.abandoned)
    record = {
        "at": inventory_file.now_iso(),
        "digest": planned.state.digest,
        "manifests": planned.files,
        "result": RunResult.PARTIAL.value if failed else RunResult.OK.value,
        "changed": len(results.done),
        "failed": len(results.failed) + len(planned.plan.errors),
    }
    if revision:
        record["revision"] = revision
    if planned.selection:
        record["selection"] = planned.selection
    ledger.add_run(record, planned.state.host)  # the host: check_slice let it through (the same one, or --rehost)
    records.save(root, ledger)  # always: the run itself is history, even when nothing changed
