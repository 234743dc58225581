"""What a `watch` loop keeps from one pass to the next (docs/cli.md#watch, `--full-every`).

Each piece is taken again only while what it was made of is unchanged, and is made afresh
otherwise: the validated manifests (engine/manifestmemo.py), the inventory (records.InventoryMemo),
the last plan that changed nothing (reconciling.PlanMemo), each bot's runtime health
(engine/health.py) and the routines' health of that plan. The observed profiles are kept by the
observation cache itself (engine/observecache.py). A pass where nothing changed then reads and
computes almost nothing again.

A pass and its health check run without the cyclic garbage collector (loading.gc_paused): it
makes no cycles to speak of, while the collector's scans of what is kept here (the observation of
a 10,000-bot home) cost more than the pass itself. Reference counting still frees memory.
"""

from __future__ import annotations

from pathlib import Path

from controller.adapters import obscache
from controller.core import health as health_core
from controller.core import watching as policy
from controller.core.selection import EVERY_BOT, Scope, Selection
from controller.core.types import Options, Plan
from controller.engine import health, manifestmemo, observing, reconciling, records
from controller.manifests import loading
from controller.manifests.desired import DesiredState


class PassMemo:
    """`selection`: the reconciler's --bot/-l; its plans and health checks are of the chosen bots
    (`select`, once per pass, from that pass's manifests: labels may move a bot in or out)."""

    def __init__(self, selection: Selection = EVERY_BOT) -> None:
        self.selection = selection
        self.scope: Scope = None  # the chosen bots of the last pass's manifests; None: every bot
        self.manifests = manifestmemo.ManifestMemo()  # validated again when the source changes
        self.inventories = records.InventoryMemo()  # read again when its file's stat key moves
        self.plans = reconciling.PlanMemo()  # the last no-op plan, while its inputs are the same
        self.runtimes: dict[str, tuple[object, health_core.BotRuntime]] = {}  # health.check(kept=)
        self._routines: tuple[Plan, dict[tuple[str, str], bool]] | None = None

    def select(self, state: DesiredState) -> list[str]:
        """The bots this reconciler converges and reports on, of these manifests."""
        self.scope = self.selection.scope(state)
        return sorted(state.bots if self.scope is None else self.scope & set(state.bots))

    def routine_health(self, planned: reconciling.Planned) -> dict[tuple[str, str], bool]:
        """policy.routine_health, once per plan: the plan memo gives the same Plan again only for
        the same inputs, its cron jobs included."""
        if self._routines is None or self._routines[0] is not planned.plan:
            self._routines = (planned.plan, policy.routine_health(planned.plan, planned.inputs.observed.jobs))
        return self._routines[1]

    def plan(
        self,
        root: Path,
        state: DesiredState,
        files: list[str],
        options: Options,
        cache: obscache.ObservationCache,
    ) -> reconciling.Planned:
        """reconciling.plan_home through the kept inventory and plan."""
        inventory = self.inventories.load(root, state.fleet)
        return reconciling.plan_home(
            root, state, files, options=options, cache=cache, inventory=inventory, memo=self.plans, selection=self.selection
        )

    def health(self, root: Path, fleet: str, cache: obscache.ObservationCache) -> health_core.Health:
        """health.check through the kept inventory and runtimes, reading the home through `cache`."""
        inventory = self.inventories.load(root, fleet)
        with loading.gc_paused():  # see the module's docstring
            reads = observing.HomeReads(root, cache)
            return health.check(root, fleet, inventory=inventory, reads=reads, kept=self.runtimes, only=self.scope)
