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
