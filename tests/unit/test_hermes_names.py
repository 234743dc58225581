"""Validation against Hermes' own vocabulary (controller/manifests/hermes_names.py): a name Hermes
does not know is refused with did-you-mean at its field, an unknown config key is a warning, and
unquoted yes/no/on/off under config: are what Hermes' YAML 1.1 loader makes of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.manifests import loading, validating
from tests.unit.test_validation_rules import NOW, check, fleet


def found(result: validating.ValidationResult, severity: str = "error") -> dict[str, tuple[str, str, int]]:
    return {d.path: (d.code, d.hint, d.line) for d in result.diagnostics if d.severity == severity}


@pytest.mark.parametrize(
    ("spec", "path", "code", "guess"),
    [
        ({"bots": [{"name": "a", "toolsets": ["web", "termnial"]}]}, "spec.bots[0].toolsets[1]", "unknown_toolset", "terminal"),
        ({"defaults": {"toolsets": ["fiel"]}, "bots": [{"name": "a"}]}, "spec.defaults.toolsets[0]", "unknown_toolset", "file"),
        (
            {"bots": [{"name": "a", "config": {"platform_toolsets": {"telegram": ["web", "browsr"]}}}]},
            "spec.bots[0].config.platform_toolsets.telegram[1]",
            "unknown_toolset",
            "browser",
        ),
        (
            {"bots": [{"name": "a", "config": {"agent.disabled_toolsets": ["memmory"]}}]},
            "spec.bots[0].config.agent.disabled_toolsets[0]",
            "unknown_toolset",
            "memory",
        ),
        (
            {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "every 1h", "prompt": "p", "toolsets": ["wbe"]}]}]},
            "spec.bots[0].routines[0].toolsets[0]",
            "unknown_toolset",
            "web",
        ),
        (
            {"bots": [{"name": "a", "model": {"provider": "openrouterr"}}]},
            "spec.bots[0].model.provider",
            "unknown_provider",
            "openrouter",
        ),
        (
            {"defaults": {"model": {"provider": "antropic"}}, "bots": [{"name": "a"}]},
            "spec.defaults.model.provider",
            "unknown_provider",
            "anthropic",
        ),
        (
            {"bots": [{"name": "a", "routines": [{"name": "r", "schedule": "every 1h", "prompt": "p", "provider": "deepsek"}]}]},
            "spec.bots[0].routines[0].provider",
            "unknown_provider",
            "deepseek",
        ),
        (
            {"bots": [{"name": "a", "config": {"approvals": {"mode": "smrt"}}}]},
            "spec.bots[0].config.approvals.mode",
            "invalid_value",
            "smart",
        ),
        (
            {"config": {"code_execution.mode": "strct"}, "bots": [{"name": "a"}]},
            "spec.config.code_execution.mode",
            "invalid_value",
            "strict",
        ),
    ],
)
def test_a_name_hermes_does_not_know_is_refused_with_did_you_mean(
    tmp_path: Path, spec: dict[str, Any], path: str, code: str, guess: str
) -> None:
    result = check(tmp_path, fleet(**spec))
    assert result.state is None
    got = found(result)
    assert got[path][0] == code
    assert got[path][1] == f"did you mean {guess!r}?"
    assert got[path][2] > 1  # the line of the field itself


@pytest.mark.parametrize(
    "bot",
    [
        {"name": "a", "toolsets": ["web", "terminal", "hermes-cli", "no_mcp", "all", "browser-cdp"]},
        {"name": "a", "toolsets": ["web", "crm"], "mcp_servers": {"crm": {"command": "crm-mcp"}}},  # an MCP allowlist
        {"name": "a", "model": {"provider": "OpenRouter"}},  # resolve_provider lower-cases
        {"name": "a", "model": {"provider": "claude"}},  # an alias
        {"name": "a", "model": {"provider": "vertex-ai"}},
        {"name": "a", "model": {"provider": "custom:lab"}},
        {"name": "a", "model": {"provider": "lab"}, "config": {"providers": {"lab": {"base_url": "http://lab:1/v1"}}}},
        {"name": "a", "model": {"provider": "box"}, "config": {"custom_providers": [{"name": "Box", "base_url": "http://b/v1"}]}},
        {"name": "a", "config": {"approvals": {"mode": "SMART", "cron_mode": "approve"}, "display.busy_input_mode": "queue"}},
    ],
)
def test_names_hermes_knows_are_clean(tmp_path: Path, bot: dict[str, Any]) -> None:
    result = check(tmp_path, fleet(bots=[bot]))
    assert result.diagnostics == [], [d.message for d in result.diagnostics]


def test_a_routine_may_name_its_bots_mcp_server_or_the_defaults(tmp_path: Path) -> None:
    routine = {"name": "r", "schedule": "every 1h", "prompt": "p", "toolsets": ["crm", "web"]}
    result = check(
        tmp_path,
        fleet(defaults={"mcp_servers": {"crm": {"command": "crm-mcp"}}}, bots=[{"name": "a", "routines": [routine]}]),
    )
    assert result.errors == []


def test_an_unknown_config_key_is_a_warning_with_did_you_mean(tmp_path: Path) -> None:
    result = check(tmp_path, fleet(bots=[{"name": "a", "config": {"display": {"show_reasonin": True}, "totally_new": 1}}]))
    assert result.errors == []
    assert result.state is not None  # still applied: a newer Hermes or a plugin may read it
    warnings = found(result, "warning")
    assert warnings["spec.bots[0].config.display.show_reasonin"][:2] == (
        "unknown_config_key",
        "did you mean 'display.show_reasoning'?",
    )
    assert warnings["spec.bots[0].config.totally_new"][0] == "unknown_config_key"


def test_open_and_read_elsewhere_keys_are_not_warned_about(tmp_path: Path) -> None:
    config = {
        "platforms": {"telegram": {"extra": {"x": 1}}},
        "terminal": {"docker_env": {"FOO": "1"}},  # a mapping DEFAULT_CONFIG leaves for the user
        "discord": {"require_mention": True},
        "gateway.room_link_url": "https://spark.lan:8642",  # the rooms gateway's
        "quick_commands": {"hi": {"type": "exec", "command": "echo hi"}},
    }
    result = check(tmp_path, fleet(bots=[{"name": "a", "config": config}]))
    assert result.diagnostics == [], [d.message for d in result.diagnostics]


def _load(tmp_path: Path, text: str) -> validating.ValidationResult:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    loaded, problems = loading.load_files([str(path)])
    assert problems == []
    return validating.validate(loaded, now=NOW)


BOT_WITH_WORDS = """\
apiVersion: hermes-fleet/v1
kind: Fleet
metadata: {name: acme}
spec:
  config: {display: {compact: YES}}
  defaults: {config: {display: {bell_on_complete: On}}}
  bots:
    - name: a
      title: on
      env: {FLAG: off}
      tts: {provider: edge, edge: {speed: no}}
      config:
        display: {show_reasoning: off, memory_notifications: 'on', streaming: "no"}
        approvals: {mode: Off}
