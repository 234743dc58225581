"""Selectors on plan and apply: `--bot NAME` (repeatable) and `-l key=value` (labels), pure.

A selection keeps the plan's objects of the chosen bots (the bot and its routines) and nothing
else: the install-wide settings and rooms are planned only by a run without a selector, and no bot
outside the selection is created, changed or pruned. Names are ORed, labels ANDed, and both
together ANDed (as kubectl's selectors). A bot gone from the manifests has no labels: only
`--bot NAME` can select its prune.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from controller.core.types import Kind, ObjectChange, Plan
from controller.manifests.desired import DesiredState


@dataclass(frozen=True)
class Selection:
    bots: frozenset[str] = frozenset()
    labels: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.bots or self.labels)

    def describe(self) -> str:
        parts = [f"--bot {name}" for name in sorted(self.bots)] + [f"-l {k}={v}" for k, v in self.labels]
        return " ".join(parts)

    def chosen(self, state: DesiredState) -> frozenset[str]:
        """The bots selected: in the manifests and matching, or named and gone (a prune)."""
        present = {
            name
            for name, bot in state.bots.items()
            if (not self.bots or name in self.bots) and all(bot.labels.get(k) == v for k, v in self.labels)
        }
        gone = set() if self.labels else {name for name in self.bots if name not in state.bots}
        return frozenset(present | gone)


def bot_of(change: ObjectChange) -> str | None:
    """The bot an object belongs to; None for the install-wide settings and rooms."""
    if change.kind is Kind.BOT:
        return change.name
    if change.kind is Kind.ROUTINE:
        return change.name.partition("/")[0]
    return None


def select(plan: Plan, state: DesiredState, selection: Selection) -> Plan:
    if not selection:
        return plan
    chosen = selection.chosen(state)
    kept = tuple(c for c in plan.changes if bot_of(c) in chosen)
    left = len(plan.changes) - len(kept)
    note = (
        f"selection {selection.describe()}: {len(chosen)} bot(s); {left} other object(s) left out "
        "(the install-wide settings and rooms too): nothing outside the selection is planned, changed or pruned"
    )
    return replace(plan, changes=kept, notes=(*plan.notes, note))
