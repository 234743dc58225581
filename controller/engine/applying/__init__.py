"""Applying: carry out a Plan through the adapters, one object at a time.

Bots first (bots.py), then each bot's routines in one locked write of its cron store
(routines.py), then rooms over the gateway (rooms.py). A failure stops that one object, is
recorded with its cause, and the others go on; the next apply finishes the job. Ownership and
last-applied values are recorded in the inventory as each object lands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controller.adapters import fsio
from controller.adapters import gateway as gw
from controller.core.types import WRITING_ACTIONS, Action, Inputs, Kind, ObjectChange, Plan
from controller.engine.applying import bots, rooms, routines
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


@dataclass
class ApplyResult:
    outcomes: list[Outcome] = field(default_factory=list)
    abandoned: bool = False  # stopped early on request (SIGTERM); the next apply finishes the job
    swept: list[str] = field(default_factory=list)  # leftovers of a killed earlier run, removed first
    replaced: list[str] = field(default_factory=list)  # kept copies of hand-edited files it overwrote
    history_entry: int | None = None  # the number of this run's apply history entry

    @property
    def replaced_dir(self) -> str | None:
        """The folder of this run's kept copies (replaced/<stamp>/), if it kept any."""
        if not self.replaced:
            return None
        path = Path(self.replaced[0])
        while path.parent.name != "replaced":
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
) -> ApplyResult:
    """Converge every object the plan writes; record ownership in the inventory as we go."""
    result = ApplyResult()
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
    failed_bots: set[str] = set()
    for change in plan.changes:
        if change.action is Action.NOOP:
            bots.refresh_record(root, change, inputs)
        if change.action not in WRITING_ACTIONS:
            continue
        if should_stop is not None and should_stop():
            result.abandoned = True  # a shutdown between two objects: each finished object is whole
            break
        if change.kind is Kind.ROUTINE:
            routine_batches.setdefault(change.bot, []).append(change)
        elif change.kind is Kind.ROOM:
            room_changes.append(change)
        else:
            starting(change.key)
            try:
                with fsio.grouped():  # one fsync per folder per object (docs/performance.md)
                    bots.apply_object(root, change, inputs, result.replaced)
                report(Outcome(change, True))
            except ControllerError as exc:  # the adapters map every OSError onto the error tree
                report(Outcome(change, False, str(exc)))
                failed_bots.add(change.name)
    # Routines: check and choose ids for every bot, one write-ahead of all new job ids, then each
    # bot's cron store in one locked write.
    ready: dict[str, tuple[list[ObjectChange], dict[str, str]]] = {}
    for bot, batch in routine_batches.items():
        if result.abandoned:
            break
        if bot in failed_bots:
            for change in batch:
                report(Outcome(change, False, f"bot/{bot} was not converged"))
            continue
        try:
            ready[bot] = (batch, routines.prepare(bot, batch, inputs))
        except ControllerError as exc:
            for change in batch:
                report(Outcome(change, False, str(exc)))
    if ready and not result.abandoned:
        try:
            routines.write_ahead(root, {bot: ids for bot, (_, ids) in ready.items()}, inputs)
        except ControllerError as exc:
            for batch, _ in ready.values():
                for change in batch:
                    report(Outcome(change, False, str(exc)))
            ready = {}
    for bot, (batch, ids) in ready.items():
        starting(f"routine/{bot}/*")
        try:
            with fsio.grouped():
                routines.apply_routines(root, bot, batch, inputs, ids)
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
            gateway,
            failed_bots,
            lambda c, ok, error, conflict=False: report(Outcome(c, ok, error, conflict)),
        )
    if on_progress is not None:
        on_progress(len(result.outcomes), total, "")
    return result
