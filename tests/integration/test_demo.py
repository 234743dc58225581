"""`hermes-fleet demo`: the README's first command applies the built-in fleet to a scratch home."""

from __future__ import annotations

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
