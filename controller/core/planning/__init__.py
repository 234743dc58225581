"""The planner: desired state + what was observed + the inventory + `now` -> a Plan (pure).

`plan(inputs)` reads nothing but its frozen Inputs: no file, no clock, no network. Each kind of
object has its own module (bots, routines, rooms); the prune guard runs over the bot changes
before routines and rooms look at what their bots will do.
"""

from __future__ import annotations

from controller.core import mcp
from controller.core.planning import bots, notes, prune, renames, rooms, routines, tags
from controller.core.types import Action, Inputs, Kind, ObjectChange, Plan


def plan(inputs: Inputs) -> Plan:
    state = inputs.state
    decisions = renames.decide_all(inputs)
    observed = inputs.observed
    # Everything below plans the home as it will be once the renames have moved their profiles.
    inputs = renames.view(inputs, decisions)
    changes: list[ObjectChange] = [bots.plan_install(inputs)]
    changes += [renames.marked(bots.plan_bot(inputs, bot), decisions.get(bot.name)) for bot in state.bots.values()]
    changes += [bots.plan_orphan(inputs, name) for name in inputs.inventory.owned_bots() if name not in state.bots]
    changes = prune.guard(inputs, changes)
    changes, tag_notes = tags.guard(inputs, changes)
    bot_actions: dict[str, Action] = {c.name: c.action for c in changes if c.kind is Kind.BOT}
    for name, bot in state.bots.items():
        changes += routines.plan_routines(inputs, bot, bot_actions[name])
    changes += routines.plan_routine_orphans(inputs, bot_actions)
    room_changes, room_notes = rooms.plan_rooms(inputs, bot_actions)
    changes += room_changes
    return Plan(
        fleet=state.fleet,
        digest=state.digest,
        changes=tuple(changes),
        prune=inputs.options.prune,
        notes=tuple(notes.plan_notes(inputs) + tag_notes + room_notes + renames.notes(decisions, observed) + _left(inputs)),
        hermes_extras=("mcp",) if mcp.declared(state) else (),
    )


def _left(inputs: Inputs) -> list[str]:
    left = bots.install_left(inputs)
    if not left:
        return []
    return [
        f"{len(left)} install-wide setting(s) no longer in the manifests stay in the root profile: {', '.join(left)} "
        "(install-wide objects are removed only by `apply --prune`)"
    ]
