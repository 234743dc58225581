"""Planning bot renames (`renamed_from`): what each rename does, and the home as it will be after it (pure).

A rename is decided from the two profiles, the inventory and the owner markers:

- `move`: the old profile is this fleet's bot and the new name is free: move the folder, then
  rewrite what names the old profile (docs/hermes/rename.md).
- `finish`: the folder already moved (a run cut short after the move: the new folder holds this
  fleet's marker of the old or the new name, while the inventory still records the old name):
  rewrite what is left, never move again.
- `recreate`: the inventory owns the old name but the profile is gone: the new bot is created (empty),
  and the old records go with the rename.
- `refused`: the old profile is not this fleet's bot, the new name is taken by a profile this
  fleet does not own (or both are this fleet's), or a gateway runs for the old profile.
- `noop`: nothing to rename (done earlier, or the old profile never existed on this machine).

`view(inputs)` is the same Inputs as they will be once every move and finish is done: the old
profile's live state, cron jobs and inventory records under the new name. The other planners run
on that view, so a renamed bot's fields, routines (same job ids; names and prompts now name the new
bot) and rooms (the old member retired, the new one seated) are planned as ordinary updates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

from controller.core.inventory import Inventory, bot_key
from controller.core.types import Action, Inputs, LiveProfile, ObjectChange, Observed, Reason, RenameSeen
from controller.hermes import DEFAULT_PROFILE
from controller.hermes.renaming import PROFILE_KEYS
from controller.manifests.desired import DesiredBot


class Step(StrEnum):
    MOVE = "move"
    FINISH = "finish"
    RECREATE = "recreate"
    REFUSED = "refused"
    NOOP = "noop"


@dataclass(frozen=True)
class Decision:
    new: str
    old: str
    step: Step
    reason: str = ""

    @property
    def moves_records(self) -> bool:
        """The view (and apply) carries the old name's records over to the new one."""
        return self.step in (Step.MOVE, Step.FINISH, Step.RECREATE)


def _marker_fleet(live: LiveProfile | None) -> str | None:
    marker = live.marker if live is not None else None
    fleet = marker.get("fleet") if marker else None
    return fleet if isinstance(fleet, str) else None


def decide(inputs: Inputs, bot: DesiredBot) -> Decision | None:
    """What the rename of `bot` (from `bot.renamed_from`) does; None when it has no renamed_from."""
    old, new = bot.renamed_from, bot.name
    if old is None:
        return None
    fleet = inputs.state.fleet
    inventory = inputs.inventory
    live = inputs.observed.live
    seen = inputs.observed.renames.get(new) or RenameSeen(source=old)
    old_live, new_live = live.get(old), live.get(new)
    old_exists = old_live is not None and old_live.exists
    new_exists = new_live is not None and new_live.exists
    inv_old, inv_new = inventory.owns(bot_key(old)), inventory.owns(bot_key(new))
    old_ours = inv_old or _marker_fleet(old_live) == fleet
    new_ours = inv_new or _marker_fleet(new_live) == fleet

    def decision(step: Step, reason: str) -> Decision:
        return Decision(new, old, step, reason)

    if new_exists:
        if seen.target_marker == old or (seen.target_marker == new and inv_old and not inv_new):
            return decision(
                Step.FINISH,
                f"finishing the rename from {old!r}: the profile folder was moved by an earlier run that was cut short",
            )
        if new_ours and not (old_exists and old_ours):
            return decision(Step.NOOP, f"already renamed from {old!r}")
        if new_ours:
            return decision(
                Step.REFUSED,
                f"cannot rename {old!r} to {new!r}: both profiles exist and both are this fleet's bots; "
                f"remove renamed_from (two bots), or prune one of them first",
            )
        owner = _marker_fleet(new_live)
        whose = f"owned by fleet {owner!r}" if owner else "not managed by this fleet"
        return decision(
            Step.REFUSED,
            f"cannot rename {old!r} to {new!r}: a profile {new!r} already exists ({whose}); "
            "Hermes never merges two profiles: choose another name, or move that profile away",
        )
    if old_exists:
        if not old_ours:
            owner = _marker_fleet(old_live)
            whose = f"it is owned by fleet {owner!r}" if owner else f"it is not a bot of fleet {fleet!r}"
            return decision(
                Step.REFUSED,
                f"cannot rename profile {old!r}: {whose}; adopt it under its old name first "
                "(`apply --adopt` with the old name), then rename it",
            )
        if seen.gateway_running:
            return decision(
                Step.REFUSED,
                f"cannot rename {old!r} while its gateway runs ({seen.gateway_running}); the gateway would keep "
                f"writing to the old folder: stop it (`hermes -p {old} gateway stop`), apply, then start "
                f"`hermes -p {new} gateway`",
            )
        return decision(Step.MOVE, f"renamed from {old!r}: the profile moves with its memories, sessions and routines")
    if inv_old:
        return decision(
            Step.RECREATE,
            f"renamed from {old!r}, but profile {old!r} was deleted outside hermes-fleet: creating {new!r} empty",
        )
    return decision(Step.NOOP, f"no profile {old!r} on this machine to rename")


