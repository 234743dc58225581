"""Applying: carry out a Plan through the adapters, one object at a time.

The new jobs' ids are chosen and written ahead into the inventory first (routines.py). Then the
bots (bots.py): a new bot's whole profile, its cron store included, is built in a staging folder
and published with one sync and one rename. Then the routines of the other bots, each bot's in one
locked write of its cron store, then rooms over the gateway (rooms.py). A failure stops that one
object, is recorded with its cause, and the others go on; the next apply finishes the job.
Ownership and last-applied values are recorded in the inventory as each object lands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controller.adapters import fsio
from controller.adapters import gateway as gw
from controller.adapters.home import StateLayout
from controller.core.types import WRITING_ACTIONS, Action, Inputs, Kind, ObjectChange, Plan
from controller.engine.applying import bots, rooms, routines
from controller.engine.ledger import Ledger
from controller.errors import ControllerError

# on_progress(done, total, current): objects finished so far, objects this apply writes, and the
# key of the object being written now (a bot's routines: `routine/<bot>/*`).
ProgressFn = Callable[[int, int, str], None]


@dataclass(slots=True)
class Outcome:
    change: ObjectChange
    ok: bool
    error: str = ""
    conflict: bool = False  # it failed because the live object kept changing under us (exit 3)
    pending: bool = False  # it failed because nothing answered, or a seat waits: the next run tries again
    writes: tuple[str, ...] = ()  # a room's gateway writes, in the order they were sent


@dataclass
class ApplyResult:
    outcomes: list[Outcome] = field(default_factory=list)
    abandoned: bool = False  # stopped early on request (SIGTERM); the next apply finishes the job
    swept: list[str] = field(default_factory=list)  # leftovers of a killed earlier run, removed first
    replaced: list[str] = field(default_factory=list)  # kept copies of hand-edited files it overwrote
    history_entry: int | None = None  # the number of this run's apply history entry
    ledger: Ledger | None = None  # the fleet's records as this run left them (engine/ledger.py)

    @property
    def replaced_dir(self) -> str | None:
        """The folder of this run's kept copies (replaced/<stamp>/), if it kept any."""
        if not self.replaced:
            return None
        path = Path(self.replaced[0])
        while path.parent.name != StateLayout.REPLACED:
            path = path.parent
        return str(path)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.ok]

    @property
    def done(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok]


def apply_plan(
    root: Path,
    plan: Plan,
    inputs: Inputs,
    *,
    gateway: gw.GatewayOptions | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_progress: ProgressFn | None = None,
    new_job_id: routines.JobIds = routines.new_job_id,
) -> ApplyResult:
    """Converge every object the plan writes; record ownership in the run's ledger as we go
    (`result.ledger`: it starts as `inputs.inventory`, which stays as the plan read it)."""
    ledger = Ledger(inputs.inventory)
    result = ApplyResult(ledger=ledger)
    total = sum(1 for c in plan.changes if c.action in WRITING_ACTIONS)

    def report(outcome: Outcome) -> None:
        result.outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)

    def starting(key: str) -> None:
        if on_progress is not None:
            on_progress(len(result.outcomes), total, key)

    routine_batches: dict[str, list[ObjectChange]] = {}
    room_changes: list[ObjectChange] = []
    for change in plan.changes:
        if change.action in WRITING_ACTIONS and change.kind is Kind.ROUTINE:
            routine_batches.setdefault(change.bot, []).append(change)
        elif change.action in WRITING_ACTIONS and change.kind is Kind.ROOM:
            room_changes.append(change)
    # Routines first in part: check and choose the new jobs' ids for every bot, and record them in
    # one write-ahead of the inventory before any cron store is written. A new bot's cron store is
    # then built in its staging folder with the rest of its profile (one sync, one rename).
    ready: dict[str, tuple[list[ObjectChange], dict[str, str]]] = {}
    unready: dict[str, str] = {}  # bot -> why its routines cannot be written
    for bot, batch in routine_batches.items():
        try:
            ready[bot] = (batch, routines.prepare(bot, batch, inputs, new_job_id))
        except ControllerError as exc:
            unready[bot] = str(exc)
    if should_stop is not None and should_stop():
        result.abandoned = True  # nothing written yet
    elif ready:
        try:
            routines.write_ahead(root, {bot: ids for bot, (_, ids) in ready.items()}, ledger)
        except ControllerError as exc:
            unready.update(dict.fromkeys(ready, str(exc)))
            ready = {}
    staged: dict[str, dict[str, str]] = {}  # bot -> the ids its new cron store got in staging

    def with_new_store(change: ObjectChange) -> Callable[[Path], None] | None:
        batch, ids = ready.get(change.name, ([], {}))
        if not batch or change.ref or any(c.action is not Action.CREATE for c in batch):
            return None

        def write(staging: Path) -> None:
            staged[change.name] = routines.write_store(staging, change.name, batch, inputs, ids)

        return write

    failed_bots: set[str] = set()
    with fsio.grouped():  # each folder synced once for all bots (profiles/: docs/performance.md)
        for change in plan.changes if not result.abandoned else ():
            if change.action is Action.NOOP:
                bots.refresh_record(root, change, inputs, ledger)
            if change.action not in WRITING_ACTIONS or change.kind in (Kind.ROUTINE, Kind.ROOM):
                continue
            if should_stop is not None and should_stop():
                result.abandoned = True  # a shutdown between two objects: each finished object is whole
                break
            starting(change.key)
            more = with_new_store(change) if change.action is Action.CREATE else None
            try:
                bots.apply_object(root, change, inputs, ledger, result.replaced, with_new=more)
                report(Outcome(change, True))
            except ControllerError as exc:  # the adapters map every OSError onto the error tree
                report(Outcome(change, False, str(exc)))
                failed_bots.add(change.name)
                staged.pop(change.name, None)  # its staging folder, cron store included, is gone
    for bot, batch in routine_batches.items():
        if result.abandoned and bot not in staged:
            continue  # a shutdown: only what is written already is recorded
        if bot in failed_bots or bot in unready:
            why = f"bot/{bot} was not converged" if bot in failed_bots else unready[bot]
            for change in batch:
                report(Outcome(change, False, why))
            continue
        batch, ids = ready[bot]
        if bot in staged:  # written with its new profile
            routines.record(bot, batch, inputs, staged[bot], ledger)
            outcomes = [Outcome(change, True) for change in batch]
        else:
            starting(f"routine/{bot}/*")
            try:
                with fsio.grouped():
                    routines.apply_routines(root, bot, batch, inputs, ids, ledger)
                outcomes = [Outcome(change, True) for change in batch]
            except ControllerError as exc:
                outcomes = [Outcome(change, False, str(exc)) for change in batch]
        for outcome in outcomes:
            report(outcome)
    if room_changes and not result.abandoned:
        starting("rooms")
        rooms.apply_rooms(
            root,
            room_changes,
            inputs,
            ledger=ledger,
            options=gateway,
            failed_bots=failed_bots,
            report=lambda c, ok, error, conflict=False, pending=False, writes=(): report(
                Outcome(change=c, ok=ok, error=error, conflict=conflict, pending=pending, writes=tuple(writes))
            ),
        )
    if on_progress is not None:
        on_progress(len(result.outcomes), total, "")
    return result
