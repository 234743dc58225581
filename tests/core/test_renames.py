"""Bot renames in the planner (core/planning/renames.py): one table row per decision, no filesystem.

Baseline: fleet `acme` owns bot `alpha` (with its routine `Digest`, job job000000001); the manifests
now call it `scout` with `renamed_from: alpha`. Each row changes what the home looks like.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.core import jobs, planning
from controller.core.inventory import bot_key, routine_key
from controller.core.planning import renames
from controller.core.types import Action, Inputs, LiveProfile, Observed, Reason, RenameSeen
from tests.core.test_planner import (
    ALPHA,
    BASELINE,
    DIGEST,
    absent,
    inventory,
    job_of,
    live_from,
    no_filesystem,
    owned_bot,
    root,
    state,
)

SCOUT = dataclasses.replace(ALPHA, name="scout", renamed_from="alpha", routines=(DIGEST,))
OWNED_ALPHA = {
    bot_key("alpha"): owned_bot(ALPHA),
    routine_key("alpha", "Digest"): {"job_id": "job000000001", "applied": jobs.desired_fields("alpha", DIGEST)},
}
OWNED_SCOUT = {
    bot_key("scout"): owned_bot(dataclasses.replace(ALPHA, name="scout")),
    routine_key("scout", "Digest"): {"job_id": "job000000001", "applied": jobs.desired_fields("scout", DIGEST)},
}
ALPHA_JOB = job_of("alpha", DIGEST)
SCOUT_JOB = job_of("scout", DIGEST)
MOVED = dataclasses.replace(live_from(ALPHA), name="scout", path=live_from(ALPHA).path.with_name("scout"))


def home(
    alpha: LiveProfile | None,
    scout: LiveProfile | None,
    objects: dict[str, Any],
    *,
    seen: RenameSeen | None = None,
    job: dict[str, Any] | None = ALPHA_JOB,
) -> Inputs:
    live = {"default": root(), "alpha": alpha or absent("alpha"), "scout": scout or absent("scout")}
    holder = "alpha" if alpha is not None and alpha.exists and scout is None else "scout"
    return dataclasses.replace(
        BASELINE,
        state=state(SCOUT),
        inventory=inventory(objects),
        observed=Observed(
            live=live,
            jobs={holder: (job,) if job else ()},
            renames={"scout": seen or RenameSeen(source="alpha")},
        ),
    )


# A refused rename moves nothing: the old bot and its routine are what the manifests no longer
# declare (orphans); apply stops at the conflict before any write.
REFUSED_OWNED = {
    "bot/scout": (Action.CONFLICT, Reason.RENAME_REFUSED),
    "bot/alpha": (Action.ORPHAN, Reason.REMOVED),
    "routine/alpha/Digest": (Action.ORPHAN, Reason.REMOVED),
}

CASES = [
    pytest.param(
        home(live_from(ALPHA), None, OWNED_ALPHA),
        renames.Step.MOVE,
        {"bot/scout": (Action.RENAME, Reason.PROFILE_RENAMED), "routine/scout/Digest": (Action.UPDATE, Reason.MANAGED)},
        id="move",
    ),
    pytest.param(
        home(None, dataclasses.replace(MOVED, marker=None), OWNED_ALPHA, seen=RenameSeen("alpha", target_marker="alpha")),
        renames.Step.FINISH,
        {"bot/scout": (Action.RENAME, Reason.PROFILE_RENAMED), "routine/scout/Digest": (Action.UPDATE, Reason.MANAGED)},
        id="finish-marker-not-rewritten",
    ),
    pytest.param(
        home(None, MOVED, OWNED_ALPHA, seen=RenameSeen("alpha", target_marker="scout"), job=SCOUT_JOB),
        renames.Step.FINISH,
        {"bot/scout": (Action.RENAME, Reason.PROFILE_RENAMED)},
        id="finish-inventory-not-saved",
    ),
    pytest.param(
        home(
            live_from(ALPHA, marker=None),
            MOVED,
            OWNED_ALPHA,
            seen=RenameSeen("alpha", target_marker="scout"),
            job=SCOUT_JOB,
        ),
        renames.Step.FINISH,
        {"bot/scout": (Action.RENAME, Reason.PROFILE_RENAMED)},
        id="finish-old-folder-made-again",
    ),
    pytest.param(
        home(None, None, OWNED_ALPHA, job=None),
        renames.Step.RECREATE,
        {"bot/scout": (Action.CREATE, Reason.RECREATED), "routine/scout/Digest": (Action.CREATE, Reason.RECREATED)},
        id="recreate-source-gone",
    ),
    pytest.param(
        home(live_from(ALPHA), LiveProfile("scout", MOVED.path, exists=True), OWNED_ALPHA),
        renames.Step.REFUSED,
        REFUSED_OWNED,
        id="refused-target-exists-not-ours",
    ),
    pytest.param(
        home(live_from(ALPHA), MOVED, {**OWNED_ALPHA, **OWNED_SCOUT}, seen=RenameSeen("alpha", target_marker="scout")),
        renames.Step.REFUSED,
        REFUSED_OWNED,
        id="refused-both-ours",
    ),
    pytest.param(
        home(live_from(ALPHA, marker=None), None, {}),
        renames.Step.REFUSED,
        {"bot/scout": (Action.CONFLICT, Reason.RENAME_REFUSED)},
        id="refused-source-not-ours",
    ),
    pytest.param(
        home(live_from(ALPHA, marker={"fleet": "zeta", "profile": "alpha"}), None, {}),
        renames.Step.REFUSED,
        {"bot/scout": (Action.CONFLICT, Reason.RENAME_REFUSED)},
        id="refused-source-other-fleet",
    ),
    pytest.param(
        home(live_from(ALPHA), None, OWNED_ALPHA, seen=RenameSeen("alpha", gateway_running="pid 42, from gateway.pid")),
        renames.Step.REFUSED,
        REFUSED_OWNED,
        id="refused-gateway-runs",
    ),
    pytest.param(
        home(None, MOVED, OWNED_SCOUT, seen=RenameSeen("alpha", target_marker="scout"), job=SCOUT_JOB),
        renames.Step.NOOP,
        {},
        id="noop-done-earlier",
    ),
    pytest.param(
        home(None, None, {}, job=None),
        renames.Step.NOOP,
        {"bot/scout": (Action.CREATE, Reason.NEW), "routine/scout/Digest": (Action.CREATE, Reason.NEW)},
        id="noop-never-here",
    ),
]


@pytest.mark.parametrize(("inputs", "step", "expected"), CASES)
def test_rename_table(inputs: Inputs, step: renames.Step, expected: dict[str, tuple[Action, Reason]]) -> None:
    before = dict(inputs.inventory.objects)
    with no_filesystem():
        decisions = renames.decide_all(inputs)
        plan = planning.plan(inputs)
    assert decisions["scout"].step is step, decisions["scout"].reason
    got = {c.key: (c.action, c.code) for c in plan.changes}
    for key, want in expected.items():
        assert got.get(key) == want, f"{key}: {got.get(key)} != {want}"
    for key, value in got.items():
        if key not in expected:
            assert value[0] is Action.NOOP, f"{key} should be a no-op, is {value}"
    bot = next(c for c in plan.changes if c.key == "bot/scout")
    if step in (renames.Step.MOVE, renames.Step.FINISH, renames.Step.REFUSED):
        assert bot.ref == "alpha"
    # The planner never mutates its inputs: apply moves the real inventory's records itself.
    assert inputs.inventory.objects == before


def test_the_view_moves_records_and_live_state_but_not_the_inputs() -> None:
    inputs = home(live_from(ALPHA), None, OWNED_ALPHA)
    before = dict(inputs.inventory.objects)
    view = renames.view(inputs)
    assert view.inventory.owns(bot_key("scout")) and not view.inventory.owns(bot_key("alpha"))
    assert view.inventory.objects[routine_key("scout", "Digest")]["job_id"] == "job000000001"
    assert "alpha" not in view.observed.live and view.observed.live["scout"].exists
    assert view.observed.jobs["scout"] == (ALPHA_JOB,)
    assert inputs.inventory.objects == before


def test_routine_changes_of_a_moved_bot_are_its_name_only() -> None:
    """The job name carries the bot (`[bot:B] T`); the prompt is the bare instruction and stays."""
    plan = planning.plan(home(live_from(ALPHA), None, OWNED_ALPHA))
    routine = next(c for c in plan.changes if c.key == "routine/scout/Digest")
    assert routine.ref == "job000000001"
    assert {f.field for f in routine.fields} == {"job:name"}
    assert not routine.drift


def test_notes_name_config_keys_that_still_name_the_old_profile() -> None:
    inputs = home(live_from(ALPHA), None, OWNED_ALPHA)
    kanban = dataclasses.replace(root(), config={"kanban": {"default_assignee": "alpha", "orchestrator_profile": "beta"}})
    inputs = dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, live={**inputs.observed.live,
                                                                                          "default": kanban}))  # fmt: skip
    found = [n for n in planning.plan(inputs).notes if n.startswith("kanban.")]
    assert found == [
        "kanban.default_assignee in the root's config.yaml names the renamed profile 'alpha', which no longer exists: "
        "set it to 'scout' (Hermes falls back to the default profile)"
    ]


def test_notes_say_what_is_left_outside_the_home() -> None:
    plan = planning.plan(home(live_from(ALPHA), None, OWNED_ALPHA, seen=RenameSeen("alpha", honcho=True, alias=True)))
    (note,) = [n for n in plan.notes if "renamed from" in n]
    # `profile alias alpha --remove` fails once alpha is gone ("Profile 'alpha' does not exist"); this works.
    assert "`hermes profile alias scout --name alpha --remove` and `hermes profile alias scout`" in note
    assert "~/.honcho/config.json" in note
    alias_only = planning.plan(home(live_from(ALPHA), None, OWNED_ALPHA, seen=RenameSeen("alpha", alias=True)))
    assert [n for n in alias_only.notes if "renamed from" in n and "Honcho" not in n]


def test_no_rename_note_when_nothing_is_left_outside_the_home() -> None:
    plan = planning.plan(home(live_from(ALPHA), None, OWNED_ALPHA, seen=RenameSeen("alpha")))
    assert not [n for n in plan.notes if "renamed from" in n]