def decide_all(inputs: Inputs) -> dict[str, Decision]:
    """Each bot's rename decision, by the new name."""
    out = {}
    for bot in inputs.state.bots.values():
        found = decide(inputs, bot)
        if found is not None:
            out[bot.name] = found
    return out


def moved_inventory(inventory: Inventory, decisions: dict[str, Decision]) -> Inventory:
    """A copy of the inventory with every moving rename's records under the new name."""
    moving = [d for d in decisions.values() if d.moves_records]
    if not moving:
        return inventory
    for d in moving:
        inventory = inventory.renamed(d.old, d.new)
    return inventory


def moved_observed(observed: Observed, decisions: dict[str, Decision]) -> Observed:
    """What will be observed once every `move` is done: the old profile (and its cron store) under the new name."""
    moving = [d for d in decisions.values() if d.step in (Step.MOVE, Step.FINISH)]
    if not moving:
        return observed
    live = dict(observed.live)
    jobs, job_errors, timezones = dict(observed.jobs), dict(observed.job_errors), dict(observed.timezones)
    for d in moving:
        source = live.pop(d.old, None)  # finish: an old folder made again since is not this bot's any more
        if d.step is Step.FINISH or source is None:
            continue
        live[d.new] = dataclasses.replace(source, name=d.new, path=source.path.with_name(d.new), marker=None, stray_marker=None)
        for table in (jobs, job_errors, timezones):
            if d.old in table:
                table[d.new] = table.pop(d.old)  # type: ignore[assignment]
            else:
                table.pop(d.new, None)
    return dataclasses.replace(observed, live=live, jobs=jobs, job_errors=job_errors, timezones=timezones)


def view(inputs: Inputs, decisions: dict[str, Decision] | None = None) -> Inputs:
    """The inputs as they will be after every rename that moves or finishes (unchanged without renames)."""
    decisions = decide_all(inputs) if decisions is None else decisions
    if not any(d.moves_records for d in decisions.values()):
        return inputs
    return dataclasses.replace(
        inputs,
        inventory=moved_inventory(inputs.inventory, decisions),
        observed=moved_observed(inputs.observed, decisions),
    )


def marked(change: ObjectChange, decision: Decision | None) -> ObjectChange:
    """A bot's change as the plan shows it once its rename is decided."""
    if decision is None:
        return change
    if decision.step is Step.REFUSED:  # the refusal says more than "unmanaged" about a taken name
        return dataclasses.replace(change, action=Action.CONFLICT, code=Reason.RENAME_REFUSED, reason=decision.reason,
                                   fields=(), ref=decision.old)  # fmt: skip
    if change.action in (Action.CONFLICT, Action.ERROR):
        return change
    if decision.step in (Step.MOVE, Step.FINISH):
        return dataclasses.replace(change, action=Action.RENAME, code=Reason.PROFILE_RENAMED, reason=decision.reason,
                                   ref=decision.old)  # fmt: skip
    if decision.step is Step.RECREATE:
        return dataclasses.replace(change, reason=decision.reason, ref=decision.old)
    return change


def notes(decisions: dict[str, Decision], observed: Observed) -> list[str]:
    """What a rename leaves to the user: what is outside the Hermes home, and config keys that name
    the old profile (docs/hermes/rename.md#config-keys-that-name-a-profile)."""
    out = []
    for d in sorted(decisions.values(), key=lambda d: d.new):
        if d.step not in (Step.MOVE, Step.FINISH):
            continue
        seen = observed.renames.get(d.new)
        left = []
        if seen is not None and seen.alias:  # the command that works once `d.old` is gone (docs/hermes/rename.md)
            left.append(
                f"the wrapper alias ~/.local/bin/{d.old} (outside the Hermes home) still runs `hermes -p {d.old}`: run "
                f"`hermes profile alias {d.new} --name {d.old} --remove` and `hermes profile alias {d.new}`"
            )
        if seen is not None and seen.honcho:
            left.append(
                f"a Honcho host block 'hermes_{d.old}' in ~/.honcho/config.json is not moved (the profile's and the "
                f"root's honcho.json are): rename it to 'hermes_{d.new}' there"
            )
        if left:
            out.append(f"bot {d.new!r} (renamed from {d.old!r}): " + "; ".join(left))
        for profile in sorted(observed.live.values(), key=lambda p: p.name):
            for key in PROFILE_KEYS:
                if profile.config is not None and profile.config_value(key) == (True, d.old):
                    where = "the root's config.yaml" if profile.name == DEFAULT_PROFILE else f"bot {profile.name!r}'s config.yaml"
                    out.append(
                        f"{key} in {where} names the renamed profile {d.old!r}, which no longer exists: set it to "
                        f"{d.new!r} (Hermes falls back to the default profile)"
                    )
    return out
