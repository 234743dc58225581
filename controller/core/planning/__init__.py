"""The planner: desired state + what was observed + the inventory + `now` -> a Plan (pure).

`plan(inputs)` reads nothing but its frozen Inputs: no file, no clock, no network. Each kind of
object has its own module (bots, routines, rooms); the prune guard runs over the bot changes
before routines and rooms look at what their bots will do.

With a selection (`--bot`, `-l`: core/selection.py) the guards and the notes judge the selected
bots alone, and the plan keeps only their objects.
"""

from __future__ import annotations

from dataclasses import replace

from controller.core import mcp, selection
from controller.core.planning import bots, notes, prune, renames, rooms, routines, tags
from controller.core.selection import Selection
from controller.core.types import Action, Inputs, Kind, ObjectChange, Plan

EVERYTHING = Selection()


def plan(inputs: Inputs, chosen: Selection = EVERYTHING) -> Plan:
    state = inputs.state
    scope = chosen.scope(state)
    decisions = renames.decide_all(inputs)
    observed = inputs.observed
    # Everything below plans the home as it will be once the renames have moved their profiles.
    inputs = renames.view(inputs, decisions)
    changes: list[ObjectChange] = [bots.plan_install(inputs)]
    changes += [renames.marked(bots.plan_bot(inputs, bot), decisions.get(bot.name)) for bot in state.bots.values()]
    changes += [bots.plan_orphan(inputs, name) for name in inputs.inventory.owned_bots() if name not in state.bots]
    changes = prune.guard(inputs, changes, scope)
    changes, tag_notes = tags.guard(inputs, changes, scope)
    bot_actions: dict[str, Action] = {c.name: c.action for c in changes if c.kind is Kind.BOT}
    for name, bot in state.bots.items():
        changes += routines.plan_routines(inputs, bot, bot_actions[name])
    changes += routines.plan_routine_orphans(inputs, bot_actions)
    room_changes, room_notes = rooms.plan_rooms(inputs, bot_actions)
    changes += room_changes
    if scope is None:
        said = notes.plan_notes(inputs) + tag_notes + room_notes + renames.notes(decisions, observed) + _left(inputs)
    else:  # the selected bots' notes only: no install-wide settings or rooms are planned
        narrowed = replace(inputs, state=selection.narrow(state, scope))
        picked = {name: d for name, d in decisions.items() if name in scope}
        said = notes.plan_notes(narrowed) + tag_notes + renames.notes(picked, observed)
    whole = Plan(
        fleet=state.fleet,
        digest=state.digest,
        changes=tuple(changes),
        prune=inputs.options.prune,
        notes=tuple(said),
        hermes_extras=("mcp",) if mcp.declared(state) else (),
    )
    return selection.select(whole, chosen, scope)


def _left(inputs: Inputs) -> list[str]:
    left = bots.install_left(inputs)
    inheriting = sorted(name for name in inputs.state.bots if _keeps_inherited(inputs, name))
    if not left and not inheriting:
        return []
    where = "the root profile" if left else ""
    if inheriting:
        shown = ", ".join(inheriting[:10]) + (f" and {len(inheriting) - 10} more" if len(inheriting) > 10 else "")
        where += (" and " if where else "") + f"the bots that inherited them ({shown})"
    fields = left or sorted({f for name in inheriting for f in bots.inherited_left(inputs, name)})
    return [
        f"{len(fields)} install-wide setting(s) no longer in the manifests stay in {where}: {', '.join(fields)} "
        "(install-wide objects are removed only by `apply --prune`)"
    ]


def _keeps_inherited(inputs: Inputs, name: str) -> bool:
    """Bot `name` still holds an install-wide field gone from the manifests (left by a plain apply)."""
    live = inputs.observed.live.get(name)
    if live is None or not live.exists or live.errors:
        return False
    return any(live.value(field)[0] for field in bots.inherited_left(inputs, name))
