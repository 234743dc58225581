"""Property: for any small valid fleet, apply into a fresh home converges it: the next plan is empty
and a second apply changes nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from controller.hermes import naming
from tests.integration.helpers import apply, plan, write_fleet

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=8)
TITLE = st.lists(WORDS, min_size=1, max_size=3).map(" ".join)
SAFE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789 .,_-"
SAFE_TEXT = st.text(alphabet=SAFE_CHARS, min_size=1, max_size=30).filter(lambda s: s.strip() == s and s != "")
SCALAR = st.one_of(
    st.integers(min_value=-1000, max_value=100000),
    st.booleans(),
    SAFE_TEXT,
    st.sampled_from(["off", "on", "yes", "no", "0755", "1e3", "null", "true", "~"]),  # YAML 1.1 traps
)
CONFIG_KEYS = st.sampled_from(
    [
        "agent.max_turns",
        "memory.memory_char_limit",
        "approvals.mode",
        "display.bell",
        "custom_fleet.nested.setting",
        "timezone",
        "cron.output_retention",
    ]
)
ENV_KEYS = st.sampled_from(["LOG_LEVEL", "APP_MODE", "FEATURE_FLAGS", "REGION"])
SECTIONS = ["Team", "Clients"]


@st.composite
def bot_specs(draw: st.DrawFn, index: int) -> dict[str, Any]:
    bot: dict[str, Any] = {"name": f"bot{index}x"}
    if draw(st.booleans()):
        bot["title"] = draw(TITLE)
    if draw(st.booleans()):
        bot["toolsets"] = draw(st.lists(st.sampled_from(["web", "terminal", "file", "browser"]), unique=True))
    if draw(st.booleans()):
        provider = draw(st.sampled_from(["openrouter", "anthropic"]))
        bot["model"] = {"provider": provider, "default": draw(SAFE_TEXT)}
    if draw(st.booleans()):
        bot["config"] = draw(st.dictionaries(CONFIG_KEYS, SCALAR, max_size=3))
    if draw(st.booleans()):
        bot["hidden"] = draw(st.booleans())
    if draw(st.booleans()):
        bot["section"] = draw(st.sampled_from(SECTIONS))
    if draw(st.booleans()):
        bot["description"] = draw(SAFE_TEXT)
    if draw(st.booleans()):
        bot["soul"] = draw(st.text(alphabet="abc XYZ\n#*-", max_size=60))
    if draw(st.booleans()):
        bot["env"] = draw(st.dictionaries(ENV_KEYS, SAFE_TEXT, max_size=3))
    if draw(st.booleans()):
        bot["create_empty"] = True
    return bot


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(min_value=1, max_value=5))
    return [draw(bot_specs(i)) for i in range(count)]


def _tags_are_unique(bots: list[dict[str, Any]]) -> bool:
    owners: dict[str, str] = {}
    for bot in bots:
        forms = {bot["name"], *naming.mention_forms(bot.get("title", ""))}
        for form in forms:
            if owners.setdefault(form, bot["name"]) != bot["name"]:
                return False
    return True


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bots=fleets())
def test_apply_then_plan_is_empty(bots: list[dict[str, Any]]) -> None:
    assume(_tags_are_unique(bots))
    with tempfile.TemporaryDirectory(prefix="hf-prop-") as scratch:
        folder = Path(scratch)
        manifest = write_fleet(folder / "manifests", bots, sections=[{"name": s} for s in SECTIONS])
        home = folder / "hermes"
        first = apply(manifest, home)
        if first.code == 2:  # the generator made something validation refuses; not this property
            assume(False)
        assert first.code == 0, first.text

        again = plan(manifest, home, "--detailed-exitcode")
        assert again.code == 0, f"plan after apply is not empty:\n{again.text}\nbots: {bots}"

        second = apply(manifest, home, "-o", "json")
        assert second.code == 0, second.text
        data = second.json()
        assert data["results"] == [], data["results"]
        assert data["summary"]["changes_pending"] is False
