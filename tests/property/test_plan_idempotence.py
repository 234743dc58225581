"""Property: for any small valid fleet, apply into a fresh home converges it: the next plan is empty
and a second apply changes nothing."""

from __future__ import annotations

import json
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


ROUTINE = st.fixed_dictionaries(
    {"name": st.sampled_from(["Digest", "Sweep", "Check"]), "schedule": st.sampled_from(["0 9 * * *", "every 2h"])},
    optional={"prompt": SAFE_TEXT},
)


@st.composite
def renames(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """A fleet, the same fleet with some bots renamed (`renamed_from`, other fields possibly
    changed too), and new name -> old name."""
    before = draw(fleets())
    for bot in before:
        if draw(st.booleans()):
            bot["routines"] = draw(st.lists(ROUTINE, max_size=2, unique_by=lambda r: r["name"]))
    after: list[dict[str, Any]] = []
    moved: dict[str, str] = {}
    for bot in before:
        bot = dict(bot)
        if draw(st.booleans()):
            new = bot["name"].replace("x", "y")  # never another bot's name: those all end in x
            moved[new] = bot["name"]
            bot = {**bot, "name": new, "renamed_from": bot["name"]}
            if draw(st.booleans()):
                bot["description"] = draw(SAFE_TEXT)
        after.append(bot)
    assume(moved)
    return before, after, moved


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=renames())
def test_a_rename_moves_the_profile_and_converges(
    case: tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]],
) -> None:
    """Whatever the bot holds, `renamed_from` moves its profile (what it learned with it) and its
    routines' jobs (ids kept), and the plan afterwards is empty."""
    before, after, moved = case
    assume(_tags_are_unique(before) and _tags_are_unique(after))
    with tempfile.TemporaryDirectory(prefix="hf-prop-") as scratch:
        folder = Path(scratch)
        sections = [{"name": s} for s in SECTIONS]
        home = folder / "hermes"
        first = apply(write_fleet(folder / "m1", before, sections=sections), home)
        if first.code == 2:
            assume(False)
        assert first.code == 0, first.text
        ids = {}
        for old in moved.values():
            (home / "profiles" / old / "memories").mkdir(exist_ok=True)
            (home / "profiles" / old / "memories" / "MEMORY.md").write_text(f"learned by {old}\n")
            ids[old] = _job_ids(home / "profiles" / old)
        manifest = write_fleet(folder / "m2", after, sections=sections)
        second = apply(manifest, home)
        assert second.code == 0, f"{second.text}\nrenames: {moved}"
        for new, old in moved.items():
            assert not (home / "profiles" / old).exists()
            assert (home / "profiles" / new / "memories" / "MEMORY.md").read_text() == f"learned by {old}\n"
            assert _job_ids(home / "profiles" / new) == ids[old]
            assert all(not name.startswith(f"[bot:{old}]") for name in _job_names(home / "profiles" / new))
        again = plan(manifest, home, "--detailed-exitcode")
        assert again.code == 0, f"plan after the rename is not empty:\n{again.text}\nrenames: {moved}"


def _jobs(profile: Path) -> list[dict[str, Any]]:
    jobs = profile / "cron" / "jobs.json"
    return json.loads(jobs.read_text())["jobs"] if jobs.exists() else []


def _job_ids(profile: Path) -> list[str]:
    return sorted(j["id"] for j in _jobs(profile))


def _job_names(profile: Path) -> list[str]:
    return [j["name"] for j in _jobs(profile)]
