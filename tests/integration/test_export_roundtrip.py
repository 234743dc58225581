"""`hermes-fleet export`: manifests for an existing home, proved by the round trip.

Export a home, apply the export to a fresh home, and plan the export against the original: no
field differs. Secrets never leave `.env`: the export holds only `from_env` references.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from controller.adapters import envfile
from tests.integration.helpers import apply, hermes_fleet, plan_json

SECRET = "sk-or-roundtrip-SECRET-value-123"
PEER_SECRET = "peer-roundtrip-SECRET-456"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

RICH = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  sections: [{name: Team}, {name: Clients, id: sec-mig3k2p1-4f9xq}]
  bots:
    - name: researcher
      title: Research Buddy
      description: Reads papers.
      display_name: Researcher
      section: Team
      model: {provider: openrouter, default: anthropic/claude-sonnet-4}
      soul: |
        You are meticulous.
        You cite sources.
      toolsets: [web, terminal]
      skills: {disabled: [noisy-skill]}
      mcp_servers:
        github: {command: gh-mcp, args: [serve], env: {GITHUB_TOKEN: {from_env: GITHUB_TOKEN}}}
      tts: {provider: edge, edge: {voice: en-US-AriaNeural}}
      checkpoints: {enabled: true, max_snapshots: 7}
      avatar: {kind: blob, seed: abc, silhouette: round}
      hidden: true
      env: {OPENROUTER_API_KEY: {from_env: OR_KEY}, LOG_LEVEL: debug}
      config: {approvals.mode: manual, memory: {memory_char_limit: 4000}}
      routines:
        - {name: Morning digest, schedule: "0 8 * * 1-5", prompt: "Summarize 'overnight' papers."}
        - {name: sweep, schedule: every 2h, prompt: Sweep., paused: true, paused_reason: holiday, skills: [triage]}
    - name: writer
      title: Writer
      section: Clients
      avatar: {kind: image, image: face.png}
  peers: [{name: spark, url: "http://spark.lan:8642", key: {from_env: SPARK_KEY}, note: lab box}]
  gateway: {bot_loop_guard: {max_events: 4}, bot_mode_protocol: true}
  checkpoints: {enabled: false, max_total_size_mb: 300}
  config: {timezone: Europe/Berlin}
"""


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OR_KEY", SECRET)
    monkeypatch.setenv("SPARK_KEY", PEER_SECRET)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-roundtrip-token")


def _original(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "face.png").write_bytes(PNG)
    (src / "fleet.yaml").write_text(RICH, encoding="utf-8")
    home = tmp_path / "original"
    run = apply(src / "fleet.yaml", home)
    assert run.code == 0, run.text
    return home


def _env_from_original(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The export names secrets after their .env keys; a user exports them before applying."""
    for env_file in [home / ".env", *home.glob("profiles/*/.env")]:
        env = envfile.read_env(env_file)
        for key in env.keys():  # noqa: SIM118 - EnvFile is not a dict
            monkeypatch.setenv(key, env.get(key) or "")


def _no_field_changes(report: dict) -> list[str]:
    return [f"{o['kind']}/{o['name']}: {[f['field'] for f in o['fields']]}" for o in report["objects"] if o["fields"]]


@pytest.mark.parametrize("layout", ["single", "split"])
def test_export_applied_to_a_fresh_home_matches_the_original(tmp_path, monkeypatch, secrets_env, layout):
    original = _original(tmp_path)
    target = tmp_path / ("export.yaml" if layout == "single" else "export")
    flag = ["-o", target] if layout == "single" else ["--split", target]
    run = hermes_fleet("export", "--home", original, "--fleet", "acme", *flag)
    assert run.code == 0, run.text
    manifests = [target] if layout == "single" else [target, "-R"]

    valid = hermes_fleet("validate", "-f", *manifests)
    assert valid.code == 0, valid.text

    _env_from_original(original, monkeypatch)
    fresh = tmp_path / "fresh"
    applied = hermes_fleet("apply", "-f", *manifests, "--home", fresh)
    assert applied.code == 0, applied.text

    # Against the original (owned by the same fleet name): nothing to change at all.
    report = plan_json(manifests[0], original, *manifests[1:])
    assert report["summary"]["changes_pending"] is False, _no_field_changes(report)
    # The fresh home carries the same Bot Mode look, routines and policy.
    assert (fresh / "profiles" / "writer" / "assets" / "avatar.png").read_bytes() == PNG
    assert (fresh / "profiles" / "researcher" / "SOUL.md").read_text() == "You are meticulous.\nYou cite sources.\n"


def test_export_never_contains_secret_values(tmp_path, secrets_env):
    original = _original(tmp_path)
    single = hermes_fleet("export", "--home", original, "--fleet", "acme")
    split_dir = tmp_path / "split"
    split = hermes_fleet("export", "--home", original, "--fleet", "acme", "--split", split_dir)
    texts = [single.out, single.err, split.out, split.err]
    texts += [p.read_text(errors="replace") for p in split_dir.rglob("*") if p.is_file() and p.suffix != ".png"]
    for text in texts:
        assert SECRET not in text and PEER_SECRET not in text and "ghp-roundtrip-token" not in text
    assert "from_env: OPENROUTER_API_KEY" in single.out
    assert "from_env: HERMES_PEER_SPARK_KEY" in single.out


def test_adopting_the_export_of_a_foreign_home_changes_nothing_but_ownership(tmp_path, monkeypatch, secrets_env):
    original = _original(tmp_path)
    target = tmp_path / "mine.yaml"
    assert hermes_fleet("export", "--home", original, "--fleet", "newowner", "-o", target).code == 0
    # Release the original from fleet acme, as a hand-built home would be: no inventory, no markers.
    for marker in original.glob("profiles/*/.hermes-fleet-owner.json"):
        marker.unlink()
    (original / ".hermes-fleet" / "inventory" / "acme.json").unlink()
    _env_from_original(original, monkeypatch)

    before = plan_json(target, original, "--adopt")
    assert {o["action"] for o in before["objects"] if o["kind"] != "install"} == {"adopt"}
    assert _no_field_changes(before) == []
    adopted = hermes_fleet("apply", "-f", target, "--home", original, "--adopt")
    assert adopted.code == 0, adopted.text
    after = plan_json(target, original)
    assert after["summary"]["changes_pending"] is False


def test_export_of_selected_bots_only(tmp_path, secrets_env):
    original = _original(tmp_path)
    run = hermes_fleet("export", "--home", original, "--fleet", "acme", "--bot", "writer")
    assert run.code == 0, run.text
    assert "name: writer" in run.out and "name: researcher" not in run.out
    missing = hermes_fleet("export", "--home", original, "--bot", "ghost")
    assert missing.code == 2 and "ghost" in missing.err
