"""@-tags shared with profiles outside the fleet (pure).

The Desktop tags every live profile of the home by its name, title and display name, and resolves a
tag two profiles share to nobody (docs/hermes/bot-mode.md#mentions). Validation sees only the
manifests; here the plan compares each bot's tags with the home's other profiles: a collision this
plan would introduce (a new or adopted bot, a changed title or display name) is a conflict; one
already there is a warning note. With a selection, only its bots are judged, against everything
else as it stays: its deletions alone free a tag, and a declared bot outside it keeps its live tags.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from controller.core.selection import Scope, in_scope
from controller.core.types import Action, Inputs, Kind, ObjectChange, Reason
from controller.hermes import naming
from controller.manifests.desired import DesiredBot

_FIELD_OF_TAG = {"title": "meta:title", "display_name": "profile:display_name"}
_NEW_PROFILE = (Action.CREATE, Action.ADOPT, Action.RENAME)
_SETTLED = (Action.CONFLICT, Action.ERROR)


def guard(inputs: Inputs, changes: list[ObjectChange], scope: Scope = None) -> tuple[list[ObjectChange], list[str]]:
    """`changes` with each bot (within `scope`) whose new tag collides with another profile's made a
    conflict, and notes for the collisions already live."""
    index = _other_tags(inputs, changes, scope)
    if not index:
        return changes, []
    out: list[ObjectChange] = []
    notes: list[str] = []
    for change in changes:
        bot = inputs.state.bots.get(change.name) if change.kind is Kind.BOT and in_scope(change, scope) else None
        if bot is None or change.action in _SETTLED:
            out.append(change)
            continue
        clashes = [(tag, field, holder) for tag, field in _tags(inputs, bot).items() for holder in index.get(tag, ())]
        new = [c for c in clashes if _introduced(change, c[1])]
        if new:
            out.append(dataclasses.replace(change, action=Action.CONFLICT, code=Reason.MENTION_COLLISION, reason=_words(new)))
            continue
        if clashes:
            notes.append(f"warning: bot {bot.name!r}: {_words(clashes)}")
        out.append(change)
    return out, notes


def _other_tags(inputs: Inputs, changes: list[ObjectChange], scope: Scope) -> dict[str, list[tuple[str, str]]]:
    """tag -> [(profile, field)] over the live profiles this plan leaves as they are and in place:
    not declared (or outside the selection), and not deleted by it."""
    gone = {c.name for c in changes if c.kind is Kind.BOT and c.action is Action.DELETE and in_scope(c, scope)}
    planned = inputs.state.bots.keys() if scope is None else scope
    names: dict[str, tuple[str | None, str | None]] = dict(inputs.observed.others)
    for name, live in inputs.observed.live.items():
        if live.exists and name not in planned and name not in gone:
            title = (live.meta or {}).get("title")
            names[name] = (title if isinstance(title, str) else None, live.display_name)
    index: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name, (title, display_name) in names.items():
        for tag, field in naming.bot_tags(name, title, display_name).items():
            index[tag].append((name, field))
    return index


def _tags(inputs: Inputs, bot: DesiredBot) -> dict[str, str]:
    """The bot's tags once applied: a title or display name the manifests leave unset keeps its live value."""
    live = inputs.observed.live.get(bot.name)
    title, display_name = bot.title, bot.display_name
    if live is not None and title is None:
        live_title = (live.meta or {}).get("title")
        title = live_title if isinstance(live_title, str) else None
    if live is not None and display_name is None:
        display_name = live.display_name
    return naming.bot_tags(bot.name, title, display_name)


def _introduced(change: ObjectChange, field: str) -> bool:
    if change.action in _NEW_PROFILE:
        return field != "name" or change.action is not Action.ADOPT  # an adopted profile had its name
    return any(f.field == _FIELD_OF_TAG.get(field) for f in change.fields)


def _words(clashes: list[tuple[str, str, tuple[str, str]]]) -> str:
    said = "; ".join(
        f"its {field} gives @{tag}, which is also the {'name' if other == 'name' else other + ' tag'} of profile {holder!r}"
        for tag, field, (holder, other) in clashes
    )
    return (
        f"{said}. The Desktop resolves a tag two profiles share to nobody: choose another title or display_name "
        "(or rename that profile)"
    )
