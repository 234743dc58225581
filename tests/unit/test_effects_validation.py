"""Declared values the target Hermes would not act on (controller/manifests/effects.py): refused or
warned about at validate time, located at the field, and a near-identical manifest that takes
effect is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_validation_rules import check, codes, doc, fleet, rendered


@pytest.mark.parametrize(
    ("provider", "url"),
    [
        ("openrouter", "https://llm.example.net/v1"),
        ("or", "http://127.0.0.1:8080/v1"),
        ("xai", "https://proxy.example.net/v1"),
        ("glm", "https://open.bigmodel.cn/api/paas/v4"),  # an alias: 0.19.0 compares the raw name
        ("anthropic", "https://openrouter.ai/api/v1"),  # not an Anthropic Messages endpoint
    ],
)
def test_model_base_url_that_hermes_drops_is_refused_at_the_field(tmp_path: Path, provider: str, url: str) -> None:
    result = check(tmp_path, fleet(bots=[{"name": "alpha", "model": {"provider": provider, "default": "m", "base_url": url}}]))
    assert codes(result) == {("base_url_ignored", "spec.bots[0].model.base_url")}
    text = rendered(result)
    assert "fleet.yaml:" in text and "provider: custom" in text and "0.19.0" in text
    assert result.state is None


@pytest.mark.parametrize(
    ("provider", "url"),
    [
        ("custom", "https://llm.example.net/v1"),
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("zai", "https://open.bigmodel.cn/api/paas/v4"),
        ("anthropic", "https://llm.example.net/anthropic"),
        (None, "http://127.0.0.1:8080/v1"),
        ("custom:local", "https://llm.example.net/v1"),  # a named custom provider: not measured, nothing to say
    ],
)
def test_model_base_url_that_hermes_uses_is_clean(tmp_path: Path, provider: str | None, url: str) -> None:
    model = {"default": "m", "base_url": url} | ({"provider": provider} if provider else {})
    result = check(tmp_path, fleet(bots=[{"name": "alpha", "model": model}]))
    assert result.diagnostics == []


def test_a_default_model_with_an_ignored_base_url_is_refused_once_at_defaults(tmp_path: Path) -> None:
    model = {"provider": "openrouter", "default": "m", "base_url": "https://llm.example.net/v1"}
    result = check(tmp_path, fleet(defaults={"model": model}, bots=[{"name": "a"}, {"name": "b"}]))
    assert codes(result) == {("base_url_ignored", "spec.defaults.model.base_url")}


@pytest.mark.parametrize(
    ("key", "value", "fix"),
    [("max_hops", 4, "max_events"), ("bot_replies_expect_reply", False, "remove it")],
)
def test_loop_guard_keys_no_hermes_reads_are_refused_with_what_to_write(tmp_path: Path, key: str, value, fix: str) -> None:
    policy = doc("Policy", "p", {"gateway": {"bot_loop_guard": {"enabled": True, key: value}}})
    result = check(tmp_path, policy, doc("Bot", "alpha", {}))
    assert codes(result) == {("no_reader", f"spec.gateway.bot_loop_guard.{key}")}
    assert fix in rendered(result) and "read by no Hermes" in rendered(result)


def test_the_loop_guard_keys_hermes_main_reads_are_clean(tmp_path: Path) -> None:
    guard = {"enabled": True, "max_events": 8, "window_seconds": 300, "cooldown_seconds": 600}
    result = check(tmp_path, fleet(gateway={"bot_loop_guard": guard}, bots=[{"name": "alpha"}]))
    assert result.diagnostics == []
    assert result.state is not None
    assert result.state.install_config["gateway.bot_loop_guard.max_events"] == 8


def test_platform_disabled_cron_is_one_warning_per_fleet(tmp_path: Path) -> None:
    cron = {"platform_disabled": {"cron": ["slides"], "telegram": ["pdf"]}}
    bots = [{"name": f"b{i}", "skills": cron} for i in range(50)]
    result = check(tmp_path, fleet(defaults={"skills": cron}, bots=bots))
    warnings = [d for d in result.diagnostics if d.severity == "warning"]
    assert [(d.code, d.path) for d in warnings] == [("no_effect", "spec.defaults.skills.platform_disabled.cron")]
    assert "0.19.0" in warnings[0].message and "50 more" in warnings[0].message
    assert "skills.disabled" in warnings[0].hint
    assert result.state is not None  # a warning: the fleet still applies


def test_platform_disabled_on_other_platforms_is_clean(tmp_path: Path) -> None:
    result = check(tmp_path, fleet(bots=[{"name": "alpha", "skills": {"platform_disabled": {"telegram": ["pdf"]}}}]))
    assert result.diagnostics == []
