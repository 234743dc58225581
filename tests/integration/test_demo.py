"""`hermes-fleet demo`: the README's first command applies the built-in fleet to a scratch home."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from tests.integration.helpers import hermes_fleet, read_yaml


def test_demo_builds_a_converged_home_and_exits_0(tmp_path):
    home = tmp_path / "demo-home"
    run = hermes_fleet("--color", "never", "demo", "--home", home)
    assert run.code == 0, run.text
    assert "Apply complete" in run.out and "No changes: the home matches the manifests." in run.out
    for bot in ("researcher", "writer", "concierge"):
        assert (home / "profiles" / bot / "profile.yaml").is_file()
    record = read_yaml(home / "profiles" / "researcher" / "profile.yaml")["ui_meta"]["hermes-bots"]
    assert record["title"] == "Research Buddy" and record["sectionName"] == "Team"
    assert (home / "profiles" / "researcher" / "cron" / "jobs.json").is_file()
    # the peer key came from a generated file, never printed
    assert "HERMES_PEER_SPARK_KEY=" in (home / ".env").read_text()
    key = (home / ".env").read_text().split("HERMES_PEER_SPARK_KEY=")[1].strip()
    assert key and key not in run.text


def test_demo_refuses_a_non_empty_home_without_force(tmp_path):
    home = tmp_path / "busy"
    home.mkdir()
    (home / "something").write_text("x")
    run = hermes_fleet("demo", "--home", home)
    assert run.code == 2 and "not empty" in run.err
    assert sorted(p.name for p in home.iterdir()) == ["something"]


def printed_commands(out: str) -> list[str]:
    """The command lines of the demo's closing text: the indented lines under its headers."""
    commands, taking = [], False
    for line in out.splitlines():
        if line in ("Next (each line runs as printed):", "Look at it with Hermes itself:"):
            taking = True
        elif line.startswith("  ") and taking:
            commands.append(line.strip())
        else:
            taking = False
    return commands


def test_demo_prints_next_commands_that_run_as_printed(tmp_path):
    home = tmp_path / "demo-home"
    run = hermes_fleet("--color", "never", "demo", "--home", home)
    assert run.code == 0, run.text
    commands = printed_commands(run.out)
    assert any(" plan -f " in c for c in commands) and any(" status --home " in c for c in commands)
    manifest = home / ".hermes-fleet" / "demo" / "demo-fleet.yaml"
    assert manifest.is_file() and str(manifest) in run.out  # the manifests the commands name are kept
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HOME=str(tmp_path / "user"), NO_COLOR="1", TERM="dumb")
    (tmp_path / "user").mkdir()
    for command in commands:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        if " profile list" in command:
            assert "researcher" in proc.stdout and "writer" in proc.stdout
        if " plan -f " in command:
            assert "No changes: the home matches the manifests." in proc.stdout
    if not any("hermes profile list" in c or "/hermes profile list" in c for c in commands):
        assert "Hermes itself is not installed here" in run.out and "pipx install hermes-agent" in run.out
    (remove,) = [line.split("Remove the demo with: ", 1)[1] for line in run.out.splitlines() if "Remove the demo with: " in line]
    assert subprocess.run(["bash", "-c", remove], timeout=60).returncode == 0
    assert not home.exists()


def test_demo_names_this_installation_of_the_cli(tmp_path):
    from controller import demo

    command = demo.cli_command()
    assert command == "hermes-fleet" or Path(shlex.split(command)[0]).is_file()
    proc = subprocess.run([*shlex.split(command), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("hermes-fleet ")
