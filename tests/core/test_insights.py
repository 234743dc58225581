"""Plan insights as a pure function of the frozen Inputs and their Plan: table tests, no filesystem."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from croniter import croniter

from controller.core import insights, planning
from controller.core.insights import Insights
from controller.core.types import Inputs
from controller.hermes.capabilities import DEFAULT_TOOLSETS_0_19
from controller.hermes.platforms import PLATFORMS_0_19, toolset_keys
from controller.manifests.desired import DesiredBot, Origin
from controller.manifests.models import Room, Routine
from tests.core.test_planner import (
    ALPHA,
    BASELINE,
    BETA,
    DIGEST,
    ROUTINE_IN_SYNC,
    absent,
    live_from,
    no_filesystem,
    state,
    with_live,
)


def run(inputs: Inputs) -> Insights:
    with no_filesystem():
        return insights.insights(inputs, planning.plan(inputs))


def with_config(bot: DesiredBot, **config: Any) -> DesiredBot:
    return dataclasses.replace(bot, config={**bot.config, **config})


def desired_only(inputs: Inputs, *bots: DesiredBot, **kw: Any) -> Inputs:
    return dataclasses.replace(inputs, state=state(*bots, **kw))


def test_nothing_to_say_about_an_in_sync_fleet() -> None:
    found = run(BASELINE)
    assert found.capabilities == () and found.loops == () and found.runs_after == 0


def test_gaining_terminal_widens_on_every_platform() -> None:
    live = live_from(with_config(ALPHA, **toolset_keys(["web"])))
    inputs = with_live(desired_only(BASELINE, with_config(ALPHA, **toolset_keys(["web", "terminal"]))), alpha=live)
    found = run(inputs)
    (change,) = found.capabilities
    assert (change.bot, change.what, change.direction, change.gained, change.lost) == (
        "alpha",
        "toolsets",
        "widening",
        ("terminal",),
        (),
    )
    assert change.platforms == ()  # every platform
    assert "+terminal on every platform" in change.describe()
    assert found.widening == [change]


def test_pinning_a_short_list_narrows_from_hermes_defaults() -> None:
    inputs = desired_only(BASELINE, with_config(ALPHA, **toolset_keys(["web", "file"])))
    changes = {p: c for c in run(inputs).capabilities for p in c.platforms}
    cli = changes["cli"]
    assert cli.direction == "narrowing"
    assert set(cli.lost) == DEFAULT_TOOLSETS_0_19 - {"web", "file"}
    assert "terminal" in cli.lost and cli.gained == ()
    assert changes["cron"] is cli
    # Hermes' webhook platform has only clarify, vision and web by default: there the pin adds `file`.
    hook = changes["webhook"]
    assert (hook.direction, hook.gained, hook.lost) == ("widening", ("file",), ("clarify", "vision"))


def test_one_platform_gaining_is_named() -> None:
    before = toolset_keys(["web"])
    after = {**before, "platform_toolsets.cron": ["web", "terminal"]}
    inputs = with_live(desired_only(BASELINE, with_config(ALPHA, **after)), alpha=live_from(with_config(ALPHA, **before)))
    (change,) = run(inputs).capabilities
    assert change.platforms == ("cron",) and change.gained == ("terminal",)


def test_adding_no_mcp_narrows() -> None:
    before = toolset_keys(["web"])
    inputs = with_live(
        desired_only(BASELINE, with_config(ALPHA, **toolset_keys(["web", "no_mcp"]))),
        alpha=live_from(with_config(ALPHA, **before)),
    )
    (change,) = run(inputs).capabilities
    assert change.direction == "narrowing" and change.gained == ("no_mcp",)


def test_a_new_bot_without_a_pin_widens_by_the_default_set() -> None:
    gamma = DesiredBot(name="gamma", origin=Origin("fleet.yaml", 30))
    inputs = with_live(desired_only(BASELINE, ALPHA, gamma), gamma=absent("gamma"))
    (change,) = run(inputs).capabilities
    assert change.new_bot and change.direction == "widening" and set(change.gained) == DEFAULT_TOOLSETS_0_19


def test_mcp_server_added_widens_and_switched_off_narrows() -> None:
    server = {"command": "gh-mcp", "enabled": True}
    added = run(desired_only(BASELINE, with_config(ALPHA, **{"mcp_servers.gh": server})))
    assert [(c.what, c.direction, c.gained) for c in added.capabilities] == [("mcp", "widening", ("gh",))]
    live = live_from(with_config(ALPHA, **{"mcp_servers.gh": server}))
    off = with_live(desired_only(BASELINE, with_config(ALPHA, **{"mcp_servers.gh": {**server, "enabled": False}})), alpha=live)
    assert [(c.what, c.direction, c.lost) for c in run(off).capabilities] == [("mcp", "narrowing", ("gh",))]


@pytest.mark.parametrize(
    ("key", "before", "after", "direction"),
    [
        ("approvals.mode", None, "off", "widening"),  # Hermes' default smart -> off
        ("approvals.mode", "smart", "manual", "narrowing"),
        ("approvals.mode", "manual", False, "widening"),  # a bare YAML off
        ("approvals.cron_mode", None, "approve", "widening"),
        ("approvals.cron_mode", "approve", "deny", "narrowing"),
    ],
)
def test_approvals_modes(key: str, before: Any, after: Any, direction: str) -> None:
    live_bot = ALPHA if before is None else with_config(ALPHA, **{key: before})
    inputs = with_live(desired_only(BASELINE, with_config(ALPHA, **{key: after})), alpha=live_from(live_bot))
    (change,) = run(inputs).capabilities
    assert change.direction == direction


def routine_inputs(routine: Routine) -> Inputs:
    bot = dataclasses.replace(ALPHA, routines=(routine,))
    return dataclasses.replace(ROUTINE_IN_SYNC, state=state(bot))


def test_runs_per_day_before_and_after_a_schedule_change() -> None:
    found = run(routine_inputs(DIGEST.model_copy(update={"schedule": "every 1m"})))
    assert (found.runs_before, found.runs_after) == (1.0, 1440.0)
    assert [(r.routine, r.before, r.after) for r in found.rates] == [("alpha/Digest", 1.0, 1440.0)]


def test_paused_and_scriptonly_routines_make_no_model_calls() -> None:
    assert run(routine_inputs(DIGEST.model_copy(update={"paused": True}))).runs_after == 0
    script = DIGEST.model_copy(update={"script": "check.sh", "no_agent": True})
    assert run(routine_inputs(script)).runs_after == 0


def test_a_new_one_shot_is_counted_apart() -> None:
    once = Routine(name="Launch", schedule="2031-01-01T09:00", prompt="Announce")
    bot = dataclasses.replace(ALPHA, routines=(DIGEST, once))
    found = run(dataclasses.replace(ROUTINE_IN_SYNC, state=state(bot)))
    assert (found.runs_before, found.runs_after, found.one_shots_before, found.one_shots_after) == (1.0, 1.0, 0, 1)


def test_an_orphaned_routine_keeps_running() -> None:
    found = run(dataclasses.replace(ROUTINE_IN_SYNC, state=state(ALPHA)))  # the routine left the manifests
    assert (found.runs_before, found.runs_after) == (1.0, 1.0)


def test_a_pruned_routine_stops() -> None:
    inputs = dataclasses.replace(ROUTINE_IN_SYNC, state=state(ALPHA), options=dataclasses.replace(BASELINE.options, prune=True))
    found = run(inputs)
    assert (found.runs_before, found.runs_after) == (1.0, 0.0)


@pytest.mark.parametrize(
    "expr", ["0 8 * * *", "*/15 * * * *", "0 8 * * 1-5", "0 0 1 * *", "0 0 1 * 1", "30 9,17 * 2 0", "0 12 29 2 *", "5 4 * * 7"]
)
def test_cron_rate_matches_counting_every_run_of_a_year(expr: str) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    it = croniter(expr, start - timedelta(seconds=1))
    count = 0
    while it.get_next(datetime) < start + timedelta(days=365):
        count += 1
    assert insights.cron_runs_per_day(expr) == pytest.approx(count / 365)


def test_everyone_room_with_the_guard_off_is_a_high_risk() -> None:
    inputs = with_live(
        dataclasses.replace(BASELINE, state=state(ALPHA, BETA, rooms=(Room(name="Team", members=["alpha", "beta"]),))),
        beta=absent("beta"),
    )
    assert run(inputs).loops == ()  # the guard's default is on
    off = dataclasses.replace(inputs.state, install_config={"gateway.bot_loop_guard.enabled": False})
    (risk,) = run(dataclasses.replace(inputs, state=off)).loops
    assert (risk.kind, risk.subject, risk.severity) == ("room", "Team", "high")
    led = dataclasses.replace(off, rooms={"Team": Room(name="Team", members=["alpha", "beta"], who_answers="lead:alpha")})
    assert run(dataclasses.replace(inputs, state=led)).loops == ()


def test_routines_that_mention_each_other_form_a_cycle() -> None:
    ping = Routine(name="Ping", schedule="every 1h", prompt="Ask @beta for the numbers")
    pong = Routine(name="Pong", schedule="every 1h", prompt="Send the numbers to @Alpha")  # a title form
    lone = Routine(name="Note", schedule="every 1h", prompt="Tell @beta hello")
    gamma = DesiredBot(name="gamma", origin=Origin("fleet.yaml", 40), routines=(lone,))
    bots = (dataclasses.replace(ALPHA, routines=(ping,)), dataclasses.replace(BETA, routines=(pong,)), gamma)
    inputs = with_live(dataclasses.replace(BASELINE, state=state(*bots)), beta=absent("beta"), gamma=absent("gamma"))
    (risk,) = run(inputs).loops
    assert (risk.kind, risk.subject, risk.severity) == ("routines", "alpha, beta", "bounded")
    assert "alpha ('Ping') -> @beta" in risk.detail and "beta ('Pong') -> @alpha" in risk.detail
    off = dataclasses.replace(inputs.state, install_config={"gateway.bot_loop_guard.enabled": False})
    assert run(dataclasses.replace(inputs, state=off)).loops[0].severity == "high"


def test_json_shape() -> None:
    live = live_from(with_config(ALPHA, **toolset_keys(["web"])))
    inputs = with_live(desired_only(BASELINE, with_config(ALPHA, **toolset_keys(["web", "terminal"]))), alpha=live)
    payload = run(inputs).to_json()
    assert payload["widening"] == 1
    assert payload["capabilities"][0]["gained"] == ["terminal"]
    assert set(payload) == {"widening", "capabilities", "llm_runs_per_day", "loop_risks"}


def test_every_platform_is_known() -> None:
    assert "cron" in PLATFORMS_0_19 and "cli" in PLATFORMS_0_19