"""


def test_unquoted_words_under_config_are_booleans_and_quoted_ones_strings(tmp_path: Path) -> None:
    result = _load(tmp_path, BOT_WITH_WORDS)
    assert result.errors == [], [d.message for d in result.errors]
    assert result.state is not None
    bot = result.state.bots["a"]
    assert bot.config["display.show_reasoning"] is False
    assert bot.config["display.memory_notifications"] == "on"
    assert bot.config["display.streaming"] == "no"
    assert bot.config["approvals.mode"] is False  # Hermes reads false as 'off'
    assert bot.config["display.bell_on_complete"] is True
    assert bot.config["tts.edge.speed"] is False
    assert result.state.install_config["display.compact"] is True
    assert bot.title == "on" and type(bot.title) is str  # a typed field keeps YAML 1.2's string
    assert bot.env["FLAG"].literal == "off"


def test_a_word_an_enum_reader_misreads_is_refused_with_a_hint(tmp_path: Path) -> None:
    text = BOT_WITH_WORDS.replace("approvals: {mode: Off}", "approvals: {cron_mode: off}")
    result = _load(tmp_path, text)
    (error,) = result.errors
    assert error.path == "spec.bots[0].config.approvals.cron_mode"
    assert "false" in error.message and "deny" in error.message
    assert "quote" in error.hint


def test_a_document_replayed_from_the_history_keeps_the_boolean(tmp_path: Path) -> None:
    from controller.engine import history

    result = _load(tmp_path, BOT_WITH_WORDS)
    (kept,) = result.loaded
    text = history.as_yaml_text(kept.data)
    again = _load(tmp_path, text)
    assert again.state is not None
    assert again.state.bots["a"].config["display.show_reasoning"] is False
