"""Selectors on plan, apply, status and watch: `--bot NAME` (repeatable) and `-l key=value`
(labels), pure.

A selection keeps the plan's objects of the chosen bots (the bot and its routines) and nothing
else: the install-wide settings and rooms are planned only by a run without a selector, and no bot
outside the selection is created, changed or pruned. Names are ORed, labels ANDed, and both
together ANDed (as kubectl's selectors). A bot gone from the manifests has no labels: only
`--bot NAME` can select its prune.

The planner judges the selected part alone (core/planning): the prune guard counts the selected
deletions, the @-tag guard sees only them go, and the notes speak of the selected bots only.
`status` and `watch` narrow what they show and check by the same scope (`key_in_scope`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, replace

from controller.core.types import Kind, ObjectChange, Plan
from controller.errors import UnknownBot
from controller.manifests.desired import DesiredState

Scope = frozenset[str] | None  # the chosen bots; None: the whole plan (no selector)


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

    def scope(self, state: DesiredState) -> Scope:
        return self.chosen(state) if self else None


EVERY_BOT = Selection()  # no selector: the whole plan


def unknown(selection: Selection, known: Iterable[str]) -> list[str]:
    """`--bot` names that are no bot of this fleet (`known`: the manifests' and the inventory's),
    each with a did-you-mean when one is close."""
    names = sorted(set(known))
    out = []
    for name in sorted(selection.bots - set(names)):
        guess = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        out.append(f"{name!r} (did you mean {guess[0]!r}?)" if guess else repr(name))
    return out


def check_known(selection: Selection, known: Iterable[str], *, owner: str, where: str) -> None:
    """Refuse (UnknownBot, exit 2) the `--bot` names that are none of `known` (the bots of `owner`,
    e.g. "fleet 'acme'", found `where`), with a did-you-mean and the bots there are."""
    names = sorted(set(known))
    missing = unknown(selection, names)
    if missing:
        listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        raise UnknownBot(
            f"--bot {', '.join(missing)}: no bot of {owner} has that name, {where}",
            hint=f"its bots: {listed}" if names else "the fleet has no bot yet",
        )


def owner_of(key: str) -> str | None:
    """The bot an object key (`bot/a`, `routine/a/daily`: the inventory's, a drift list's) belongs
    to; None for the install-wide settings (`install/...`) and rooms."""
    kind, _, name = key.partition("/")
    if kind == Kind.BOT:
        return name
    if kind == Kind.ROUTINE:
        return name.partition("/")[0]
    return None


def key_in_scope(key: str, scope: Scope) -> bool:
    return scope is None or owner_of(key) in scope


def in_scope(change: ObjectChange, scope: Scope) -> bool:
    return scope is None or bot_of(change) in scope


def bot_of(change: ObjectChange) -> str | None:
    """The bot an object belongs to; None for the install-wide settings and rooms."""
    if change.kind is Kind.BOT:
        return change.name
    if change.kind is Kind.ROUTINE:
        return change.name.partition("/")[0]
    return None


def narrow(state: DesiredState, scope: frozenset[str]) -> DesiredState:
    """The state as far as a selection plans it, for its notes: the chosen bots, and no install-wide
    settings or rooms (a selection leaves them out)."""
    return replace(
        state,
        bots={name: bot for name, bot in state.bots.items() if name in scope},
        rooms={},
        install_config={},
        install_env={},
        root_only=frozenset(),
    )


def select(plan: Plan, selection: Selection, scope: Scope) -> Plan:
    """The plan's objects within the scope, with a note saying what was left out."""
    if scope is None:
        return plan
    kept = tuple(c for c in plan.changes if in_scope(c, scope))
    left = len(plan.changes) - len(kept)
    if not scope:
        note = f"selection {selection.describe()} matches no bot of the manifests: nothing is planned"
    else:
        note = (
            f"selection {selection.describe()}: {len(scope)} bot(s); {left} other object(s) left out "
            "(the install-wide settings and rooms too): nothing outside the selection is planned, changed or pruned"
        )
    return replace(plan, changes=kept, notes=(*plan.notes, note))
