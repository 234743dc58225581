"""`skills.platform_disabled.cron` against the real hermes-agent 0.19.0: in a cron run it changes
nothing, which is why validation warns about it (docs/hermes/no-effect.md#cron-platform-skills).

The run's context is made the way `cron/scheduler.py:run_job` makes it (the session platform set to
"" through `gateway.session_context.set_session_vars`); the skill index is Hermes' own
`agent/prompt_builder.py:build_skills_system_prompt`, and `skill_view`'s gate is
`tools/skills_tool.py:_is_skill_disabled`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.hermes_support import HermesCLI

pytestmark = pytest.mark.hermes

SKILL = "---\nname: slides\ndescription: Make slide decks from notes.\n---\n\nMake slides.\n"
CRON_RUN = """
import json
from gateway.session_context import set_session_vars
set_session_vars(platform="", chat_id="", chat_name="", async_delivery=False)  # as cron/scheduler.py run_job
from agent.prompt_builder import build_skills_system_prompt
from tools.skills_tool import _is_skill_disabled
print(json.dumps({"in_index": "slides" in build_skills_system_prompt(), "view_blocked": _is_skill_disabled("slides")}))
"""


def run_with(hermes: HermesCLI, root: Path, skills: dict) -> dict:
    (root / "skills" / "demo" / "slides").mkdir(parents=True, exist_ok=True)
    (root / "skills" / "demo" / "slides" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (root / "config.yaml").write_text(yaml.safe_dump({"skills": skills}), encoding="utf-8")
    for snapshot in root.glob(".skills_prompt_snapshot*"):
        snapshot.unlink()
    return json.loads(hermes.python(CRON_RUN).stdout.strip().splitlines()[-1])


def test_platform_disabled_cron_changes_nothing_in_a_cron_run(hermes: HermesCLI, hermes_root: Path) -> None:
    assert run_with(hermes, hermes_root, {"platform_disabled": {"cron": ["slides"]}}) == {"in_index": True, "view_blocked": False}
    # skills.disabled is what a cron run honours (the hint validation gives)
    assert run_with(hermes, hermes_root, {"disabled": ["slides"]}) == {"in_index": False, "view_blocked": True}
