"""`plan` and `status` say when the Python that runs Hermes cannot start MCP servers (no `mcp`
library): a real virtual environment with a `hermes` entry point on PATH, first without the
library, then with it (real files), against a home apply really wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.test_hermes_install_mcp import add_mcp, fake_install
from tests.integration.helpers import apply, hermes_fleet, plan_json, write_fleet


def status_findings(home: Path) -> list[dict]:
    run = hermes_fleet("status", "--home", home, "-o", "json")
    assert run.code in (0, 1), run.text
    (fleet,) = run.json()["fleets"]
    return [f for f in fleet["health"]["findings"] if f["code"] == "mcp-unavailable"]


def test_plan_and_status_say_when_hermes_has_no_mcp_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = fake_install(tmp_path / "hermes-venv")
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    home = tmp_path / "home"
    home.mkdir()
    bots = [
        {"name": "concierge", "mcp_servers": {"crm": {"command": "crm-mcp"}}},
        {"name": "quiet", "mcp_servers": {"old": {"command": "old-mcp", "enabled": False}}},
        {"name": "plain"},
    ]
    manifest = write_fleet(tmp_path / "m", bots)
    planned = plan_json(manifest, home, "--hermes-version", "0.19.0")
    (note,) = [n for n in planned["notes"] if "mcp library" in n]
    assert note.startswith("warning:") and "1 bot(s) declare crm" in note and str(script.parent / "python") in note
    (widening,) = [c for c in planned["insights"]["capabilities"] if c["what"] == "mcp"]
    assert widening["gained"] == ["crm"] and "no mcp library" in widening["note"]
    assert planned["hermes_extras"] == ["mcp"]  # what the Ansible rollout installs (hermes-agent[mcp])
    assert apply(manifest, home, "--hermes-version", "0.19.0").code == 0

    (finding,) = status_findings(home)
    assert finding["severity"] == "warning" and finding["object"] == "install/root"
    assert "concierge (crm)" in finding["message"] and "quiet" not in finding["message"]

    add_mcp(tmp_path / "hermes-venv")
    assert status_findings(home) == []
    again = plan_json(manifest, home, "--hermes-version", "0.19.0")
    assert not [n for n in again["notes"] if "mcp" in n] and again["hermes_extras"] == ["mcp"]
    plain = plan_json(write_fleet(tmp_path / "p", [{"name": "plain"}]), home, "--hermes-version", "0.19.0")
    assert plain["hermes_extras"] == []
