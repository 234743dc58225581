"""What a plan says about declared values the Hermes in use does not act on (pure): the MCP
servers a Hermes without the `mcp` library never starts, and Bot Mode fields on 0.19.0, each
said once per fleet and field kind, not once per bot."""

from __future__ import annotations

import dataclasses

from controller.core import mcp
from controller.core.planning.notes import plan_notes
from controller.core.types import Inputs
from controller.manifests.desired import DesiredBot, Origin
from tests.core.test_insights import desired_only, run, with_config
from tests.core.test_planner import ALPHA, BASELINE, absent, with_live

SERVER = {"command": "crm-mcp"}


def with_mcp(inputs: Inputs, available: bool | None, where: str = "/opt/hermes/bin/python") -> Inputs:
    return dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, mcp_library=available, mcp_where=where))


def many_bots(count: int, **config: object) -> list[DesiredBot]:
    return [DesiredBot(name=f"b{i}", origin=Origin("f.yaml", 1), title=f"Bot {i}", config=dict(config)) for i in range(count)]


def test_no_mcp_library_is_one_warning_for_the_fleet_and_a_note_on_each_widening() -> None:
    bots = many_bots(300, **{"mcp_servers.crm": SERVER})
    inputs = with_mcp(with_live(desired_only(BASELINE, *bots), **{b.name: absent(b.name) for b in bots}), False)
    notes = [n for n in plan_notes(inputs) if "mcp library" in n]
    assert len(notes) == 1
    assert notes[0].startswith("warning:") and "300 bot(s) declare crm" in notes[0] and "hermes-agent[mcp]" in notes[0]
    assert "/opt/hermes/bin/python" in notes[0]
    widening = [c for c in run(inputs).capabilities if c.what == "mcp"]
    assert len(widening) == 300 and all(c.note == mcp.NOT_STARTED for c in widening)
    assert widening[0].describe().endswith(f"+crm ({mcp.NOT_STARTED})")


def test_with_the_mcp_library_nothing_is_said() -> None:
    inputs = with_mcp(desired_only(BASELINE, with_config(ALPHA, **{"mcp_servers.crm": SERVER})), True)
    assert not [n for n in plan_notes(inputs) if "mcp" in n]
    assert [c.note for c in run(inputs).capabilities if c.what == "mcp"] == [""]


def test_unknown_mcp_library_is_said_as_unknown() -> None:
    inputs = with_mcp(desired_only(BASELINE, with_config(ALPHA, **{"mcp_servers.crm": SERVER})), None, "no hermes on PATH")
    (note,) = [n for n in plan_notes(inputs) if "mcp library" in n]
    assert note.startswith("could not tell") and "no hermes on PATH" in note


def test_a_switched_off_server_needs_no_library() -> None:
    inputs = with_mcp(desired_only(BASELINE, with_config(ALPHA, **{"mcp_servers.crm": {**SERVER, "enabled": False}})), False)
    assert mcp.declared(inputs.state) == {}
    assert not [n for n in plan_notes(inputs) if "mcp" in n]


def test_bot_mode_fields_on_0_19_0_are_one_note_per_field_kind() -> None:
    inputs = desired_only(BASELINE, *many_bots(1000))
    inputs = dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, hermes_version="0.19.0"))
    (note,) = [n for n in plan_notes(inputs) if "Bot Mode record" in n]
    assert note.startswith("no effect on Hermes 0.19.0") and "title (1000 bot(s))" in note and "avatar" not in note
    newer = dataclasses.replace(inputs, observed=dataclasses.replace(inputs.observed, hermes_version="0.20.0"))
    assert not [n for n in plan_notes(newer) if "Bot Mode record" in n]
