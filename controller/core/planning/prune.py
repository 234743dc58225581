"""The prune guard: a prune that would delete too many bots is a conflict until --yes (pure)."""

from __future__ import annotations

import dataclasses

from controller.core.selection import Scope, in_scope
from controller.core.types import Action, Inputs, ObjectChange, Reason

PRUNE_GUARD_FRACTION = 0.25


def guard(inputs: Inputs, changes: list[ObjectChange], scope: Scope = None) -> list[ObjectChange]:
    """The changes, with every bot deletion turned into a conflict when the prune is too large:
    more than a quarter of the bots the fleet owns (so every bot of a fleet, even its only one,
    always needs --yes; docs/cli.md#apply). Only the deletions within `scope` count: a selection
    deletes no other."""

    def judged(change: ObjectChange) -> bool:
        return change.action is Action.DELETE and in_scope(change, scope)

    deletes = [c for c in changes if judged(c)]
    owned = len(inputs.inventory.owned_bots())
    if not deletes or inputs.options.yes or len(deletes) <= owned * PRUNE_GUARD_FRACTION:
        return changes
    share = "every bot of the fleet" if len(deletes) >= owned else f"more than the {PRUNE_GUARD_FRACTION:.0%} guard"
    reason = f"prune would delete {len(deletes)} of {owned} bots ({share}); re-run with --yes if that is intended"
    return [
        dataclasses.replace(c, action=Action.CONFLICT, code=Reason.PRUNE_GUARD, reason=reason) if judged(c) else c
        for c in changes
    ]
