"""The withheld marker cannot be imitated: a manifest value that is literally "(secret)" is printed as
a value (quoted in text, escaped as "\\(secret)" in JSON and inside mappings), distinguishable from
a withheld one, and the secret values themselves appear nowhere (controller/redact.py: unforgeable)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller import redact
from tests.integration.helpers import hermes_fleet

KEY = "sk-or-v1-markertest0123456789"
TOKEN = "crm-marker-secret-987654"
MANIFEST = r"""
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  bots:
    - name: alpha
      title: Alpha
      description: "(secret)"
      model: {provider: openrouter, default: anthropic/claude-sonnet-4}
      env: {OPENROUTER_API_KEY: {from_env: OR_KEY}}
      mcp_servers:
        crm: {command: crm-mcp, args: ["(secret)", "\\(secret)"], env: {CRM_TOKEN: {from_env: CRM_TOKEN}}}
"""


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("OR_KEY", KEY)
    monkeypatch.setenv("CRM_TOKEN", TOKEN)
    monkeypatch.setenv("HERMES_FLEET_HERMES_VERSION", "0.19.0")
    (tmp_path / "fleet.yaml").write_text(MANIFEST)
    return tmp_path / "fleet.yaml", tmp_path / "home"


def fields(plan: dict) -> dict[str, object]:
    return {f["field"]: f["new"] for o in plan["objects"] for f in o["fields"]}


def test_a_value_that_reads_like_the_marker_is_shown_as_a_value(fleet: tuple[Path, Path]) -> None:
    manifest, home = fleet
    text = hermes_fleet("plan", "-f", manifest, "--home", home)
    assert text.code == 0, text.text
    assert '+ profile:description = "(secret)"' in text.out  # a value: quoted
    assert "+ env:OPENROUTER_API_KEY = (secret)\n" in text.out  # withheld: bare
    assert '"args": ["\\\\(secret)", "\\\\\\\\(secret)"]' in text.out  # inside a mapping: escaped
    shown = fields(hermes_fleet("plan", "-f", manifest, "--home", home, "-o", "json").json())
    assert shown["profile:description"] == "\\(secret)"
    assert shown["env:OPENROUTER_API_KEY"] == "(secret)" and shown["env:CRM_TOKEN"] == "(secret)"
    assert shown["config:mcp_servers.crm"]["args"] == ["\\(secret)", "\\\\(secret)"]  # type: ignore[index]


def test_no_secret_value_reaches_any_output(fleet: tuple[Path, Path]) -> None:
    manifest, home = fleet
    runs = [
        hermes_fleet("plan", "-f", manifest, "--home", home, "-o", "json"),
        hermes_fleet("apply", "-f", manifest, "--home", home),
        hermes_fleet("apply", "-f", manifest, "--home", home, "-o", "json"),
        hermes_fleet("status", "--home", home, "-o", "json"),
    ]
    for run in runs:
        assert KEY not in run.text and TOKEN not in run.text
    assert runs[1].code == 0, runs[1].text


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (redact.SECRET, "(secret)"),
        ("(secret)", "\\(secret)"),
        ("\\(secret)", "\\\\(secret)"),
        ("(3 lines, sha256:0123456789ab)", "\\(3 lines, sha256:0123456789ab)"),
        ("(secret) and more", "(secret) and more"),  # not a marker on its own: nothing to tell apart
        ({"k": redact.SECRET, "v": ["(secret)"]}, {"k": "(secret)", "v": ["\\(secret)"]}),
    ],
)
def test_unforgeable(value: object, shown: object) -> None:
    assert redact.unforgeable(value) == shown
    assert json.loads(json.dumps(redact.unforgeable(value))) == shown


def test_a_withheld_marker_has_a_marker_text() -> None:
    with pytest.raises(ValueError):
        redact.Withheld("a value")
